//go:build linux

package server

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/volanogo/volanogo/internal/uring"
	"github.com/volanogo/volanogo/pkg/protocol"
)

// TestURingNoGoroutinePerConnection: on the uring engine, connections in
// a room, chatting, add no goroutine, and every member gets the chat
// (relayed by one submission).
func TestURingNoGoroutinePerConnection(t *testing.T) {
	if why := engineUnavailable(EngineURing); why != "" {
		t.Skip(why)
	}
	s := startServer(t, Config{Engine: EngineURing, Loops: 2})
	assert.Equal(t, EngineURing, s.Engine())
	for _, l := range s.eng.(*loopEngine[urSock]).loops {
		p := l.p.(*urPoller)
		if p.ring.Flags()&uring.SetupSingleIssuer != 0 {
			assert.NotNil(t, p.bufs, "Linux 6.0: multishot receives into provided buffers")
			assert.Positive(t, p.fixedMax, "Linux 5.19: a registered file table")
		}
	}
	first := dial(t, s)
	first.access("Ring")
	first.enter("Ring", "u0")
	before := runtime.NumGoroutine()
	const n = 19 // a room of 20, as the benchmark's
	var others []*client
	for i := 1; i <= n; i++ {
		c := dial(t, s)
		c.access("Ring")
		c.enter("Ring", fmt.Sprintf("u%d", i))
		others = append(others, c)
	}
	waitFor(t, "the connections", func() bool { return s.counters.open.Load() == n+1 })
	assert.Less(t, runtime.NumGoroutine()-before, n/3, "goroutines grew with the connections")
	first.send(chat("Ring", "u0", "hello"))
	nextChat := func(c *client) *protocol.Chat {
		for {
			if ch, ok := c.expect().(*protocol.Chat); ok {
				return ch // after the entries of those who came later
			}
		}
	}
	for _, c := range others {
		assert.Equal(t, "hello", nextChat(c).Text)
	}
	assert.Equal(t, protocol.Confirm, nextChat(first).Type)
}

