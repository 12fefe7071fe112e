package swarm

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volanogo/volanogo/internal/results"
	"github.com/volanogo/volanogo/internal/server"
	"github.com/volanogo/volanogo/pkg/protocol"
)

// startHook is an observer that runs before just before the timed phase
// (every user is in its room then).
type startHook struct {
	observer
	before func()
}

func (o *startHook) Start(ctx context.Context) (time.Time, error) {
	o.before()
	return o.observer.Start(ctx)
}

// privateVisit is what an outside user of Room1 does to Mark3 once the
// run's users are in: a whisper, a beep, a private session with one chat,
// closed. The packets reach Mark3 as the timed phase begins.
func privateVisit(t *testing.T, o *outsider) {
	o.send(t, &protocol.Whisper{Type: protocol.Request, RoomName: "Room1", FromName: "Visitor", ToName: "Mark3", Text: "psst"})
	o.send(t, &protocol.Beep{Type: protocol.Request, RoomName: "Room1", FromName: "Visitor", ToName: "Mark3"})
	o.send(t, &protocol.EnterPrivate{Type: protocol.Request, RoomName: "Room1", FromName: "Visitor", ToName: "Mark3"})
	require.NoError(t, o.c.SetReadDeadline(time.Now().Add(10*time.Second)))
	var id int32
	for id == 0 {
		f, err := o.rd.Next()
		require.NoError(t, err)
		if f.ID == protocol.IDEnterPrivate && f.Type == protocol.Confirm {
			p, err := f.Decode()
			require.NoError(t, err)
			id = p.(*protocol.EnterPrivate).RoomID
		}
	}
	o.send(t, &protocol.Chat{Type: protocol.Request, RoomID: id, UserName: "Visitor", Text: "just between us"})
	o.send(t, &protocol.ExitPrivate{Type: protocol.Request, RoomID: id, FromName: "Visitor"})
	// A round trip: the server has handled all of the above.
	o.send(t, &protocol.RoomList{Type: protocol.Request})
	o.await(t, protocol.IDRoomList, protocol.Confirm)
	// Read on (the run's chats) until the test ends.
	go func() {
		_ = o.c.SetReadDeadline(time.Time{})
		for {
			if _, err := o.rd.Next(); err != nil {
				return
			}
		}
	}()
}

// TestOutsidePackets: an outside user whispers to one of the run's users,
// beeps it and opens a private session with it. Each is counted apart and
// the run passes (it failed with "unexpected Whisper indication"); with
// Strict it fails, naming the packet and its sender.
func TestOutsidePackets(t *testing.T) {
	checkGoroutines(t)
	for _, strict := range []bool{false, true} {
		s := startServer(t, server.Config{})
		addr := s.Addr().String()
		cfg := tcpConfig(addr)
		cfg.Rooms, cfg.Users, cfg.Count, cfg.Strict = 1, 4, 20, strict
		var visitor *outsider
		obs := &startHook{before: func() {
			visitor = dialOutsider(t, addr, "Room1", "Visitor", 0)
			privateVisit(t, visitor)
		}}
		d := runWith(t, context.Background(), cfg, obs)
		assert.Equal(t, int64(4*20), d.Counts.Sent)
		assert.Equal(t, int64(4*20*3), d.Counts.Received)
		require.NotNil(t, d.Integrity)
		o := d.Integrity.Outside
		require.NotNil(t, o)
		assert.Equal(t, results.Outside{Entered: 4, Whispers: 1, Beeps: 1, PrivateEntered: 1, PrivateChats: 1, PrivateExited: 1}, *o)
		if !strict {
			assert.True(t, d.Passed, "%+v", d.Failures)
			continue
		}
		assert.False(t, d.Passed)
		assert.Equal(t, []string{results.FailOutside}, failureKinds(d))
		f := failure(d, results.FailOutside)
		assert.Equal(t, int64(9), f.Count, "4 entries, a whisper, a beep, a session opened, its chat and its end")
		assert.Regexp(t, `^Mark\d in Room1: EnterRoom indication from outside the run \(from "Visitor"\)$`, f.Example)
		visitor.c.Close()
	}
}

