package swarm

import (
	"bufio"
	"math/rand/v2"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volanogo/volanogo/internal/results"
	"github.com/volanogo/volanogo/internal/server"
	"github.com/volanogo/volanogo/pkg/protocol"
)

func TestNumberedText(t *testing.T) {
	text := numberedText(14, 2)
	assert.Equal(t, "000000014 000000002 123456789 123456789 123456789 123456789 ", text)
	assert.Len(t, text, len(MarkText))
	for _, tc := range []struct {
		text       string
		sender, j  int64
		ok, intact bool
		comment    string
	}{
		{text, 14, 2, true, true, "as sent"},
		{text[:59], 14, 2, true, true, "trimmed by the server"},
		{text[:40], 14, 2, true, false, "cut short"},
		{"000000014 000000002 123456789 123456789 123456789 12345678X", 14, 2, true, false, "the tail changed"},
		{"00000001X 000000002 123456789 123456789 123456789 123456789", 0, 0, false, false, "the sender unreadable"},
		{"000000014-000000002 123456789 123456789 123456789 123456789", 0, 0, false, false, "no separator"},
		{MarkText, 123456789, 123456789, true, true, "Mark's own text reads as numbers no run sends"},
		{"", 0, 0, false, false, "empty"},
	} {
		s, j, ok, intact := parseText([]byte(tc.text))
		assert.Equal(t, tc.ok, ok, tc.comment)
		assert.Equal(t, tc.intact, intact, tc.comment)
		if tc.ok {
			assert.Equal(t, tc.sender, s, tc.comment)
			assert.Equal(t, tc.j, j, tc.comment)
		}
	}
}

func TestSenderLog(t *testing.T) {
	var l senderLog
	type step struct {
		j    int64
		a    arrival
		late bool
	}
	for i, st := range []step{
		{1, arrFresh, false},
		{3, arrFresh, false}, // 2 is late
		{2, arrFresh, true},
		{2, arrDuplicate, true},
		{3, arrDuplicate, false},
		{4, arrFresh, false},
		{5 + windowSize + 1, arrUntracked, false}, // beyond the window from 5
		{5, arrFresh, true},
		{1, arrDuplicate, true},
	} {
		a, late := l.accept(st.j)
		assert.Equal(t, st.a, a, "step %d (chat %d)", i, st.j)
		assert.Equal(t, st.late, late, "step %d (chat %d)", i, st.j)
	}
	assert.Equal(t, int64(6), l.got)
	assert.Equal(t, int64(6), l.next)

	// Any order of 1..200 leaves nothing missing and counts each once.
	var m senderLog
	perm := rand.Perm(200)
	// Keep displacements within the window, as a reordering server would.
	for i := 0; i+1 < len(perm); i += 2 {
		perm[i], perm[i+1] = min(perm[i], perm[i+1]), max(perm[i], perm[i+1])
	}
	order := make([]int64, 0, 200)
	for i := 0; i < 200; i += 10 {
		block := []int64{}
		for j := i; j < i+10; j++ {
			block = append(block, int64(j+1))
		}
		rand.Shuffle(len(block), func(a, b int) { block[a], block[b] = block[b], block[a] })
		order = append(order, block...)
	}
	for _, j := range order {
		a, _ := m.accept(j)
		require.Equal(t, arrFresh, a, "chat %d", j)
	}
	assert.Equal(t, int64(200), m.got)
	assert.Equal(t, int64(201), m.next)
	assert.Zero(t, m.window)
}

// TestReorderThreadedServer runs against a server that relays each chat
// from a goroutine of its own and delivers to the room's last member after
// a random delay, so that the last member sees chats out of the room's
// order: the run passes with exact totals and counts the reordering; with
// strict order it fails.
func TestReorderThreadedServer(t *testing.T) {
	checkGoroutines(t)
	s := newFakeServer(t, func() time.Duration { return time.Duration(rand.Int64N(int64(3 * time.Millisecond))) })
	cfg := tcpConfig(s.addr())
	cfg.Rooms, cfg.Users, cfg.Count = 5, 4, 20
	cfg.StrictOrder = false
	d := mustPass(t, cfg)
	assert.Equal(t, results.Counts{Sent: 400, Received: 1200, Total: 1600, ExpectedSent: 400, ExpectedTotal: 1600, Confirms: 400}, d.Counts)
	g := d.Integrity
	require.NotNil(t, g)
	assert.Zero(t, g.Lost+g.Duplicated+g.Corrupted)
	assert.Positive(t, g.Reordered, "with 400 chats, some reach the last member out of order")
	assert.Positive(t, g.ReceiversReordered)
	assert.Equal(t, int64(20), g.Receivers)
	assert.NotEmpty(t, g.FirstReordered)

	cfg.StrictOrder = true
	d2 := runExpectFailure(t, cfg)
	f := failure(d2, results.FailReordered)
	require.NotNil(t, f, "%+v", d2.Failures)
	assert.Equal(t, d2.Integrity.Reordered, f.Count)
}

