package server

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volanogo/volanogo/pkg/protocol"
)

// TestPacketTimeout: a packet begun after the Access must arrive whole
// within --packet-timeout: a peer that trickles one out, a byte at a time
// (each byte well inside the idle timeout), is closed for it; one whose
// packet takes a little while but arrives is served.
func TestPacketTimeout(t *testing.T) { forEngines(t, testPacketTimeout) }

func testPacketTimeout(t *testing.T, engine string) {
	const deadline = 300 * time.Millisecond
	s := startServer(t, Config{Engine: engine, PacketTimeout: deadline})
	whole, err := chat("Slow", "slow", "a chat sent a byte at a time").AppendPacket(nil)
	require.NoError(t, err)

	ok := dial(t, s)
	ok.access("Slow")
	ok.enter("Slow", "slow")
	for _, b := range whole { // well within the deadline
		ok.sendRaw([]byte{b})
		time.Sleep(deadline / time.Duration(4*len(whole)))
	}
	_, err = ok.next(5 * time.Second) // its confirm
	require.NoError(t, err)

	c := dial(t, s)
	c.access("Slow")
	c.enter("Slow", "trickler")
	start := time.Now()
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		for _, b := range whole[:len(whole)-1] { // never the last byte
			_ = c.c.SetWriteDeadline(time.Now().Add(time.Second))
			if _, err := c.c.Write([]byte{b}); err != nil {
				return
			}
			time.Sleep(deadline / 4)
		}
	}()
	waitWithin(t, 10*time.Second, "the trickler to be closed", func() bool {
		return s.counters.closed[ReasonPacketTimeout].Load() == 1
	})
	took := time.Since(start)
	t.Logf("closed %v after its packet began (deadline %v)", took.Round(time.Millisecond), deadline)
	assert.Less(t, took, 10*deadline, "closed within a few deadlines")
	assert.Equal(t, int64(1), s.counters.open.Load(), "the other client is still served")
	<-closed
}

// TestLargePacketRefusedAtItsFirstBytes: the 64 KiB packet of 21,840
// one-byte strings that a trickling attacker sends (before Access an
// Access confirm, after it a RoomList request) is refused by the default
// --max-packet as soon as its count is in: the server reads no more of
// the connection, holds it for the violation hold (an attacker that
// reconnects at once makes a connection a hold) and closes it (too_large), without
// waiting for the rest. A request of the longest names and text the limits
// allow still goes through.
func TestLargePacketRefusedAtItsFirstBytes(t *testing.T) {
	forEngines(t, testLargePacketRefusedAtItsFirstBytes)
}

func testLargePacketRefusedAtItsFirstBytes(t *testing.T, engine string) {
	s := startServer(t, Config{Engine: engine, ViolationHold: testHold})
	require.Equal(t, DefaultMaxPacket, s.cfg.MaxPacket)
	rooms := make([]string, 21840)
	for i := range rooms {
		rooms[i] = "x"
	}
	before, err := (&protocol.Access{Type: protocol.Confirm, Result: protocol.AccessOK, Rooms: rooms}).AppendPacket(nil)
	require.NoError(t, err)
	after, err := (&protocol.RoomList{Type: protocol.Request, Rooms: rooms}).AppendPacket(nil)
	require.NoError(t, err)
	require.Greater(t, len(before), 65000)

	a := dial(t, s)
	b := dial(t, s)
	b.access("Big")
	start := time.Now()
	a.sendRaw(before[:14]) // header, result, count
	b.sendRaw(after[:12])  // header, empty filter, count
	for _, c := range []*client{a, b} {
		c.sendRaw(before[14:1000]) // more of it: never read
		c.expectClosed()
	}
	took := time.Since(start)
	assert.GreaterOrEqual(t, took, testHold-100*time.Millisecond, "held before the close")
	assert.Less(t, took, testHold+2*time.Second, "closed on the first bytes, not when the rest came")
	waitFor(t, "both refused", func() bool { return s.counters.closed[ReasonTooLarge].Load() == 2 })

	long := func(n int) string { return strings.Repeat("€", n) } // three bytes each
	room := long(DefaultMaxRoomName)
	x, y := aliceAndBob(t, s, room)
	w := &protocol.Whisper{Type: protocol.Request, RoomName: room, FromName: "alice", ToName: "bob", Text: long(DefaultMaxText)}
	raw, err := w.AppendPacket(nil)
	require.NoError(t, err)
	t.Logf("a whisper of the longest room name and text: %d bytes", len(raw))
	x.send(w)
	got, ok := y.expect().(*protocol.Whisper)
	require.True(t, ok)
	assert.Equal(t, w.Text, got.Text)
}

// TestMaxPacketDefault: --max-packet defaults to DefaultMaxPacket, or to
// twice the largest request when longer names and text are allowed, and
// may not be set below that request.
func TestMaxPacketDefault(t *testing.T) {
	c := Config{}
	c.setDefaults()
	assert.Equal(t, 1039, c.maxRequest(), "a header, a bool, an int32 and four strings at three bytes a unit")
	assert.Equal(t, DefaultMaxPacket, c.MaxPacket)
	c = Config{MaxText: 5000}
	c.setDefaults()
	assert.Equal(t, 2*c.maxRequest(), c.MaxPacket)
	assert.Greater(t, c.MaxPacket, 30000)
	c = Config{MaxPacket: 1000}
	c.setDefaults()
	err := c.check()
	var ce *ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "MaxPacket", ce.Field)
	assert.Contains(t, err.Error(), "1039 bytes")
}
