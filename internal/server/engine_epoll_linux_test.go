//go:build linux

package server

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEpollNoGoroutinePerConnection: on the epoll engine, connections in
// a room, chatting, add no goroutine (the goroutine engine adds one
// each), and --engine takes only the engines there are.
func TestEpollNoGoroutinePerConnection(t *testing.T) {
	s := startServer(t, Config{Engine: EngineEpoll, Loops: 2})
	first := dial(t, s)
	first.access("Loop")
	first.enter("Loop", "u0")
	before := runtime.NumGoroutine()
	const n = 40
	for i := 1; i <= n; i++ {
		c := dial(t, s)
		c.access("Loop")
		c.enter("Loop", "u"+string(rune('A'+i)))
	}
	first.send(chat("Loop", "u0", "hello"))
	waitFor(t, "the connections", func() bool { return s.counters.open.Load() == n+1 })
	assert.Less(t, runtime.NumGoroutine()-before, n/4, "goroutines grew with the connections")

	_, err := New(Config{Engine: "kqueue"})
	require.Error(t, err)
	_, err = New(Config{Engine: EngineEpoll, Loops: -1})
	require.Error(t, err)
}
