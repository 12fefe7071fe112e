//go:build linux

package floor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/volanogo/volanogo/internal/server"
	"github.com/volanogo/volanogo/pkg/protocol"
)

// fdReader reads a blocking socket.
type fdReader int32

func (r fdReader) Read(p []byte) (int, error) {
	n, err := unix.Read(int(r), p)
	switch {
	case err != nil:
		return 0, err
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

func decode(t *testing.T, b []byte) protocol.Packet {
	t.Helper()
	f, err := protocol.NewReader(bytes.NewReader(b), 1<<16).Next()
	require.NoError(t, err)
	p, err := f.Decode()
	require.NoError(t, err)
	return p
}

func TestScript(t *testing.T) {
	sc, err := newScript(150, 20, 3)
	require.NoError(t, err)
	assert.Equal(t, int64(3*19*MessageBytes), sc.chatIn)
	assert.Equal(t, int64(3*MessageBytes), sc.chatOut)
	i := 120*20 + 11 // Room121, Mark12
	assert.Equal(t, &protocol.ExitRoom{Type: protocol.Request, RoomName: "Room121", UserName: "Mark12"}, decode(t, sc.exitReq[i]))
	assert.Equal(t, &protocol.ExitRoom{Type: protocol.Indication, RoomName: "Room121", UserName: "Mark12"}, decode(t, sc.exitInd[i]))
	assert.Equal(t, &protocol.RoomList{Type: protocol.Request}, decode(t, sc.roomList))
	conf, ok := decode(t, sc.listConf).(*protocol.RoomList)
	require.True(t, ok)
	assert.Equal(t, protocol.Confirm, conf.Type)
	require.Len(t, conf.Rooms, roomListMax, "the server's cap")
	assert.Equal(t, "Room1", conf.Rooms[0])
	assert.Equal(t, "Room100", conf.Rooms[99])
	var at int64
	for u := 0; u < 20; u++ {
		assert.Equal(t, at, sc.exitAt[120*20+u], "user %d", u)
		at += int64(len(sc.exitInd[120*20+u]))
	}
	assert.Equal(t, sc.chatOut+int64(len(sc.exitReq[i])+len(sc.roomList)), sc.reqEnd(i))

	small, err := newScript(3, 2, 1)
	require.NoError(t, err)
	conf, ok = decode(t, small.listConf).(*protocol.RoomList)
	require.True(t, ok)
	assert.Equal(t, []string{"Room1", "Room2", "Room3"}, conf.Rooms)
}

// TestServerExits plays Mark's clients against the floor's server, one
// step at a time, and reads what the server sends with the protocol's
// reader: each user gets every chat of the others, then the ExitRoom
// indications of the users before it, then (once it has left) its
// RoomList confirm; the server closes every connection after its client
// has, and then stops by itself.
func TestServerExits(t *testing.T) {
	for _, engine := range []string{EngineEpoll, EngineURing} {
		t.Run(engine, func(t *testing.T) {
			const rooms, users, count = 2, 3, 2
			l, addr, err := listen()
			require.NoError(t, err)
			defer unix.Close(l)
			p := &pairs{}
			defer p.close()
			require.NoError(t, p.connect(context.Background(), l, addr, rooms*users))
			tv := unix.NsecToTimeval((10 * time.Second).Nanoseconds())
			for _, fd := range p.cli {
				require.NoError(t, unix.SetsockoptTimeval(int(fd), unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv))
			}
			sc, err := newScript(rooms, users, count)
			require.NoError(t, err)
			var done atomic.Bool
			ready := make(chan error, 1)
			res := make(chan sideResult, 1)
			go func() { res <- serve(engine, p.srv, sc, &done, ready) }()
			if err := <-ready; err != nil {
				<-res
				if errors.Is(err, errURingUnavailable) {
					t.Skip(err)
				}
				require.NoError(t, err)
			}
			defer func() {
				done.Store(true)
				<-res
			}()
			write := func(i int, b []byte) {
				_, err := unix.Write(int(p.cli[i]), b)
				require.NoError(t, err)
			}
			chat := bytes.Repeat([]byte{'x'}, MessageBytes)
			for r := 0; r < rooms; r++ {
				for m := 0; m < count*users; m++ {
					from := r*users + m%users
					write(from, chat)
					for j := r * users; j < (r+1)*users; j++ {
						if j == from {
							continue
						}
						got := make([]byte, MessageBytes)
						_, err := io.ReadFull(fdReader(p.cli[j]), got)
						require.NoError(t, err, "chat %d of room %d to connection %d", m, r, j)
					}
				}
				rd := make([]*protocol.Reader, users)
				for u := range rd {
					rd[u] = protocol.NewReader(fdReader(p.cli[r*users+u]), 1<<16)
				}
				for u := 0; u < users; u++ {
					i := r*users + u
					write(i, sc.exitReq[i])
					write(i, sc.roomList)
					for k := u + 1; k < users; k++ {
						f, err := rd[k].Next()
						require.NoError(t, err)
						pk, err := f.Decode()
						require.NoError(t, err)
						assert.Equal(t, &protocol.ExitRoom{Type: protocol.Indication, RoomName: roomName(r), UserName: userName(u)}, pk,
							"to user %d of room %d", k, r)
					}
					f, err := rd[u].Next()
					require.NoError(t, err)
					pk, err := f.Decode()
					require.NoError(t, err)
					assert.Equal(t, &protocol.RoomList{Type: protocol.Confirm, Rooms: []string{"Room1", "Room2"}}, pk)
					require.NoError(t, unix.Close(int(p.cli[i])))
					p.cli[i] = -1
				}
			}
			select {
			case r := <-res:
				res <- r
				require.NoError(t, r.err)
				assert.Positive(t, r.cpu)
			case <-time.After(10 * time.Second):
				t.Fatal("the server did not stop once every connection had closed")
			}
			for i, fd := range p.srv {
				assert.Equal(t, int32(-1), fd, "connection %d", i)
			}
		})
	}
}

// TestClientExits checks what the floor's clients send, with a server
// written on the protocol's reader: count chats from each user, then each
// room's ExitRoom and RoomList requests in Mark's order (user 1 first,
// user k once k-1 users have left), and each client closes on its
// RoomList confirm.
func TestClientExits(t *testing.T) {
	const rooms, users, count = 2, 3, 2
	l, addr, err := listen()
	require.NoError(t, err)
	defer unix.Close(l)
	p := &pairs{}
	defer p.close()
	require.NoError(t, p.connect(context.Background(), l, addr, rooms*users))
	sc, err := newScript(rooms, users, count)
	require.NoError(t, err)
	var done atomic.Bool
	res := make(chan sideResult, 1)
	go func() { res <- clients(p.cli, count, sc, 10*time.Second, &done) }()
	defer func() {
		done.Store(true)
		<-res
	}()
	tv := unix.NsecToTimeval((10 * time.Second).Nanoseconds())
	for _, fd := range p.srv {
		require.NoError(t, unix.SetsockoptTimeval(int(fd), unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv))
	}
	write := func(i int, b []byte) {
		_, err := unix.Write(int(p.srv[i]), b)
		require.NoError(t, err)
	}
	var order []string
	for r := 0; r < rooms; r++ {
		for m := 0; m < count*users; m++ {
			from := r*users + m%users
			got := make([]byte, MessageBytes)
			_, err := io.ReadFull(fdReader(p.srv[from]), got)
			require.NoError(t, err, "chat %d of room %d", m, r)
			for j := r * users; j < (r+1)*users; j++ {
				if j != from {
					write(j, got)
				}
			}
		}
		for u := 0; u < users; u++ {
			i := r*users + u
			rd := protocol.NewReader(fdReader(p.srv[i]), 1<<16)
			for _, want := range []protocol.Packet{
				&protocol.ExitRoom{Type: protocol.Request, RoomName: roomName(r), UserName: userName(u)},
				&protocol.RoomList{Type: protocol.Request},
			} {
				f, err := rd.Next()
				require.NoError(t, err, "user %d of room %d", u, r)
				pk, err := f.Decode()
				require.NoError(t, err)
				assert.Equal(t, want, pk)
			}
			order = append(order, fmt.Sprintf("%d.%d", r, u))
			for k := u + 1; k < users; k++ {
				write(r*users+k, sc.exitInd[i])
			}
			write(i, sc.listConf)
			_, err := rd.Next()
			assert.ErrorIs(t, err, io.EOF, "user %d of room %d closes on its room list", u, r)
		}
	}
	assert.Equal(t, []string{"0.0", "0.1", "0.2", "1.0", "1.1", "1.2"}, order)
	select {
	case r := <-res:
		res <- r
		require.NoError(t, r.err)
		assert.Positive(t, r.elapsed)
	case <-time.After(10 * time.Second):
		t.Fatal("the clients did not end once every connection had closed")
	}
	for i, fd := range p.cli {
		assert.Equal(t, int32(-1), fd, "connection %d", i)
	}
}

// TestRoomListAsServe: the floor's room list is bounded as volanogo
// serve's is by default.
func TestRoomListAsServe(t *testing.T) {
	assert.Equal(t, server.DefaultRoomListMax, roomListMax)
	assert.Equal(t, server.RoomListMaxBytes, roomListMaxBytes)
}
