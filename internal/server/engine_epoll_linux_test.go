//go:build linux

package server

import (
	"context"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volanogo/volanogo/pkg/protocol"
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

// TestEpollCoalesce: with Config.Coalesce, a loop naps after a round of
// few events before it looks for more: chats that come one at a time are
// each relayed, in order, after the nap that follows the one before.
func TestEpollCoalesce(t *testing.T) {
	const nap = 5 * time.Millisecond
	s := startServer(t, Config{Engine: EngineEpoll, Loops: 1, Coalesce: nap})
	a := dial(t, s)
	a.access("Nap")
	a.enter("Nap", "a")
	b := dial(t, s)
	b.access("Nap")
	b.enter("Nap", "b")
	_, ok := a.expect().(*protocol.EnterRoom) // b's entry
	require.True(t, ok)
	const n = 20
	start := time.Now()
	for i := range n {
		text := "chat " + strconv.Itoa(i)
		a.send(chat("Nap", "a", text))
		c, ok := a.expect().(*protocol.Chat)
		require.True(t, ok)
		assert.Equal(t, protocol.Confirm, c.Type)
		c, ok = b.expect().(*protocol.Chat)
		require.True(t, ok)
		assert.Equal(t, protocol.Indication, c.Type)
		assert.Equal(t, text, c.Text)
	}
	took := time.Since(start)
	s.mu.Lock()
	p := s.eng.(*loopEngine[epSock]).loops[0].p.(*epollPoller)
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, s.Shutdown(ctx)) // the loop has stopped: its count can be read
	assert.GreaterOrEqual(t, p.naps, n, "the loop napped after each chat's round")
	// (A signal ends a nap early: the runtime's preemption requests, and
	// the GC's, every few milliseconds on a busy machine.)
	t.Logf("%d chats in %v with %d naps of %v", n, took, p.naps, nap)

	for _, d := range []time.Duration{-1, MaxCoalesce + 1} {
		_, err := New(Config{Engine: EngineEpoll, Coalesce: d})
		require.Error(t, err, "coalesce %v", d)
	}
}