// TestOutsideOther: packets of known kinds that no run asks for (a
// UserList confirm, a Kick, a Chat request) are counted as other, the
// first named; a packet of an unknown id still fails the user (the
// stream cannot be followed past it).
func TestOutsideOther(t *testing.T) {
	checkGoroutines(t)
	s := startServer(t, server.Config{})
	var injected atomic.Bool
	extra := func(p protocol.Packet) []byte {
		b, err := p.AppendPacket(nil)
		require.NoError(t, err)
		return b
	}
	userList := extra(&protocol.UserList{Type: protocol.Confirm, RoomName: "Room9", Result: protocol.UserListNoSuchRoom})
	kick := extra(&protocol.Kick{Type: protocol.Indication, RoomName: "Room1", UserName: "Mark3", Method: 1})
	chatRequest := extra(&protocol.Chat{Type: protocol.Request, RoomName: "Room1", UserName: "Mark9", Text: "x"})
	p := newProxy(t, s.Addr().String(), func(conn int, f protocol.Frame) [][]byte {
		if conn == 2 && isChatIndication(f) && injected.CompareAndSwap(false, true) {
			return [][]byte{userList, kick, chatRequest, copyRaw(f)}
		}
		return [][]byte{copyRaw(f)}
	})
	cfg := tcpConfig(p.addr())
	cfg.Rooms, cfg.Users, cfg.Count = 1, 4, 5
	d := mustPass(t, cfg)
	require.NotNil(t, d.Integrity)
	require.NotNil(t, d.Integrity.Outside)
	assert.Equal(t, results.Outside{Other: 3, FirstOther: "Mark3 in Room1: UserList confirm"}, *d.Integrity.Outside)

	unknown := []byte{0x01, 0x2c, 0, 0, 0, 2} // id 300, an indication
	injected.Store(false)
	p2 := newProxy(t, s.Addr().String(), func(conn int, f protocol.Frame) [][]byte {
		if conn == 2 && isChatIndication(f) && injected.CompareAndSwap(false, true) {
			return [][]byte{unknown}
		}
		return [][]byte{copyRaw(f)}
	})
	cfg.Target.Addr = p2.addr()
	d = runExpectFailure(t, cfg)
	assert.Equal(t, results.FailProtocol, failureKinds(d)[0], "%+v", d.Failures)
}

// TestStreamableErrorQuoted: a StreamableError fails the run (as Mark
// counts it) with the server's text quoted: a terminal that shows the
// summary is not driven by escape sequences in it.
func TestStreamableErrorQuoted(t *testing.T) {
	checkGoroutines(t)
	s := startServer(t, server.Config{})
	var injected atomic.Bool
	se, err := (&protocol.StreamableError{Type: protocol.Request, Text: "java.lang.Error: \x1b]0;owned\x07\x1b[2J"}).AppendPacket(nil)
	require.NoError(t, err)
	p := newProxy(t, s.Addr().String(), func(conn int, f protocol.Frame) [][]byte {
		if conn == 2 && isChatIndication(f) && injected.CompareAndSwap(false, true) {
			return [][]byte{se, copyRaw(f)}
		}
		return [][]byte{copyRaw(f)}
	})
	cfg := tcpConfig(p.addr())
	cfg.Rooms, cfg.Users, cfg.Count = 1, 4, 5
	d := runExpectFailure(t, cfg)
	f := failure(d, results.FailServerError)
	require.NotNil(t, f, "%+v", d.Failures)
	assert.Equal(t, `Mark3 in Room1: StreamableError: "java.lang.Error: \x1b]0;owned\a\x1b[2J"`, f.Example)
	assert.Equal(t, int64(4*5), d.Counts.Sent, "the run goes on")
}
