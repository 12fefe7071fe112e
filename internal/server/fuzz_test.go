package server

import (
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volanogo/volanogo/pkg/protocol"
)

// FuzzServerInput sends arbitrary bytes after a valid Access and requires
// that the server survives them: whatever happens to that connection, a
// new one is still served. The seeds are the captured client streams and a
// few hand-made packets.
func FuzzServerInput(f *testing.F) {
	for _, build := range []string{"stock", "nodelay"} {
		for _, conn := range []string{"conn001", "conn002", "conn003"} {
			var stream []byte
			for _, ev := range readCaptureFile(f, filepath.Join("..", "..", "testdata", "captures", build, conn+"-c2s.hex"), conn, true) {
				stream = append(stream, ev.data...)
			}
			f.Add(stream[180:]) // after the captured Access
		}
	}
	for _, p := range []protocol.Packet{
		&protocol.EnterRoom{Type: protocol.Request, Profile: "p", RoomName: "F", UserName: "u"},
		&protocol.EnterPrivate{Type: protocol.Request, RoomName: "F", FromName: "u", ToName: "u"},
		&protocol.Chat{Type: protocol.Request, RoomID: 1, UserName: "u", Text: "x"},
		&protocol.Kick{Type: protocol.Request, RoomName: "F", UserName: "u", Method: protocol.KickBan},
	} {
		b, err := p.AppendPacket(nil)
		require.NoError(f, err)
		f.Add(b)
	}
	f.Add([]byte{0, 0xce, 0, 0, 0, 4, 0xff, 0xff})

	s := startServer(f, Config{Rooms: []string{"F"}})
	access, err := markAccess("F").AppendPacket(nil)
	require.NoError(f, err)
	f.Fuzz(func(t *testing.T, in []byte) {
		nc, err := net.Dial("tcp", s.Addr().String())
		require.NoError(t, err)
		defer nc.Close()
		_ = nc.SetDeadline(time.Now().Add(2 * time.Second))
		_, _ = nc.Write(append(append([]byte(nil), access...), in...))
		// take whatever comes for a moment, then hang up
		_ = nc.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
		buf := make([]byte, 4096)
		for {
			if _, err := nc.Read(buf); err != nil {
				break
			}
		}
		nc.Close()

		c := dial(t, s)
		c.access("")
		c.send(&protocol.RoomList{Type: protocol.Request})
		rl, ok := c.expect().(*protocol.RoomList)
		require.True(t, ok)
		assert.Contains(t, rl.Rooms, "F")
		c.c.Close()
	})
}
