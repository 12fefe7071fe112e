package swarm

import (
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/volanogo/volanogo/pkg/protocol"
)

// fakeServer is a VOLANO server for tests that behaves as servers other
// than volanogo's may: it relays each chat from a goroutine of its own,
// delivering to the room's last member after lastDelay(), so that the
// room's chats can reach that member out of order (the original Java
// server relays from several threads) and the fan-out has a known spread.
// It answers only what a turn-taking run needs. With partial set it is
// hostile: at the first chat it sends partial (a packet's beginning, never
// its end) to every connection, and relays nothing more.
type fakeServer struct {
	ln        net.Listener
	lastDelay func() time.Duration
	partial   []byte
	hostile   sync.Once

	mu    sync.Mutex
	rooms map[string][]*fakeConn
	conns []*fakeConn
	wg    sync.WaitGroup
}

type fakeConn struct {
	c    net.Conn
	wmu  sync.Mutex
	name string
	room string
}

func (c *fakeConn) write(b []byte) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, _ = c.c.Write(b)
}

func newFakeServer(t *testing.T, lastDelay func() time.Duration) *fakeServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := &fakeServer{ln: ln, lastDelay: lastDelay, rooms: map[string][]*fakeConn{}}
	s.wg.Add(1)
	go s.accept()
	t.Cleanup(func() {
		ln.Close()
		s.mu.Lock()
		for _, c := range s.conns {
			c.c.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
	})
	return s
}

func (s *fakeServer) addr() string { return s.ln.Addr().String() }

// sendPartial writes the partial packet to every connection, each from a
// goroutine of its own (a client that stops reading blocks its write
// until it closes).
func (s *fakeServer) sendPartial() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			c.write(s.partial)
		}()
	}
}

func (s *fakeServer) accept() {
	defer s.wg.Done()
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			return
		}
		c := &fakeConn{c: nc}
		s.mu.Lock()
		s.conns = append(s.conns, c)
		s.mu.Unlock()
		s.wg.Add(1)
		go s.serve(c)
	}
}

func (s *fakeServer) others(c *fakeConn) []*fakeConn {
	s.mu.Lock()
	defer s.mu.Unlock()
	var o []*fakeConn
	for _, m := range s.rooms[c.room] {
		if m != c {
			o = append(o, m)
		}
	}
	return o
}

func (s *fakeServer) leave(c *fakeConn) {
	s.mu.Lock()
	members := s.rooms[c.room]
	for i, m := range members {
		if m == c {
			s.rooms[c.room] = append(members[:i:i], members[i+1:]...)
			break
		}
	}
	s.mu.Unlock()
	b, _ := (&protocol.ExitRoom{Type: protocol.Indication, RoomName: c.room, UserName: c.name}).AppendPacket(nil)
	for _, m := range s.others(c) {
		m.write(b)
	}
}

func (s *fakeServer) serve(c *fakeConn) {
	defer s.wg.Done()
	defer c.c.Close()
	rd := protocol.NewReader(c.c, 0)
	for {
		f, err := rd.Next()
		if err != nil {
			if c.room != "" {
				s.leave(c)
			}
			return
		}
		p, err := f.Decode()
		if err != nil {
			return
		}
		switch p := p.(type) {
		case *protocol.Access:
			b, _ := (&protocol.Access{Type: protocol.Confirm, Result: protocol.AccessOK, Rooms: []string{}}).AppendPacket(nil)
			c.write(b)
		case *protocol.EnterRoom:
			s.mu.Lock()
			c.name, c.room = p.UserName, p.RoomName
			s.rooms[c.room] = append(s.rooms[c.room], c)
			var users []protocol.User
			for _, m := range s.rooms[c.room] {
				users = append(users, protocol.User{Name: m.name, Profile: "", Member: "false", Link: "false"})
			}
			s.mu.Unlock()
			ind, _ := (&protocol.EnterRoom{Type: protocol.Indication, RoomName: c.room, UserName: c.name, Member: "false", Link: "false"}).AppendPacket(nil)
			for _, m := range s.others(c) {
				m.write(ind)
			}
			b, _ := (&protocol.EnterRoom{Type: protocol.Confirm, RoomName: c.room, UserName: c.name, Result: protocol.EnterOK,
				RoomType: protocol.RoomNormal, Count: int32(len(users)), Users: users}).AppendPacket(nil)
			c.write(b)
		case *protocol.Chat:
			if s.partial != nil {
				s.hostile.Do(s.sendPartial)
				continue
			}
			ind, _ := (&protocol.Chat{Type: protocol.Indication, RoomName: c.room, UserName: c.name, Text: protocol.Trim(p.Text)}).AppendPacket(nil)
			conf, _ := (&protocol.Chat{Type: protocol.Confirm, RoomName: c.room}).AppendPacket(nil)
			others := s.others(c)
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				for i, m := range others {
					if i == len(others)-1 {
						time.Sleep(s.lastDelay())
					}
					m.write(ind)
				}
			}()
			c.write(conf)
		case *protocol.ExitRoom:
			s.leave(c)
			c.room = ""
		case *protocol.RoomList:
			b, _ := (&protocol.RoomList{Type: protocol.Confirm, Rooms: []string{}}).AppendPacket(nil)
			c.write(b)
		}
	}
}