// TestURingUnavailable: where the kernel refuses io_uring (simulated: the
// ring's setup fails with EPERM, as with sysctl kernel.io_uring_disabled),
// --engine uring fails at Start with the reason, and auto falls back to
// epoll with one log line saying so.
func TestURingUnavailable(t *testing.T) {
	setup := urSetup
	t.Cleanup(func() { urSetup = setup })
	urSetup = func() (*uring.Ring, error) { return nil, fmt.Errorf("io_uring_setup: %w", unix.EPERM) }

	s, err := New(Config{Listen: "127.0.0.1:0", Engine: EngineURing})
	require.NoError(t, err)
	err = s.Start()
	require.ErrorIs(t, err, ErrURingUnavailable)
	assert.ErrorIs(t, err, unix.EPERM)
	assert.Contains(t, err.Error(), "kernel.io_uring_disabled")
	assert.Nil(t, s.Addr(), "not listening")

	var logs syncBuffer
	srv := startServer(t, Config{Engine: EngineAuto, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	assert.Equal(t, EngineEpoll, srv.Engine())
	assert.Contains(t, logs.String(), `msg="engine auto: epoll"`)
	assert.Contains(t, logs.String(), "operation not permitted")
	c := dial(t, srv)
	c.access("Fallback")
	assert.Equal(t, 1, bytes.Count([]byte(logs.String()), []byte("engine auto")))
}

// TestEngineAuto: with io_uring available, auto is uring; the engine in
// use is the configured one otherwise.
func TestEngineAuto(t *testing.T) {
	var logs syncBuffer
	s := startServer(t, Config{Engine: EngineAuto, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	want := EngineURing
	if engineUnavailable(EngineURing) != "" {
		want = EngineEpoll
	}
	assert.Equal(t, want, s.Engine())
	assert.Contains(t, logs.String(), "engine auto: "+want)
	for _, e := range []string{EngineGoroutine, EngineEpoll} {
		s, err := New(Config{Listen: "127.0.0.1:0", Engine: e})
		require.NoError(t, err)
		assert.Equal(t, e, s.Engine())
		require.NoError(t, s.Start())
		assert.Equal(t, e, s.Engine())
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		require.NoError(t, s.Shutdown(ctx))
		cancel()
	}
}

// TestURingHeldConfirm: a chat's confirm held for the next round
// (urHoldMin lowered to hold it after any round) reaches its sender when
// nothing else comes (the loop waits urHoldMax at most for the next
// round), and when the next chat of the room comes, in front of it.
func TestURingHeldConfirm(t *testing.T) {
	if why := engineUnavailable(EngineURing); why != "" {
		t.Skip(why)
	}
	hold := urHoldMin
	t.Cleanup(func() { urHoldMin = hold }) // after the server's shutdown
	urHoldMin = 1
	s := startServer(t, Config{Engine: EngineURing, Loops: 1})
	a, b := dial(t, s), dial(t, s)
	a.access("Held")
	a.enter("Held", "a")
	b.access("Held")
	b.enter("Held", "b")
	_, ok := a.expect().(*protocol.EnterRoom) // b's entry
	require.True(t, ok)
	// Each quiet chat's confirm comes after urHoldMax; held rather until
	// the loop's next wake-up (its deadline scan, or the runtime's
	// preemption signal, every 10 to 20 ms), most would take more.
	const quiet = 40
	var took []time.Duration
	for i := range quiet {
		text := fmt.Sprintf("quiet %d", i)
		a.send(chat("Held", "a", text))
		sent := time.Now()
		ind, ok := b.expect().(*protocol.Chat)
		require.True(t, ok)
		assert.Equal(t, text, ind.Text)
		conf, ok := a.expect().(*protocol.Chat) // nothing else comes
		require.True(t, ok)
		took = append(took, time.Since(sent))
		assert.Equal(t, protocol.Confirm, conf.Type)
	}
	slices.Sort(took)
	assert.Less(t, took[quiet/2], 8*time.Millisecond, "the median of %d quiet chats' confirms", quiet)
	for i := range 20 {
		// b answers at once: its chat may take a's held confirm along
		a.send(chat("Held", "a", fmt.Sprintf("turn %d", i)))
		_, ok := b.expect().(*protocol.Chat)
		require.True(t, ok)
		b.send(chat("Held", "b", fmt.Sprintf("answer %d", i)))
		conf, ok := a.expect().(*protocol.Chat)
		require.True(t, ok)
		assert.Equal(t, protocol.Confirm, conf.Type, "the confirm first")
		ind, ok := a.expect().(*protocol.Chat)
		require.True(t, ok)
		assert.Equal(t, protocol.Indication, ind.Type)
		assert.Equal(t, fmt.Sprintf("answer %d", i), ind.Text)
		_, ok = b.expect().(*protocol.Chat) // b's confirm
		require.True(t, ok)
	}
}

// TestURingChunkedBatch: a batch sent in chunks (lowered to a chunk of
// two sends for any batch) delivers every chat and confirm, in order.
func TestURingChunkedBatch(t *testing.T) {
	if why := engineUnavailable(EngineURing); why != "" {
		t.Skip(why)
	}
	chunkMin, chunk := urChunkMin, urChunk
	t.Cleanup(func() { urChunkMin, urChunk = chunkMin, chunk }) // after the server's shutdown
	urChunkMin, urChunk = 1, 2
	s := startServer(t, Config{Engine: EngineURing, Loops: 1})
	const n = 10
	var cs []*client
	for i := range n {
		c := dial(t, s)
		c.access("Chunks")
		c.enter("Chunks", fmt.Sprintf("u%d", i))
		cs = append(cs, c)
	}
	nextChat := func(c *client) *protocol.Chat {
		for {
			if ch, ok := c.expect().(*protocol.Chat); ok {
				return ch // after the entries of those who came later
			}
		}
	}
	for round := range 3 {
		for i, c := range cs {
			text := fmt.Sprintf("%d from %d", round, i)
			c.send(chat("Chunks", fmt.Sprintf("u%d", i), text))
			for j, o := range cs {
				ch := nextChat(o)
				if j == i {
					assert.Equal(t, protocol.Confirm, ch.Type)
				} else {
					assert.Equal(t, text, ch.Text)
				}
			}
		}
	}
}

// TestURingHeldJoinsWithChat: a connection holding the last round's
// confirm joins the round's batch when the next chat for it is queued,
// beside that chat's other receivers, with both packets in one send; one
// that no chat took stays held (flushBatch sends it at the round's end).
func TestURingHeldJoinsWithChat(t *testing.T) {
	s := &Server{cfg: Config{SendBuffer: 1 << 16}}
	l := &loop[urSock]{s: s}
	p := &urPoller{l: l}
	l.p = p
	mk := func() *sock[urSock] {
		k := newSock[urSock](100)
		k.c = &conn{s: s, fd: 100, eng: k}
		k.loop = l
		return k
	}
	sender, idle, a, b := mk(), mk(), mk(), mk()
	p.queueSend(sender.c, []byte("confirm1"), true)
	p.queueSend(idle.c, []byte("confirm2"), true)
	// the round's end, holding: no sends yet, both held
	p.flushBatch(true)
	require.Empty(t, p.batch)
	require.Len(t, p.held, 2)
	// the next round: a chat for a, sender and b
	p.queueSend(a.c, []byte("chat"), false)
	p.queueSend(sender.c, []byte("chat"), false)
	p.queueSend(b.c, []byte("chat"), false)
	assert.Equal(t, []*sock[urSock]{a, sender, b}, p.batch, "the held connection in the chat's place")
	assert.Equal(t, "confirm1chat", string(sender.x.bout), "one send: the confirm, then the chat")
	assert.False(t, sender.x.holding)
	// the confirm no chat took: still held, for flushBatch to send last
	assert.True(t, idle.x.holding)
	assert.Equal(t, 8, idle.c.inflight)
}
