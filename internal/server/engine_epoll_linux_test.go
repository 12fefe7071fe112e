//go:build linux

package server

import (
	"context"
	"runtime"
	"testing"
	"time"

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

// TestEpollKeepsAProcessor: the loops hold their Ps while they wait, so
// GOMAXPROCS is raised to leave one for the rest of the process (here
// the accept loop must still take a second connection), and is given
// back when the server stops.
func TestEpollKeepsAProcessor(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	loops := before + 1
	s, err := New(Config{Listen: "127.0.0.1:0", Engine: EngineEpoll, Loops: loops})
	require.NoError(t, err)
	require.NoError(t, s.Start())
	a := dial(t, s)
	a.access("Loop")
	a.enter("Loop", "a")
	b := dial(t, s)
	b.access("Loop")
	b.enter("Loop", "b")
	assert.Equal(t, loops+1, runtime.GOMAXPROCS(0))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, s.Shutdown(ctx))
	assert.Equal(t, before, runtime.GOMAXPROCS(0))
}
