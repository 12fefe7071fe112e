package server

import (
	"bytes"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/volanogo/volanogo/pkg/protocol"
)

// room is a public chat room.
//
// What a chat touches comes first: the lock, the receivers and the name
// on the first line, the name's bytes (when short) on the second. The
// room is 192 bytes (a size class of whole cache lines), so that these
// do not straddle two lines: in a paced run each chat finds its room out
// of the cache.
type room struct {
	mu sync.Mutex // guards the fields below it; taken after Server.mu, before conn.mu
	// conns are the members' connections, in the order they entered:
	// the relay reads these, one cache miss fewer per receiver than
	// through members (at 15 rooms, the load of member.c was more than
	// half of handleChat's own time in a perf profile)
	conns   []*conn
	nameRaw []byte // name in modified UTF-8, as it travels (in raw when it fits)
	guests  int    // connections whose Access named this room
	raw     [32]byte
	touched uintptr   // handleChat's fetch of the receivers' lines (unused)
	members []*member // in the order they entered
	removed bool

	name         string
	lower        string // name lower-cased, for RoomList filters
	documentBase string // the page whose Access created a dynamic room
	permanent    bool
}

// member is one user in one room. What a chat from it touches (its room
// and its name as it travels) comes first, the name's bytes with them
// when the name is short: one allocation (96 bytes, what a member and
// its encoded name took apart) and one cache miss fewer per chat.
type member struct {
	r       *room
	nameRaw []byte // name in modified UTF-8 (in raw when it fits)
	raw     [24]byte
	c       *conn
	name    string
	profile string
}

func newMember(c *conn, r *room, name, profile string) *member {
	m := &member{c: c, r: r, name: name, profile: profile}
	m.nameRaw = mustEncode(name)
	if n := len(m.nameRaw); n <= len(m.raw) {
		copy(m.raw[:], m.nameRaw)
		m.nameRaw = m.raw[:n:n]
	}
	return m
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
	r := &room{name: name, lower: strings.ToLower(name), permanent: permanent, documentBase: documentBase}
	r.nameRaw = mustEncode(name)
	if n := len(r.nameRaw); n <= len(r.raw) {
		copy(r.raw[:], r.nameRaw)
		r.nameRaw = r.raw[:n:n]
	}
	s.rooms[name] = r
	s.roomOrder = append(s.roomOrder, r)
	if !permanent {
		s.dynamic++
	}
	s.roomsChangedLocked(len(s.roomOrder) - 1)
	s.counters.rooms.Add(1)
	return r
}

// roomsChangedLocked forgets the cached room lists after a room was added
// or removed at index i of roomOrder: the filtered lists' index always,
// the bounded list only when the change was within its reach.
func (s *Server) roomsChangedLocked(i int) {
	s.index = nil
	if i < s.cfg.RoomListMax {
		s.list = nil
	}
}

// guestRoom finds or creates the room an Access names, and counts the
// connection as its guest so that it stays while the connection does. It
// returns nil when the room would be a new dynamic room past MaxRooms.
func (s *Server) guestRoom(name, documentBase string) *room {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.rooms[name]
	if r == nil {
		if s.cfg.MaxRooms > 0 && s.dynamic >= s.cfg.MaxRooms {
			return nil
		}
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
			// O(rooms) pointer moves: about a microsecond per thousand rooms.
			s.roomOrder = append(s.roomOrder[:i], s.roomOrder[i+1:]...)
			s.roomsChangedLocked(i)
			break
		}
	}
	s.dynamic--
	s.counters.rooms.Add(-1)
}

func (s *Server) findRoom(name string) *room {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rooms[name]
}

// roomList is a bounded list of room names, shared read-only.
type roomList struct {
	names []string
	bytes int
	// confirm is the RoomList confirm of the list (filter ""), encoded on
	// its first use: Mark's every exit asks for it.
	confirm []byte
}

// add appends a room's name unless the list is full (RoomListMax names or
// RoomListMaxBytes of encoded names); false when full.
func (l *roomList) add(r *room, max int) bool {
	n := 2 + len(r.nameRaw)
	if len(l.names) >= max || l.bytes+n > RoomListMaxBytes {
		return false
	}
	l.names = append(l.names, r.name)
	l.bytes += n
	return true
}

// listLocked is the unfiltered list, built when stale; s.mu must be held.
func (s *Server) listLocked() *roomList {
	if s.list == nil {
		l := &roomList{}
		for _, r := range s.roomOrder {
			if !l.add(r, s.cfg.RoomListMax) {
				break
			}
		}
		s.list = l
	}
	return s.list
}

// roomListConfirm is the RoomList confirm of the unfiltered list, encoded
// once per change of the list and shared read-only (nil if it does not
// encode).
func (s *Server) roomListConfirm() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.listLocked()
	if l.confirm == nil {
		b, err := (&protocol.RoomList{Type: protocol.Confirm, Rooms: l.names}).AppendPacket(nil)
		if err != nil {
			return nil
		}
		l.confirm = b
	}
	return l.confirm
}

