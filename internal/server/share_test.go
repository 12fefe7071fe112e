package server

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volanogo/volanogo/pkg/protocol"
)

// TestConnRoomsShare: one connection enters rooms that others create and
// leave (the shape of the attack that took every dynamic room): it holds
// at most its share (the default --max-conn-rooms), the rest are answered
// ROOM_FULL and vanish with their creators, and a new user can still
// create a room and enter it.
func TestConnRoomsShare(t *testing.T) { forEngines(t, testConnRoomsShare) }

func testConnRoomsShare(t *testing.T, engine string) {
	const maxRooms = DefaultMaxConnRooms + 8
	s := startServer(t, Config{Engine: engine, MaxRooms: maxRooms})
	hoarder := dial(t, s)
	hoarder.access("")
	entered, full := 0, 0
	for i := range maxRooms {
		room := fmt.Sprintf("Hoard%d", i)
		creator := dial(t, s)
		creator.access(room)
		switch e := hoarder.enter(room, "hoarder"); e.Result {
		case protocol.EnterOK:
			entered++
		case protocol.EnterRoomFull:
			full++
		default:
			t.Fatalf("room %d: result %d", i, e.Result)
		}
		creator.c.Close()
	}
	assert.Equal(t, DefaultMaxConnRooms, entered, "rooms entered by one connection")
	assert.Equal(t, 8, full)
	assert.Equal(t, uint64(8), s.counters.requestsRefused[ReasonMaxConnRooms].Load())
	waitFor(t, "the rooms nobody holds removed", func() bool {
		return s.counters.rooms.Load() == int64(DefaultMaxConnRooms)
	})

	// after the attack a new user creates a room
	u := dial(t, s)
	u.access("AfterTheHoard")
	assert.Equal(t, protocol.EnterOK, u.enter("AfterTheHoard", "newcomer").Result)
	assert.Zero(t, s.counters.requestsRefused[ReasonMaxRooms].Load())
}

// TestConnRoomsOff: --max-conn-rooms 0 (Off) lets a connection into any
// number of rooms.
func TestConnRoomsOff(t *testing.T) {
	s := startServer(t, Config{MaxConnRooms: Off, Rooms: []string{"A", "B", "C"}, RoomLimit: 5})
	c := dial(t, s)
	c.access("")
	for _, r := range []string{"A", "B", "C"} {
		assert.Equal(t, protocol.EnterOK, c.enter(r, "u").Result)
	}
	s2 := startServer(t, Config{MaxConnRooms: 2, Rooms: []string{"A", "B", "C"}})
	c = dial(t, s2)
	c.access("")
	assert.Equal(t, protocol.EnterOK, c.enter("A", "u").Result)
	assert.Equal(t, protocol.EnterOK, c.enter("B", "u").Result)
	assert.Equal(t, protocol.EnterRoomFull, c.enter("C", "u").Result)
	c.send(&protocol.ExitRoom{Type: protocol.Request, RoomName: "A", UserName: "u"})
	assert.Equal(t, protocol.EnterOK, c.enter("C", "u").Result, "a room left makes way for another")
}

// TestStrayChats: chats to a room the sender is not in, or to a private
// session it is not in, are dropped without a reply, as the original
// drops them, and counted; past maxStrays the connection is held unread
// for the violation hold, then closed (not_in_room), so that a flood of them costs
// the server one parse each of at most 17 chats, and a flooder that
// reconnects at once makes a connection a hold.
func TestStrayChats(t *testing.T) { forEngines(t, testStrayChats) }

// testHold is the violation hold of the tests that time it (the default,
// DefaultViolationHold, is ten times as long).
const testHold = time.Second

func testStrayChats(t *testing.T, engine string) {
	s := startServer(t, Config{Engine: engine, Rooms: []string{"Elsewhere"}, ViolationHold: testHold})
	member := dial(t, s)
	member.access("")
	member.enter("Elsewhere", "member")

	c := dial(t, s)
	c.access("")
	for i := range maxStrays {
		if i%2 == 0 {
			c.send(chat("Elsewhere", "stray", "hello?"))
		} else {
			c.send(&protocol.Chat{Type: protocol.Request, RoomID: 12345, UserName: "stray", Text: "private?"})
		}
	}
	// still open: a request after them is answered
	c.send(&protocol.UserList{Type: protocol.Request, RoomName: "Elsewhere"})
	assert.Equal(t, protocol.UserListOK, c.expect().(*protocol.UserList).Result)
	assert.Equal(t, uint64(maxStrays), s.counters.strays.Load())

	c.send(chat("Elsewhere", "stray", "one too many"))
	start := time.Now()
	c.send(&protocol.UserList{Type: protocol.Request, RoomName: "Elsewhere"}) // held: never read
	c.expectClosed()
	took := time.Since(start)
	assert.GreaterOrEqual(t, took, testHold-100*time.Millisecond, "held before the close")
	assert.Less(t, took, testHold+time.Second, "closed after the hold")
	waitFor(t, "the close counted", func() bool { return s.counters.closed[ReasonNotInRoom].Load() == 1 })
	assert.Equal(t, uint64(maxStrays+1), s.counters.strays.Load())
	member.expectNothing(50 * time.Millisecond)
}

