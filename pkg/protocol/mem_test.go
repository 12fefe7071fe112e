package protocol

import (
	"reflect"
	"runtime"
)

type runtimeMem struct{ totalAlloc uint64 }

func (m *runtimeMem) read() {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m.totalAlloc = ms.TotalAlloc
}

func deepEqual(a, b any) bool { return reflect.DeepEqual(a, b) }
