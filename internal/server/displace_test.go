package server

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volanogo/volanogo/pkg/protocol"
)

// refusedAccess is the first 14 bytes of an Access confirm of 21,840
// rooms: refused on its count (over --max-packet), so its connection is
// held for --violation-hold before its close.
var refusedAccess = []byte{0, 1, 0, 0, 0, 4, 0, 0, 0, 1, 0, 0, 0x55, 0x50}

// TestDisplaceAtMaxConnections: at --max-connections a new connection is
// served, not refused, when room can be made: violation holds end at
// once, and connections that have gone a second without an Access are
// closed (displaced); connections past their Access are never displaced,
// and with only those the next one is refused as before.
func TestDisplaceAtMaxConnections(t *testing.T) { forEngines(t, testDisplaceAtMaxConnections) }

func testDisplaceAtMaxConnections(t *testing.T, engine string) {
	s := startServer(t, Config{Engine: engine, MaxConnections: 6}) // the default hold: 10 s
	alice, bob := aliceAndBob(t, s, "Stays")
	var silent, held []*client
	for range 2 {
		c := dial(t, s)
		silent = append(silent, c)
		waitFor(t, "the silent one tracked", func() bool { return s.counters.open.Load() == int64(2+len(silent)) })
	}
	for range 2 {
		c := dial(t, s)
		c.sendRaw(refusedAccess)
		held = append(held, c)
	}
	waitFor(t, "both held", func() bool { return s.counters.held.Load() == 2 && s.counters.open.Load() == 6 })

	// At the limit, well within the hold and the silent ones' second:
	// the holds end, and the new user is served.
	start := time.Now()
	carol := dial(t, s)
	assert.Equal(t, protocol.AccessOK, carol.access("").Result, "served at the limit")
	for _, c := range held {
		c.expectClosed()
	}
	assert.Less(t, time.Since(start), 3*time.Second, "the holds (%v) ended early", DefaultViolationHold)
	waitFor(t, "the holds counted", func() bool {
		return s.counters.holdsCut.Load() == 2 && s.counters.held.Load() == 0 &&
			s.counters.closed[ReasonTooLarge].Load() == 2
	})
	assert.Zero(t, s.counters.closed[ReasonDisplaced].Load(), "the silent ones are younger than %v", displaceAge)
	assert.Zero(t, s.counters.refused[ReasonMaxConns].Load())

	// Full again (2 users, 2 silent, carol, dave); a second on, the next
	// user displaces the silent ones, the oldest first.
	dave := dial(t, s)
	dave.access("")
	waitFor(t, "full", func() bool { return s.counters.open.Load() == 6 })
	time.Sleep(displaceAge + displaceEvery)
	erin := dial(t, s)
	assert.Equal(t, protocol.AccessOK, erin.access("").Result, "served at the limit")
	for _, c := range silent {
		c.expectClosed()
	}
	waitFor(t, "the displaced counted", func() bool { return s.counters.closed[ReasonDisplaced].Load() == 2 })

	// The admitted are never displaced: full of them, the next is refused.
	gina := dial(t, s)
	gina.access("")
	waitFor(t, "full of the admitted", func() bool { return s.counters.open.Load() == 6 })
	time.Sleep(displaceAge + displaceEvery)
	frank := dial(t, s)
	frank.sendRaw(mustPacket(t, markAccess("")))
	frank.expectClosed()
	assert.Equal(t, uint64(1), s.counters.refused[ReasonMaxConns].Load())
	assert.Equal(t, uint64(2), s.counters.closed[ReasonDisplaced].Load(), "no admitted connection displaced")
	for i := range 3 {
		alice.send(chat("Stays", "alice", "still here "+strconv.Itoa(i)))
		assert.Equal(t, protocol.Confirm, alice.expect().PacketType())
		assert.Equal(t, "still here "+strconv.Itoa(i), bob.expect().(*protocol.Chat).Text)
	}
}

// TestDisplaceScanRate: one scan lets go of every held connection and
// every one silent for displaceAge, and leaves the younger ones; a second
// scan within displaceEvery does nothing.
func TestDisplaceScanRate(t *testing.T) {
	s := startServer(t, Config{})
	var old []*client
	for i := range 8 {
		old = append(old, dial(t, s))
		waitFor(t, "tracked", func() bool { return s.counters.open.Load() == int64(i+1) })
	}
	time.Sleep(displaceAge)
	young := dial(t, s)
	for range 4 {
		c := dial(t, s)
		c.sendRaw(refusedAccess)
		old = append(old, c)
	}
	waitFor(t, "held", func() bool { return s.counters.held.Load() == 4 && s.counters.open.Load() == 13 })
	require.Equal(t, 12, s.makeRoom())
	assert.Zero(t, s.makeRoom(), "a second scan within displaceEvery does nothing")
	for _, c := range old {
		c.expectClosed()
	}
	young.expectNothing(100 * time.Millisecond)
	waitFor(t, "counted", func() bool {
		return s.counters.holdsCut.Load() == 4 && s.counters.closed[ReasonDisplaced].Load() == 8
	})
}

func mustPacket(t testing.TB, p protocol.Packet) []byte {
	t.Helper()
	b, err := p.AppendPacket(nil)
	require.NoError(t, err)
	return b
}

// BenchmarkMakeRoomScan: one displacement scan over 20,000 connections
// past their Access (nothing to let go: the walk is the whole cost).
func BenchmarkMakeRoomScan(b *testing.B) {
	s, err := New(Config{})
	require.NoError(b, err)
	for range 20000 {
		c := &conn{s: s, born: time.Now().UnixNano()}
		c.status.Store(connAdmitted)
		s.conns[c] = struct{}{}
	}
	for b.Loop() {
		s.lastRoom.Store(0)
		if s.makeRoom() != 0 {
			b.Fatal("let a connection go")
		}
	}
}

// TestDisplaceAtMaxConnectionsWS: the WebSocket listener makes room at
// --max-connections as the chat listener does.
func TestDisplaceAtMaxConnectionsWS(t *testing.T) {
	s := startServer(t, Config{WSListen: "127.0.0.1:0", MaxConnections: 2})
	var silent []*wsClient
	for range 2 {
		w, _, err := dialWS(t, s, "")
		require.NoError(t, err)
		silent = append(silent, w)
	}
	waitFor(t, "full", func() bool { return s.counters.open.Load() == 2 })
	time.Sleep(displaceAge + displaceEvery)
	w, _, err := dialWS(t, s, "")
	require.NoError(t, err, "upgraded at the limit")
	w.send(markAccess(""))
	assert.Equal(t, protocol.AccessOK, w.expect().(*protocol.Access).Result)
	for _, c := range silent {
		_ = c.ws.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, _, err := c.ws.ReadMessage()
		require.Error(t, err)
		assert.NotErrorIs(t, err, os.ErrDeadlineExceeded, "displaced")
	}
	waitFor(t, "the displaced counted", func() bool { return s.counters.closed[ReasonDisplaced].Load() == 2 })
	assert.Zero(t, s.counters.refused[ReasonMaxConns].Load())
}