// TestStrayFlood: a connection that writes chats to a room it is not in as
// fast as it can is held after the first few, the rest never parsed, and
// closed a hold later: meanwhile its writes wait (TCP's flow control),
// so that it cannot spend the machine's CPU on them.
func TestStrayFlood(t *testing.T) { forEngines(t, testStrayFlood) }

func testStrayFlood(t *testing.T, engine string) {
	s := startServer(t, Config{Engine: engine, Rooms: []string{"Elsewhere"}, ViolationHold: testHold})
	c := dial(t, s)
	c.access("")
	b, err := chat("Elsewhere", "stray", "flood").AppendPacket(nil)
	require.NoError(t, err)
	batch := bytes.Repeat(b, 2000)
	start := time.Now()
	written := 0
	_ = c.c.SetWriteDeadline(time.Now().Add(testHold / 2))
	for { // until the writes have waited half a hold
		n, err := c.c.Write(batch)
		written += n
		if err != nil {
			require.ErrorIs(t, err, os.ErrDeadlineExceeded, "the writes wait, the connection is not closed at once")
			break
		}
	}
	t.Logf("%d bytes written before the writes waited", written)
	assert.Less(t, written, 64<<20, "what the kernel's buffers hold, not what a second of writing makes")
	c.expectClosed()
	assert.GreaterOrEqual(t, time.Since(start), testHold-100*time.Millisecond, "closed a hold later")
	waitFor(t, "the close counted", func() bool { return s.counters.closed[ReasonNotInRoom].Load() == 1 })
	assert.Equal(t, uint64(maxStrays+1), s.counters.strays.Load(), "chats parsed")
}

// TestViolationHoldOff: with Config.ViolationHold Off a doomed connection
// is closed at once, on every engine.
func TestViolationHoldOff(t *testing.T) { forEngines(t, testViolationHoldOff) }

func testViolationHoldOff(t *testing.T, engine string) {
	s := startServer(t, Config{Engine: engine, Rooms: []string{"Elsewhere"}, ViolationHold: Off})
	c := dial(t, s)
	c.access("")
	b, err := chat("Elsewhere", "stray", "hello?").AppendPacket(nil)
	require.NoError(t, err)
	flood := bytes.Repeat(b, maxStrays+1)
	start := time.Now()
	c.sendRaw(flood)
	c.expectClosed()
	assert.Less(t, time.Since(start), testHold/2, "closed at once")
	waitFor(t, "the close counted", func() bool { return s.counters.closed[ReasonNotInRoom].Load() == 1 })

	big := dial(t, s)
	start = time.Now()
	big.sendRaw([]byte{0, 1, 0, 0, 0, 4, 0, 0, 0, 1, 0, 0, 0x55, 0x50}) // an Access confirm of 21,840 rooms
	big.expectClosed()
	assert.Less(t, time.Since(start), testHold/2, "closed at once")
	waitFor(t, "the close counted", func() bool { return s.counters.closed[ReasonTooLarge].Load() == 1 })
}

// TestChatDelay: chatDelay lets a burst of one second's chats through,
// then spaces the rest at the rate: the delays it asks for add up to the
// time the chats past the burst take at the rate. (No sleeping: the calls
// come faster than any rate, and the delays are summed.)
func TestChatDelay(t *testing.T) {
	s, err := New(Config{ChatRate: 1000})
	require.NoError(t, err)
	defer s.warn.stop()
	c := &conn{s: s}
	var total, firstAt time.Duration
	first := -1
	start := time.Now()
	const chats = 3200
	for i := range chats {
		if d := c.chatDelay(); d > 0 {
			if first < 0 {
				first, firstAt = i, time.Since(start)
			}
			total += d
			// as if it waited: the chats after come d later
			c.share.tat -= int64(d)
		}
	}
	elapsed := time.Since(start)
	require.Less(t, elapsed, 100*time.Millisecond, "the calls must be much faster than the rate")
	assert.GreaterOrEqual(t, first, 1000-chatBatch, "the burst passes")
	// and what the rate gave back while the calls ran
	assert.LessOrEqual(t, first, 1000+chatBatch+int(firstAt.Milliseconds())+1)
	want := time.Duration(chats-1000) * time.Millisecond
	assert.InDelta(t, want.Seconds(), (total + elapsed).Seconds(), 0.05, "delays %v for %d chats past the burst", total, chats-1000)
	assert.Equal(t, uint64(1), s.counters.requestsRefused[ReasonChatRate].Load(), "counted once per connection")

	off, err := New(Config{ChatRate: Off})
	require.NoError(t, err)
	defer off.warn.stop()
	c = &conn{s: off}
	for range chats {
		require.Zero(t, c.chatDelay())
	}
}

