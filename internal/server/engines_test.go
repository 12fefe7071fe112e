package server

import (
	"context"
	"runtime"
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

// forEngines runs f once per engine, as parallel subtests named after it
// (each server on its own port 0); an engine this kernel cannot run
// (io_uring refused) is skipped with the reason.
func forEngines(t *testing.T, f func(t *testing.T, engine string)) {
	for _, e := range testEngines() {
		t.Run(e, func(t *testing.T) {
			t.Parallel()
			if why := engineUnavailable(e); why != "" {
				t.Skip(why)
			}
			f(t, e)
		})
	}
}

// forEnginesB is forEngines for a benchmark.
func forEnginesB(b *testing.B, f func(b *testing.B, engine string)) {
	for _, e := range testEngines() {
		b.Run(e, func(b *testing.B) {
			if why := engineUnavailable(e); why != "" {
				b.Skip(why)
			}
			f(b, e)
		})
	}
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
