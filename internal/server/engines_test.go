package server

import (
	"runtime"
	"strings"
	"testing"
)

// testEngines are the engines that every test running a server runs on,
// each as a subtest named after it (forEngines).
func testEngines() []string {
	if runtime.GOOS == "linux" {
		return []string{EngineGoroutine, EngineEpoll}
	}
	return []string{EngineGoroutine}
}

// forEngines runs f once per engine, as subtests; startServer and
// startChild find the engine in the subtest's name (engineOf).
func forEngines(t *testing.T, f func(t *testing.T)) {
	for _, e := range testEngines() {
		t.Run(e, f)
	}
}

// forEnginesB is forEngines for a benchmark.
func forEnginesB(b *testing.B, f func(b *testing.B)) {
	for _, e := range testEngines() {
		b.Run(e, f)
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