// TestChatRatePaces: a member that pipelines chats faster than
// --chat-rate is slowed down (its confirms come at the rate after the
// burst), not closed; its room gets every chat.
func TestChatRatePaces(t *testing.T) { forEngines(t, testChatRatePaces) }

func testChatRatePaces(t *testing.T, engine string) {
	const rate, chats = 400, 1000
	s := startServer(t, Config{Engine: engine, ChatRate: rate})
	a := dial(t, s)
	a.access("Paced")
	a.enter("Paced", "a")
	b := dial(t, s)
	b.access("Paced")
	b.enter("Paced", "b")
	a.expect() // b's entry
	one, err := chat("Paced", "a", "fast").AppendPacket(nil)
	require.NoError(t, err)
	batch := bytes.Repeat(one, chats)
	start := time.Now()
	a.sendRaw(batch)
	for range chats {
		_, err := b.next(10 * time.Second)
		require.NoError(t, err)
		_, err = a.next(10 * time.Second)
		require.NoError(t, err)
	}
	took := time.Since(start)
	// a burst of rate chats, the rest at the rate
	assert.GreaterOrEqual(t, took, time.Duration(chats-rate-chatBatch)*time.Second/rate, "paced")
	assert.Equal(t, uint64(1), s.counters.requestsRefused[ReasonChatRate].Load())
	assert.Zero(t, s.counters.closed[ReasonSlowConsumer].Load())
}

// TestHeldThenStopped: a connection held for its close (its stray chats,
// a packet over --max-packet) when the server drains or shuts down is
// closed by the stop, once, and the stop does not wait out the hold's
// reading (the held connections never read what their peers still write).
func TestHeldThenStopped(t *testing.T) { forEngines(t, testHeldThenStopped) }

func testHeldThenStopped(t *testing.T, engine string) {
	for _, stop := range []string{"drain", "shutdown"} {
		t.Run(stop, func(t *testing.T) {
			s, err := New(Config{Listen: "127.0.0.1:0", Engine: engine, Rooms: []string{"Elsewhere"}})
			require.NoError(t, err)
			require.NoError(t, s.Start())
			stray, err := chat("Elsewhere", "stray", "flood").AppendPacket(nil)
			require.NoError(t, err)
			flood := bytes.Repeat(stray, maxStrays+1)
			a := dial(t, s)
			a.access("")
			a.sendRaw(flood)
			b := dial(t, s)
			b.sendRaw([]byte{0, 1, 0, 0, 0, 4, 0, 0, 0, 1, 0, 0, 0x55, 0x50}) // an Access confirm of 21,840 rooms
			waitFor(t, "both held", func() bool {
				return s.counters.strays.Load() == maxStrays+1 && s.counters.open.Load() == 2
			})
			time.Sleep(100 * time.Millisecond) // into the hold
			for _, c := range []*client{a, b} {
				go func() { // still writing, never read
					_ = c.c.SetWriteDeadline(time.Now().Add(3 * time.Second))
					for {
						if _, err := c.c.Write(flood); err != nil {
							return
						}
					}
				}()
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			start := time.Now()
			if stop == "drain" {
				require.NoError(t, s.Drain(ctx))
			}
			require.NoError(t, s.Shutdown(ctx))
			took := time.Since(start)
			t.Logf("%s took %v", stop, took.Round(time.Millisecond))
			assert.Less(t, took, 3*time.Second, "the stop does not wait out the hold (%v)", DefaultViolationHold)
			a.expectClosed()
			b.expectClosed()
			assert.Zero(t, s.counters.open.Load(), "connections open")
			assert.Zero(t, s.counters.held.Load(), "connections held")
			closed := uint64(0)
			for _, v := range s.counters.closed {
				closed += v.Load()
			}
			assert.Equal(t, s.counters.accepted[0].Load(), closed, "every accepted connection closed once")
		})
	}
}
