package server

import (
	"bytes"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/volanogo/volanogo/pkg/protocol"
)

// room is a public chat room.
type room struct {
	name         string
	nameRaw      []byte // name in modified UTF-8, as it travels
	permanent    bool
	documentBase string // the page whose Access created a dynamic room

	mu      sync.Mutex // guards the fields below; taken after Server.mu, before conn.mu
	members []*member  // in the order they entered
	guests  int        // connections whose Access named this room
	removed bool
}

// member is one user in one room.
type member struct {
	c       *conn
	r       *room
	name    string
	nameRaw []byte
	profile string
}

func mustEncode(s string) []byte {
	b, err := protocol.EncodeString(s)
	if err != nil {
		return []byte(s)
	}
	return b
}

// jlen is Java's String.length() of s: UTF-16 units.
func jlen(s string) int {
	n := 0
	for len(s) > 0 {
		r, size := utf8.DecodeRuneInString(s)
		s = s[size:]
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return n
}

func (s *Server) addRoomLocked(name string, permanent bool, documentBase string) *room {
	r := &room{name: name, nameRaw: mustEncode(name), permanent: permanent, documentBase: documentBase}
	s.rooms[name] = r
	s.roomOrder = append(s.roomOrder, r)
	s.counters.rooms.Add(1)
	return r
}

// guestRoom finds or creates the room an Access names, and counts the
// connection as its guest so that it stays while the connection does.
func (s *Server) guestRoom(name, documentBase string) *room {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.rooms[name]
	if r == nil {
		r = s.addRoomLocked(name, false, documentBase)
	}
	r.mu.Lock()
	r.guests++
	r.mu.Unlock()
	return r
}

func (s *Server) unguest(r *room) {
	r.mu.Lock()
	r.guests--
	empty := len(r.members) == 0 && r.guests == 0
	r.mu.Unlock()
	if empty {
		s.maybeRemove(r)
	}
}

// maybeRemove removes a dynamic room that has neither users nor guests.
func (s *Server) maybeRemove(r *room) {
	if r.permanent {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.removed || len(r.members) > 0 || r.guests > 0 {
		return
	}
	r.removed = true
	delete(s.rooms, r.name)
	for i, o := range s.roomOrder {
		if o == r {
			s.roomOrder = append(s.roomOrder[:i], s.roomOrder[i+1:]...)
			break
		}
	}
	s.counters.rooms.Add(-1)
}

func (s *Server) findRoom(name string) *room {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rooms[name]
}

// roomNames lists the public rooms in creation order whose lower-cased
// name contains the lower-cased filter.
func (s *Server) roomNames(filter string) []string {
	filter = strings.ToLower(filter)
	s.mu.Lock()
	defer s.mu.Unlock()
	names := make([]string, 0, len(s.roomOrder))
	for _, r := range s.roomOrder {
		if filter == "" || strings.Contains(strings.ToLower(r.name), filter) {
			names = append(names, r.name)
		}
	}
	return names
}

// memberOf finds the connection's membership of the room whose name is
// raw (modified UTF-8), without allocating.
func (c *conn) memberOf(raw []byte) *member {
	for _, m := range c.members {
		if bytes.Equal(m.r.nameRaw, raw) {
			return m
		}
	}
	return nil
}

func (c *conn) memberOfName(name string) *member {
	for _, m := range c.members {
		if m.r.name == name {
			return m
		}
	}
	return nil
}

// findLocked finds a user of the room by name; r.mu must be held.
func (r *room) findLocked(name string) *member {
	for _, m := range r.members {
		if m.name == name {
			return m
		}
	}
	return nil
}

func (r *room) usersLocked() []protocol.User {
	users := make([]protocol.User, len(r.members))
	for i, m := range r.members {
		users[i] = protocol.User{Name: m.name, Profile: m.profile, Host: "", Member: "false", Link: "false"}
	}
	return users
}

// private is a private chat session between two users.
type private struct {
	id    int32
	a, b  *conn
	aName string
	bName string
}

func (p *private) other(c *conn) (*conn, string, bool) {
	switch c {
	case p.a:
		return p.b, p.aName, true
	case p.b:
		return p.a, p.bName, true
	}
	return nil, "", false
}
