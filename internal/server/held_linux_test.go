//go:build linux

package server

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/volanogo/volanogo/pkg/protocol"
	"golang.org/x/sys/unix"
)

// TestHeldReceiveBuffer: a connection held for its close is given a small
// receive buffer (holdRecvBuffer), so that a peer writing on during the
// hold fills it and stops, instead of each of its writes crossing the
// stack to a socket nobody reads; another connection keeps its own.
func TestHeldReceiveBuffer(t *testing.T) { forEngines(t, testHeldReceiveBuffer) }

func testHeldReceiveBuffer(t *testing.T, engine string) {
	s := startServer(t, Config{Engine: engine, ViolationHold: testHold})
	honest := dial(t, s)
	honest.access("Honest")
	held := dial(t, s)
	held.access("")
	// SO_RCVBUF of the server's side of the connection whose peer is cl
	// (0 while it is not tracked)
	rcvbuf := func(cl *client) int {
		s.mu.Lock()
		defer s.mu.Unlock()
		for c := range s.conns {
			if c.remote != cl.c.LocalAddr().String() {
				continue
			}
			c.mu.Lock()
			defer c.mu.Unlock()
			if c.fd < 0 {
				return 0
			}
			n, err := unix.GetsockoptInt(int(c.fd), unix.SOL_SOCKET, unix.SO_RCVBUF)
			if err != nil {
				return 0
			}
			return n
		}
		return 0
	}
	before := rcvbuf(held)
	assert.Greater(t, before, 2*holdRecvBuffer, "a connection's own buffer")
	rooms := make([]string, 21840)
	for i := range rooms {
		rooms[i] = "x"
	}
	big, err := (&protocol.RoomList{Type: protocol.Request, Rooms: rooms}).AppendPacket(nil)
	require.NoError(t, err)
	held.sendRaw(big[:12]) // header, empty filter, count: refused
	waitFor(t, "the held connection's buffer shrunk", func() bool { return rcvbuf(held) <= 2*holdRecvBuffer })
	waitFor(t, "the held gauge", func() bool { return s.counters.held.Load() == 1 })
	assert.Positive(t, rcvbuf(held), "held, not closed")
	assert.Equal(t, before, rcvbuf(honest), "the others' untouched")
	held.expectClosed()
	waitFor(t, "the close counted", func() bool { return s.counters.closed[ReasonTooLarge].Load() == 1 })
	assert.Zero(t, s.counters.held.Load(), "the held gauge after the hold")
}
