//go:build linux

package server

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/volanogo/volanogo/pkg/protocol"
)

// TestCloseBeforeAttach: a connection closed after it is tracked and
// before its engine has it (Shutdown or Drain in that window) is finished
// once, and its descriptor number, which a new socket may have by then,
// is never registered or closed again. The pipe stands for that new
// socket: it gets the closed connection's descriptor number, and must
// still work after the engine has dealt with the closed connection.
func TestCloseBeforeAttach(t *testing.T) {
	for _, how := range []string{"close", "drain"} {
		t.Run(how, func(t *testing.T) {
			forEngines(t, func(t *testing.T, engine string) { testCloseBeforeAttach(t, engine, how) })
		})
	}
}

func testCloseBeforeAttach(t *testing.T, engine, how string) {
	s := startServer(t, Config{Engine: engine})
	type reuse struct {
		fd   int
		pipe [2]int
	}
	got := make(chan reuse, 1)
	hook := func(c *conn) {
		fd := int(c.fd)
		switch how {
		case "close": // as Shutdown does
			c.close(ReasonShutdown)
		case "drain": // as Drain does
			c.closeAfterReply(ReasonShutdown)
			c.wakeReader()
			c.close(ReasonShutdown) // its drain deadline passed
		}
		var p [2]int
		if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
			p = [2]int{-1, -1}
		}
		got <- reuse{fd, p}
	}
	s.testHookTracked.Store(&hook)
	var r reuse
	tries := uint64(0)
	for range 20 { // until the pipe gets the closed connection's number
		tries++
		nc, err := net.DialTimeout("tcp", s.Addr().String(), 5*time.Second)
		require.NoError(t, err)
		select {
		case r = <-got:
		case <-time.After(5 * time.Second):
			t.Fatal("the hook did not run")
		}
		nc.Close()
		if r.fd < 0 || r.pipe[0] == r.fd || r.pipe[1] == r.fd {
			break
		}
		unix.Close(r.pipe[0])
		unix.Close(r.pipe[1])
	}
	s.testHookTracked.Store(nil)
	require.True(t, r.pipe[0] == r.fd || r.pipe[1] == r.fd || r.fd < 0, "no pipe got the descriptor number %d", r.fd)
	defer unix.Close(r.pipe[0])
	defer unix.Close(r.pipe[1])
	waitFor(t, "the closed connection to be finished", func() bool { return s.counters.open.Load() == 0 })
	// Let the engine do whatever it would do with the connection.
	c := dial(t, s)
	c.access("Lobby")
	assert.Equal(t, int64(1), s.counters.open.Load())
	n, err := unix.Write(r.pipe[1], []byte("x"))
	require.NoError(t, err, "the pipe's write end (descriptor %d) was closed by the server", r.pipe[1])
	require.Equal(t, 1, n)
	var b [1]byte
	n, err = unix.Read(r.pipe[0], b[:])
	require.NoError(t, err, "the pipe's read end (descriptor %d) was closed by the server", r.pipe[0])
	assert.Equal(t, 1, n)
	assert.Equal(t, tries, s.counters.closed[ReasonShutdown].Load(), "each finished once")
}

// pairOnTwoLoops starts a server of two loops (rings), each taking one
// connection before the other, and a user on each, in one room (a has
// had b's entry).
func pairOnTwoLoops(t *testing.T, engine, room string) (*Server, *client, *client) {
	t.Helper()
	s := startServer(t, Config{Engine: engine, Loops: 2, LoopFill: 1})
	a := dial(t, s)
	a.access(room)
	a.enter(room, "a")
	b := dial(t, s)
	b.access(room)
	b.enter(room, "b")
	_, ok := a.expect().(*protocol.EnterRoom) // b's entry
	require.True(t, ok)
	return s, a, b
}

// TestLastConnectionOfALoop: a loop (ring) that loses its last connection
// still completes what it sends to another loop's connection: after ring
// 0's only user is closed for a bad request, the user on ring 1 gets its
// own chat's confirm at once, and Shutdown completes.
func TestLastConnectionOfALoop(t *testing.T) { forEngines(t, testLastConnectionOfALoop) }

func testLastConnectionOfALoop(t *testing.T, engine string) {
	_, a, b := pairOnTwoLoops(t, engine, "Two")
	a.send(markAccess("Two")) // a second Access: closed
	a.expectClosed()
	ex, ok := b.expect().(*protocol.ExitRoom)
	require.True(t, ok, "b is told that a left")
	assert.Equal(t, "a", ex.UserName)
	for i := range 5 {
		start := time.Now()
		b.send(chat("Two", "b", fmt.Sprint("alone ", i)))
		p, err := b.next(2 * time.Second)
		require.NoError(t, err, "chat %d: no confirm", i)
		conf, ok := p.(*protocol.Chat)
		require.True(t, ok, "chat %d: got %#v", i, p)
		assert.Equal(t, protocol.Confirm, conf.Type)
		assert.Less(t, time.Since(start), 200*time.Millisecond, "chat %d's confirm", i)
	}
}

// TestCrossLoopDelivery: a chat from one loop's (ring's) connection reaches
// a member on another loop without waiting for that loop to wake for
// something else. b's chat leaves b's loop with sends to a and b in flight
// (or just completed); a answers at once, from the other loop, while
// nothing else happens on b's.
func TestCrossLoopDelivery(t *testing.T) { forEngines(t, testCrossLoopDelivery) }

