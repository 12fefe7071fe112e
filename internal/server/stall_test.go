package server

import (
	"bytes"
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volanogo/volanogo/internal/results"
	"github.com/volanogo/volanogo/internal/swarm"
	"github.com/volanogo/volanogo/pkg/protocol"
)

// The lock audit: no lock shared between clients is held while work that
// grows with one client's input runs. Each test below has one client do
// the most of such work it can and measures another client meanwhile.
//
//   - Server.privMu: a connection's private sessions used to be a slice
//     ended one by one under the server-wide lock (quadratic); now a map,
//     each session ended with the lock held for O(1).
//   - Server.mu: a RoomList used to lower-case and match every room's name
//     under it; now a snapshot is matched outside it.
//   - room.mu: entering a room looked the connection's other rooms up
//     under it (linear in the rooms one client entered); now a map.
//   - A flooding reader yields every yieldEvery packets (conn.go), and
//     its requests other than chats are paced (TestRequestRate); the tests
//     here turn the pacing off to load the locks as hard as they can.

// roundTrip times one request that takes the server-wide lock: an
// Access, then an EnterRoom.
func roundTrip(t *testing.T, s *Server, room, name string) time.Duration {
	t.Helper()
	start := time.Now()
	c := dial(t, s)
	c.access(room)
	c.enter(room, name)
	d := time.Since(start)
	c.c.Close()
	return d
}

// TestNoStallClosingManySessions: while a connection with 30,000 private
// sessions closes, another pair's session ends and is told at once.
func TestNoStallClosingManySessions(t *testing.T) { forEngines(t, testNoStallClosingManySessions) }

func testNoStallClosingManySessions(t *testing.T, engine string) {
	if testing.Short() {
		t.Skip("builds 30,000 sessions")
	}
	s := startServer(t, Config{Engine: engine, MaxPrivate: Off, RequestRate: Off})
	att := dial(t, s)
	att.access("Flood")
	att.enter("Flood", "attacker")
	const sessions = 30000
	req, err := (&protocol.EnterPrivate{Type: protocol.Request, RoomName: "Flood", FromName: "attacker", ToName: "attacker"}).AppendPacket(nil)
	require.NoError(t, err)
	batch := bytes.Repeat(req, 1000)
	// The writer keeps at most two batches' confirms (about 80 KB)
	// ahead of the reader: a client that lets the server's replies pile
	// up past the send buffer (256 KiB) is a slow consumer, which a
	// busy machine (a slow reader under -race) made this one.
	acked := make(chan struct{}, sessions/1000)
	go func() {
		for i := range sessions / 1000 {
			if i >= 2 {
				select {
				case <-acked:
				case <-time.After(60 * time.Second): // (the reader fails first)
					return
				}
			}
			if _, err := att.c.Write(batch); err != nil {
				return
			}
		}
	}()
	for i := range sessions {
		_, err := att.next(30 * time.Second) // (a loaded machine, -race)
		require.NoError(t, err, "reply %d", i)
		if i%1000 == 999 {
			acked <- struct{}{}
		}
	}

	a := dial(t, s)
	a.access("Other")
	a.enter("Other", "a")
	b := dial(t, s)
	b.access("Other")
	b.enter("Other", "b")
	a.expect()
	a.send(&protocol.EnterPrivate{Type: protocol.Request, RoomName: "Other", FromName: "a", ToName: "b"})
	id := a.expect().(*protocol.EnterPrivate).RoomID
	b.expect()

	att.c.Close()
	start := time.Now()
	a.send(&protocol.ExitPrivate{Type: protocol.Request, RoomID: id, FromName: "a"})
	assert.Equal(t, id, b.expect().(*protocol.ExitPrivate).RoomID)
	took := time.Since(start)
	t.Logf("another session ended in %v while 30,000 were being ended", took)
	assert.Less(t, took, 500*time.Millisecond)
	waitFor(t, "every session ended", func() bool {
		s.privMu.Lock()
		defer s.privMu.Unlock()
		return len(s.privates) == 0
	})
}

// TestNoStallRoomListFlood: a client floods RoomList requests whose filter
// matches none of 20,000 rooms; others' Access and EnterRoom, which take
// the server's lock, stay fast.
func TestNoStallRoomListFlood(t *testing.T) { forEngines(t, testNoStallRoomListFlood) }

func testNoStallRoomListFlood(t *testing.T, engine string) {
	rooms := make([]string, 20000)
	for i := range rooms {
		rooms[i] = "Permanent room number " + strconv.Itoa(i)
	}
	s := startServer(t, Config{Engine: engine, Rooms: rooms, RequestRate: Off})
	att := dial(t, s)
	att.access("")
	req, err := (&protocol.RoomList{Type: protocol.Request, Filter: "matches nothing"}).AppendPacket(nil)
	require.NoError(t, err)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			att.sendRaw(req)
			if _, err := att.next(5 * time.Second); err != nil {
				return
			}
		}
	}()
	var worst time.Duration
	for i := range 20 {
		worst = max(worst, roundTrip(t, s, "Permanent room number "+strconv.Itoa(i), "u"))
	}
	close(stop)
	<-done
	t.Logf("slowest Access+EnterRoom during the flood: %v", worst)
	assert.Less(t, worst, 500*time.Millisecond)
}