// roomNames lists the public rooms in creation order whose lower-cased
// name contains the lower-cased filter, at most RoomListMax names and
// RoomListMaxBytes of them, and the bytes of names searched for them.
// The unfiltered list (every Access confirm) is cached until a change
// within its reach; a filtered one searches an index of the rooms built
// once per change, outside the server's lock.
func (s *Server) roomNames(filter string) ([]string, int) {
	s.mu.Lock()
	if filter == "" {
		names := s.listLocked().names
		s.mu.Unlock()
		return names, 0
	}
	x := s.index
	if x == nil {
		x = &roomIndex{rooms: append([]*room(nil), s.roomOrder...)}
		s.index = x
	}
	s.mu.Unlock()
	return x.find(strings.ToLower(filter), s.cfg.RoomListMax)
}

// roomIndex is the filtered RoomLists' search of the rooms as they were
// at one moment: their lower-cased names in creation order, one after
// another in one string, searched with strings.Index (vector
// instructions) rather than name by name, whose cache misses on 20,000
// rooms cost about a millisecond per list (BenchmarkRoomNames). Built on
// its first search, by one searcher while the others wait, outside the
// server's lock; immutable after.
type roomIndex struct {
	once   sync.Once
	rooms  []*room
	hay    string     // the names, lower-cased, each followed by a newline
	starts []int32    // where each room's name begins in hay
	counts [256]int32 // how often each byte occurs in hay
}

func (x *roomIndex) build() {
	n := 0
	for _, r := range x.rooms {
		n += len(r.lower) + 1
	}
	var b strings.Builder
	b.Grow(n)
	x.starts = make([]int32, len(x.rooms))
	for i, r := range x.rooms {
		x.starts[i] = int32(b.Len())
		b.WriteString(r.lower)
		b.WriteByte('\n')
	}
	x.hay = b.String()
	for i := 0; i < len(x.hay); i++ {
		x.counts[x.hay[i]]++
	}
}

// anchor is where in filter to start the search: at its byte rarest in
// the names. strings.Index hops from one occurrence of its needle's first
// byte to the next, and only turns to its vector search once more than
// one in eight bytes is a false start: with names that all begin "room",
// a filter "room1999" started at its "r" took a millisecond at 20,000
// rooms, started at a "9" a tenth of that.
func (x *roomIndex) anchor(filter string) int {
	j := 0
	for i := 1; i < len(filter); i++ {
		if x.counts[filter[i]] < x.counts[filter[j]] {
			j = i
		}
	}
	return j
}

// find lists the rooms whose name contains filter (lower-cased), in
// creation order, bounded as a roomList is, and says how many bytes of
// the index it searched. A match across two names (a filter with a
// newline) is not one.
func (x *roomIndex) find(filter string, max int) ([]string, int) {
	x.once.Do(x.build)
	l := &roomList{}
	j := x.anchor(filter)
	head, tail := filter[:j], filter[j:]
	from := j // where tail may begin
	for from < len(x.hay) {
		i := strings.Index(x.hay[from:], tail)
		if i < 0 {
			from = len(x.hay)
			break
		}
		at := from + i - j
		if x.hay[at:at+j] != head {
			from += i + 1
			continue
		}
		// the room whose name holds the match's first byte
		k := sort.Search(len(x.starts), func(n int) bool { return int(x.starts[n]) > at }) - 1
		r := x.rooms[k]
		end := int(x.starts[k]) + len(r.lower)
		// the next match is in a later name: this one's other matches
		// are in it too, or also run past its end
		from = end + 1 + j
		if at+len(filter) <= end && !l.add(r, max) {
			break
		}
	}
	return l.names, min(from, len(x.hay))
}

// memberOf finds the connection's membership of the room whose name is
// raw (modified UTF-8), without allocating.
func (c *conn) memberOf(raw []byte) *member {
	if c.byRoom != nil {
		return c.byRoom[string(raw)]
	}
	// the usual case, one room: no map, nor the slice's array
	if m := c.first; m != nil && bytes.Equal(m.r.nameRaw, raw) {
		return m
	}
	return nil
}

func (c *conn) memberOfName(name string) *member {
	if len(c.members) == 0 {
		return nil
	}
	return c.memberOf(mustEncode(name))
}

// addMember and removeMember keep c.members (in the order entered),
// c.first and, once a connection has been in more than one room,
// c.byRoom (by room, so that a lookup does not grow with the rooms one
// client has entered).
func (c *conn) addMember(m *member) {
	c.members = append(c.members, m)
	c.first = c.members[0]
	if len(c.members) < 2 {
		return
	}
	if c.byRoom == nil {
		c.byRoom = make(map[string]*member, 2)
		for _, o := range c.members[:len(c.members)-1] {
			c.byRoom[string(o.r.nameRaw)] = o
		}
	}
	c.byRoom[string(m.r.nameRaw)] = m
}

func (c *conn) removeMember(m *member) {
	for i := len(c.members) - 1; i >= 0; i-- {
		if c.members[i] == m {
			c.members = append(c.members[:i], c.members[i+1:]...)
			break
		}
	}
	c.first = nil
	if len(c.members) > 0 {
		c.first = c.members[0]
	}
	delete(c.byRoom, string(m.r.nameRaw))
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

// private is a private chat session between two users; a opened it.
// Its fields do not change.
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