func testCrossLoopDelivery(t *testing.T, engine string) {
	_, a, b := pairOnTwoLoops(t, engine, "Cross")
	const n = 20
	var took []time.Duration
	for i := range n {
		b.send(chat("Cross", "b", fmt.Sprint("ping ", i)))
		p, err := a.next(2 * time.Second)
		require.NoError(t, err, "chat %d", i)
		require.IsType(t, &protocol.Chat{}, p)
		start := time.Now()
		a.send(chat("Cross", "a", fmt.Sprint("pong ", i)))
		for {
			p, err = b.next(2 * time.Second)
			require.NoError(t, err, "chat %d", i)
			if ch, ok := p.(*protocol.Chat); ok && ch.Type == protocol.Indication {
				break // (b's own confirm comes first)
			}
		}
		took = append(took, time.Since(start))
		_, err = a.next(2 * time.Second) // a's confirm
		require.NoError(t, err)
		time.Sleep(50 * time.Millisecond) // the loops go idle between chats
	}
	var sum time.Duration
	for _, d := range took {
		sum += d
	}
	slices.Sort(took)
	t.Logf("%s: delivery across loops, %d chats 50 ms apart: mean %v, median %v, max %v", engine, n, sum/n, took[n/2], took[n-1])
	assert.Less(t, took[n/2], 5*time.Millisecond, "median delivery across loops")
}

// TestResetConnectionsLeaveNothing: thousands of connections opened and
// reset before their Access (health checks, a port scan) leave nothing in
// any loop's lists once they are gone.
func TestResetConnectionsLeaveNothing(t *testing.T) { forEngines(t, testResetConnectionsLeaveNothing) }

func testResetConnectionsLeaveNothing(t *testing.T, engine string) {
	s := startServer(t, Config{Engine: engine, Loops: 2})
	var opened atomic.Int64
	for range 2000 {
		nc, err := net.DialTimeout("tcp", s.Addr().String(), 5*time.Second)
		require.NoError(t, err)
		opened.Add(1)
		_ = nc.(*net.TCPConn).SetLinger(0)
		nc.Close()
	}
	waitFor(t, "every connection to be accepted", func() bool {
		return s.counters.accepted[0].Load() == uint64(opened.Load())
	})
	waitFor(t, "every connection to be released", func() bool { return s.counters.open.Load() == 0 })
	s.mu.Lock()
	eng := s.eng
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, s.Shutdown(ctx)) // the loops stop: their lists can be read
	assert.Zero(t, loopKept(eng), "connections kept in the loops after release")
}

// TestFloodCutsOnlyTheSender: one member pipelines 10,000 chats into its
// room without reading a byte; the other members, who read as fast as
// they can, are not cut as slow consumers for it: only the flooder is,
// for its own unread confirms, and the room goes on.
func TestFloodCutsOnlyTheSender(t *testing.T) { forEngines(t, testFloodCutsOnlyTheSender) }

func testFloodCutsOnlyTheSender(t *testing.T, engine string) {
	s := startServer(t, Config{Engine: engine, RequestRate: Off})
	// a long name, so that the flooder's unread confirms (which carry
	// it) pass its send buffer and the kernel's
	room := strings.Repeat("Flood", 18)
	const readers = 5
	var rs []*client
	for i := range readers {
		c := dial(t, s)
		c.access(room)
		c.enter(room, fmt.Sprint("r", i))
		rs = append(rs, c)
	}
	att := dial(t, s)
	att.access(room)
	att.enter(room, "flooder")
	// the readers read everything, as fast as they can, until the
	// flood is over and one more chat of theirs has gone round
	var wg sync.WaitGroup
	counts := make([]int, readers)
	for i, c := range rs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				_ = c.c.SetReadDeadline(time.Now().Add(30 * time.Second))
				p, err := c.r.ReadPacket()
				if err != nil {
					return
				}
				if ch, ok := p.(*protocol.Chat); ok {
					if ch.Type == protocol.Confirm || ch.Text == "after" {
						return // (r0's "after" comes back as its confirm)
					}
					counts[i]++
				}
			}
		}()
	}
	one, err := chat(room, "flooder", "flood of chats, flood of chats, flood of chats").AppendPacket(nil)
	require.NoError(t, err)
	flood := bytes.Repeat(one, 10000)
	go func() {
		_ = att.c.SetWriteDeadline(time.Now().Add(30 * time.Second))
		_, _ = att.c.Write(flood) // it never reads
	}()
	// (paced to what the readers take: on a loaded machine, seconds)
	waitWithin(t, 30*time.Second, "the flooder to be cut", func() bool { return s.counters.closed[ReasonSlowConsumer].Load() > 0 })
	waitFor(t, "the flooder to be gone", func() bool { return s.counters.open.Load() <= readers })
	assert.Equal(t, uint64(1), s.counters.closed[ReasonSlowConsumer].Load(), "only the flooder is a slow consumer")
	// the room goes on: a reader's chat reaches every other reader
	_ = rs[0].c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	b, err := chat(room, "r0", "after").AppendPacket(nil)
	require.NoError(t, err)
	_, err = rs[0].c.Write(b)
	require.NoError(t, err)
	wg.Wait()
	t.Logf("chats each reader got of the flood: %v", counts)
	assert.Equal(t, int64(readers), s.counters.open.Load(), "the readers are all open")
}