// TestNoStallManyRooms: a connection in 5,000 rooms; entering one more,
// and another user entering one of them, cost no more than usual.
func TestNoStallManyRooms(t *testing.T) { forEngines(t, testNoStallManyRooms) }

func testNoStallManyRooms(t *testing.T, engine string) {
	rooms := make([]string, 5001)
	for i := range rooms {
		rooms[i] = "R" + strconv.Itoa(i)
	}
	s := startServer(t, Config{Engine: engine, Rooms: rooms, RequestRate: Off, MaxConnRooms: Off})
	att := dial(t, s)
	att.access("")
	for _, r := range rooms[:5000] {
		att.send(&protocol.EnterRoom{Type: protocol.Request, RoomName: r, UserName: "many", Profile: "p"})
	}
	for range 5000 {
		require.Equal(t, protocol.EnterOK, att.expect().(*protocol.EnterRoom).Result)
	}
	start := time.Now()
	att.enter("R5000", "many")
	assert.Less(t, time.Since(start), 500*time.Millisecond)
	// its chats reach the right room
	other := dial(t, s)
	other.access("")
	other.enter("R4999", "other")
	att.expect()
	att.send(chat("R4999", "many", "hello"))
	assert.Equal(t, "hello", other.expect().(*protocol.Chat).Text)
	att.c.Close()
	waitFor(t, "the rooms emptied", func() bool { return s.counters.users.Load() == 1 })
}

// TestRequestRate: past a burst of a second's worth, a connection's
// requests other than chats are paced to the rate, all of them answered;
// chats are not paced.
func TestRequestRate(t *testing.T) { forEngines(t, testRequestRate) }

func testRequestRate(t *testing.T, engine string) {
	s := startServer(t, Config{Engine: engine, RequestRate: 500})
	c := dial(t, s)
	c.access("Rate")
	c.enter("Rate", "u")
	req, err := (&protocol.RoomList{Type: protocol.Request}).AppendPacket(nil)
	require.NoError(t, err)
	const n = 1000
	go func() {
		for range n {
			if _, err := c.c.Write(req); err != nil {
				return
			}
		}
	}()
	start := time.Now()
	for range n {
		_, err := c.next(10 * time.Second)
		require.NoError(t, err)
	}
	took := time.Since(start)
	assert.GreaterOrEqual(t, took, 800*time.Millisecond, "1,000 requests at 500/s after a burst of 500")
	assert.Equal(t, uint64(1), s.counters.requestsRefused[ReasonThrottled].Load())
	// chats are not paced
	start = time.Now()
	for range 2000 {
		c.send(chat("Rate", "u", "x"))
	}
	for range 2000 {
		c.expect()
	}
	assert.Less(t, time.Since(start), 4*time.Second)
}

type noObserver struct{}

func (noObserver) Phase(swarm.Phase, swarm.Progress)        {}
func (noObserver) Start(context.Context) (time.Time, error) { return time.Time{}, nil }

// TestBenchmarkRunsUnaffected: the defaults that protect (deadlines,
// request pacing, room and session limits, bounded room lists) leave
// turn-taking, paced and churn runs of the swarm whole.
func TestBenchmarkRunsUnaffected(t *testing.T) { forEngines(t, testBenchmarkRunsUnaffected) }

func testBenchmarkRunsUnaffected(t *testing.T, engine string) {
	s := startServer(t, Config{Engine: engine})
	target := swarm.Target{Transport: swarm.TransportTCP, Addr: s.Addr().String()}
	for _, spec := range []swarm.Spec{
		{Rooms: []int{1, 2, 3, 4}, Users: 20, Count: 10},
		{Rooms: []int{1, 2, 3, 4}, Users: 2, Pause: 200 * time.Millisecond, Duration: 2 * time.Second, Count: 0},
		{Scenario: results.ScenarioChurn, Rooms: []int{1, 2}, Users: 5, Count: 5},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		doc, err := swarm.Run(ctx, spec, target, noObserver{})
		cancel()
		require.NoError(t, err, "%+v", spec)
		assert.Empty(t, doc.Failures, "%+v", spec)
		assert.False(t, doc.Integrity.Failed(), "%+v", spec)
	}
	closes := map[string]uint64{}
	for r, v := range s.counters.closed {
		if n := v.Load(); n > 0 && r != ReasonEOF {
			closes[r] = n
		}
	}
	assert.Empty(t, closes, "no connection closed for anything but its client's close")
	for r, v := range s.counters.requestsRefused {
		assert.Zero(t, v.Load(), r)
	}
}