// TestFanoutDelayedReceiver: a server that delivers every chat to its
// room's last member 20 ms after the others gives a spread of at least
// that, and the last arrival at least that long after the send.
func TestFanoutDelayedReceiver(t *testing.T) {
	checkGoroutines(t)
	const delay = 20 * time.Millisecond
	s := newFakeServer(t, func() time.Duration { return delay })
	cfg := tcpConfig(s.addr())
	cfg.Rooms, cfg.Users, cfg.Count = 2, 4, 5
	cfg.StrictOrder = false
	d := mustPass(t, cfg)
	first, last, spread := d.Latency[results.LatencyFanoutFirst], d.Latency[results.LatencyFanoutLast], d.Latency[results.LatencyFanoutSpread]
	require.NotNil(t, first)
	require.NotNil(t, last)
	require.NotNil(t, spread)
	assert.Equal(t, int64(40), first.Count, "one value per broadcast")
	assert.Equal(t, int64(40), last.Count)
	assert.Equal(t, int64(40), spread.Count)
	assert.GreaterOrEqual(t, last.Min, int64(delay), "the last receiver is the delayed one")
	assert.GreaterOrEqual(t, spread.P50, int64(delay/2))
	assert.Less(t, first.P50, int64(delay), "the first receivers are not delayed")
}

// outsider is a client that is not one of the run's users: it enters a
// room the run uses, and chats there or never reads.
type outsider struct {
	c  net.Conn
	rd *protocol.Reader
}

func dialOutsider(t *testing.T, addr, room, name string, rcvbuf int) *outsider {
	t.Helper()
	d := net.Dialer{}
	if rcvbuf > 0 {
		d.Control = func(_, _ string, rc syscall.RawConn) error {
			return rc.Control(func(fd uintptr) { setReceiveBuffer(fd, rcvbuf) })
		}
	}
	c, err := d.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	o := &outsider{c: c, rd: protocol.NewReader(bufio.NewReader(c), 0)}
	o.send(t, &protocol.Access{Type: protocol.Request, DefaultRoom: room, AppletVersion: results.MarkVersion,
		DocumentBase: "http://www.volano.com/chat.html", CodeBase: "http://chat.volano.net/vcclient"})
	o.await(t, protocol.IDAccess, protocol.Confirm)
	o.send(t, &protocol.EnterRoom{Type: protocol.Request, RoomName: room, UserName: name, Profile: "not one of the run's users"})
	o.await(t, protocol.IDEnterRoom, protocol.Confirm)
	return o
}

func (o *outsider) send(t *testing.T, p protocol.Packet) {
	b, err := p.AppendPacket(nil)
	require.NoError(t, err)
	_, err = o.c.Write(b)
	require.NoError(t, err)
}

func (o *outsider) await(t *testing.T, id protocol.ID, typ protocol.Type) {
	require.NoError(t, o.c.SetReadDeadline(time.Now().Add(10*time.Second)))
	for {
		f, err := o.rd.Next()
		require.NoError(t, err)
		if f.ID == id && f.Type == typ {
			return
		}
	}
}

// TestOutsideUsers: other users share the run's rooms. One enters Room1
// before the run, chats there once the run's chats flow, and leaves; one
// in Room2 never reads and disappears mid-run (as when the server closes
// it as a slow consumer, or it is kicked). The run passes with exact
// totals for its own users, and counts the others' traffic apart.
func TestOutsideUsers(t *testing.T) {
	checkGoroutines(t)
	s := startServer(t, server.Config{})
	addr := s.Addr().String()
	chatty := dialOutsider(t, addr, "Room1", "Visitor", 0)
	sleeper := dialOutsider(t, addr, "Room2", "Sleeper", 2048) // never reads again

	done := make(chan struct{})
	go func() {
		defer close(done)
		// Wait for the run's chats, then chat three times and leave.
		_ = chatty.c.SetReadDeadline(time.Now().Add(20 * time.Second))
		for {
			f, err := chatty.rd.Next()
			if err != nil {
				return
			}
			if isChatIndication(f) {
				break
			}
		}
		for i := 0; i < 3; i++ {
			b, _ := (&protocol.Chat{Type: protocol.Request, RoomName: "Room1", UserName: "Visitor", Text: "hello from outside"}).AppendPacket(nil)
			if _, err := chatty.c.Write(b); err != nil {
				return
			}
		}
		b, _ := (&protocol.ExitRoom{Type: protocol.Request, RoomName: "Room1", UserName: "Visitor"}).AppendPacket(nil)
		_, _ = chatty.c.Write(b)
		sleeper.c.Close()
		// Keep reading until the server closes (at the end of the test).
		for {
			if _, err := chatty.rd.Next(); err != nil {
				return
			}
		}
	}()

	cfg := tcpConfig(addr)
	cfg.Rooms, cfg.Users, cfg.Count = 3, 20, 100
	d := mustPass(t, cfg)
	assert.Equal(t, int64(3*20*100), d.Counts.Sent)
	assert.Equal(t, int64(3*20*100*19), d.Counts.Received)
	require.NotNil(t, d.Integrity)
	o := d.Integrity.Outside
	require.NotNil(t, o)
	assert.Equal(t, int64(3*20), o.Chats, "three chats, each seen by Room1's 20 users")
	assert.Equal(t, int64(40), o.Exited, "Visitor left Room1 and Sleeper's connection ended in Room2: 20 users saw each")
	chatty.c.Close()
	<-done
}
