package server

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// testEngines are the engines that every test running a server runs on,
// each as a subtest named after it (forEngines).
func testEngines() []string {
	if runtime.GOOS == "linux" {
		return []string{EngineGoroutine, EngineEpoll, EngineURing}
	}
	return []string{EngineGoroutine}
}

// forEngines runs f once per engine, as subtests; startServer and
// startChild find the engine in the subtest's name (engineOf). An engine
// this kernel cannot run (io_uring refused) is skipped with the reason.
func forEngines(t *testing.T, f func(t *testing.T)) {
	for _, e := range testEngines() {
		t.Run(e, func(t *testing.T) {
			if why := engineUnavailable(e); why != "" {
				t.Skip(why)
			}
			f(t)
		})
	}
}

// forEnginesB is forEngines for a benchmark.
func forEnginesB(b *testing.B, f func(b *testing.B)) {
	for _, e := range testEngines() {
		b.Run(e, func(b *testing.B) {
			if why := engineUnavailable(e); why != "" {
				b.Skip(why)
			}
			f(b)
		})
	}
}

// engineOf is the engine of a test or benchmark run by forEngines (the
// first subtest level names it); the goroutine engine otherwise.
func engineOf(t testing.TB) string {
	parts := strings.Split(t.Name(), "/")
	if len(parts) > 1 {
		for _, e := range testEngines() {
			if parts[1] == e {
				return e
			}
		}
	}
	return EngineGoroutine
}

var (
	uringProbe   sync.Once
	uringMissing string
)

// engineUnavailable is why engine cannot run here ("" if it can): the
// uring engine needs the kernel to grant a ring.
func engineUnavailable(engine string) string {
	if engine != EngineURing {
		return ""
	}
	uringProbe.Do(func() {
		s, err := New(Config{Listen: "127.0.0.1:0", Engine: EngineURing, Loops: 1})
		if err == nil {
			err = s.Start()
		}
		if err != nil {
			uringMissing = err.Error()
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
	})
	return uringMissing
}
