package server

import (
	"math"
	"net/url"
	"strings"
	"unicode"
	"unsafe"

	"github.com/volanogo/volanogo/pkg/protocol"
)

// handle dispatches one packet read from a TCP stream. A chat from a
// user who has passed Access takes the zero-allocation path; every other
// packet is decoded.
func (c *conn) handle(f protocol.Frame) {
	if f.ID == protocol.IDChat && c.accessed {
		c.handleChat(f.Body)
		return
	}
	if f.ID == protocol.IDEnterPrivate && c.accessed && c.privateFull() {
		// refused before decoding: a flood of them allocates nothing
		c.s.refuseRequest(c, ReasonMaxPrivate)
		return
	}
	p, err := f.Decode()
	if err != nil {
		c.closeFor(ReasonProtocol, err)
		return
	}
	c.handlePacket(p)
}

// handlePacket dispatches one decoded packet from c. Chats after Access
// never come here: both transports hand them to handleChat undecoded.
func (c *conn) handlePacket(p protocol.Packet) {
	s := c.s
	if !c.accessed {
		switch p := p.(type) {
		case *protocol.Access:
			c.handleAccess(p, nil)
		case *protocol.PasswordAccess:
			c.handleAccess(&p.Access, p)
		default:
			c.close(ReasonFirstPacket)
		}
		return
	}
	switch p := p.(type) {
	case *protocol.Access, *protocol.PasswordAccess:
		c.close(ReasonSecondAccess)
	case *protocol.CreateRooms:
		c.close(ReasonNotAllowed)
	case *protocol.EnterRoom:
		s.enterRoom(c, p)
	case *protocol.ExitRoom:
		if m := c.memberOfName(p.RoomName); m != nil {
			s.exitRoom(c, m)
		}
	case *protocol.RoomList:
		if p.Filter == "" {
			// Mark's request, one per exit: the confirm is encoded once
			// per change of the list.
			if b := s.roomListConfirm(); b != nil {
				c.deliver(c, b)
				s.counters.out(protocol.IDRoomList, 1, len(b))
				return
			}
		}
		names, searched := s.roomNames(p.Filter)
		c.reply(&protocol.RoomList{Type: protocol.Confirm, Filter: p.Filter, Rooms: names})
		c.chargeSearch(searched)
	case *protocol.UserList:
		s.userList(c, p)
	case *protocol.Whisper:
		s.whisper(c, p)
	case *protocol.Beep:
		s.beep(c, p)
	case *protocol.EnterPrivate:
		s.enterPrivate(c, p)
	case *protocol.ExitPrivate:
		s.exitPrivate(c, p.RoomID)
	default:
		// Ping responses, Authenticate with authentication off, Kick from a
		// user who is not a monitor, and the admin port's packets are read
		// and ignored, as the original does.
	}
}

// deliver sends b to o from a handler of c (on c's reader: on the
// io_uring engine, c's loop). On the io_uring engine it joins the loop's
// round like a chat's (queueSend): entries, exits and replies are sent
// with the round's other sends, one send per receiver, submitted
// together, rather than a send system call each (at 475 rooms of Mark,
// these were most of the server's sendto calls). Elsewhere it is o.send.
func (c *conn) deliver(o *conn, b []byte) {
	if c.eng != nil {
		c.eng.deliver(o, b)
		return
	}
	o.send(b)
}

// reply sends one packet to c.
func (c *conn) reply(p protocol.Packet) {
	b, err := p.AppendPacket(c.scratch[:0])
	if err != nil {
		c.s.log.Warn("encode reply", "packet", p.PacketID(), "err", err)
		return
	}
	c.deliver(c, b)
	c.s.counters.out(p.PacketID(), 1, len(b))
	c.keepScratch(b)
}

// maxScratch is the largest scratch buffer a connection keeps between
// packets: enough for a chat's indication and confirm. A larger one (an
// EnterRoom confirm listing 20 users) is dropped after use, since it would
// otherwise cost its size on every one of thousands of idle connections.
const maxScratch = 512

func (c *conn) keepScratch(b []byte) {
	if cap(b) <= maxScratch {
		c.scratch = b[:0]
	} else {
		c.scratch = nil
	}
}

func (c *conn) sendPing() {
	c.reply(&protocol.Ping{Type: protocol.Request})
}

// handleAccess answers the first packet; pw is set for a PasswordAccess,
// which is answered in kind (no member or password support).
func (c *conn) handleAccess(a *protocol.Access, pw *protocol.PasswordAccess) {
	s := c.s
	c.accessed = true
	c.status.Or(connAdmitted)
	result := protocol.AccessOK
	switch {
	case !s.versions[a.AppletVersion]:
		result = protocol.AccessVersionDenied
	case !documentAllowed(a.DocumentBase):
		result = protocol.AccessDocumentDenied
	}
	var rooms []string
	if result == protocol.AccessOK {
		if name := protocol.Trim(a.DefaultRoom); name != "" && jlen(name) <= s.cfg.MaxRoomName {
			// Past --max-rooms the room is not created, as the original
			// does with dynamic rooms turned off (room.nodynamic): the
			// Access is still accepted, and entering the room is answered
			// NO_SUCH_ROOM.
			if c.guestOf = s.guestRoom(name, a.DocumentBase); c.guestOf == nil {
				s.refuseRequest(c, ReasonMaxRooms)
			}
		}
		rooms, _ = s.roomNames("")
	}
	conf := protocol.Access{Type: protocol.Confirm, Result: int32(result), Rooms: rooms}
	if pw != nil {
		c.reply(&protocol.PasswordAccess{Type: protocol.Confirm, Access: conf})
	} else {
		c.reply(&conf)
	}
	if result != protocol.AccessOK {
		s.warn.debugf("access denied", "remote", c.remote, "result", result,
			"version", clip(a.AppletVersion, maxQuoted), "document", clip(a.DocumentBase, maxQuoted))
		c.closeAfterReply(ReasonAccessDenied)
	}
}

// documentAllowed applies the shipped referrer rules: the documentBase,
// lower-cased and without whitespace, must be a URL whose scheme is http
// or https; an empty or malformed one, and file: or ftp: pages, are
// refused with DOCUMENT_DENIED.
func documentAllowed(doc string) bool {
	doc = strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return -1
		}
		return unicode.ToLower(r)
	}, doc)
	if doc == "" {
		return false
	}
	u, err := url.Parse(doc)
	if err != nil {
		return false
	}
	return u.Scheme == "http" || u.Scheme == "https"
}

func (s *Server) enterRoom(c *conn, p *protocol.EnterRoom) {
	profile, name := protocol.Trim(p.Profile), protocol.Trim(p.UserName)
	refuse := func(result int32) {
		c.reply(&protocol.EnterRoom{Type: protocol.Confirm, Profile: profile, RoomName: p.RoomName,
			UserName: name, Result: result, Users: []protocol.User{}})
	}
	if jlen(p.RoomName) > s.cfg.MaxRoomName {
		c.close(ReasonTooLong)
		return
	}
	r := s.findRoom(p.RoomName)
	if r == nil {
		refuse(protocol.EnterNoSuchRoom)
		return
	}
	if jlen(name) > s.cfg.MaxName || jlen(profile) > s.cfg.MaxProfile {
		c.close(ReasonTooLong)
		return
	}
	if name == "" {
		c.close(ReasonBadRequest)
		return
	}
	r.mu.Lock()
	switch {
	case r.removed:
		r.mu.Unlock()
		refuse(protocol.EnterNoSuchRoom)
		return
	case c.memberOfName(r.name) != nil:
		r.mu.Unlock()
		c.close(ReasonBadRequest)
		return
	case c.roomsFull():
		// past its share of the rooms: as if this one were full
		r.mu.Unlock()
		s.refuseRequest(c, ReasonMaxConnRooms)
		refuse(protocol.EnterRoomFull)
		return
	case len(r.members) >= s.cfg.RoomLimit:
		r.mu.Unlock()
		refuse(protocol.EnterRoomFull)
		return
	case r.findLocked(name) != nil:
		r.mu.Unlock()
		refuse(protocol.EnterNameTaken)
		return
	}
	m := newMember(c, r, name, profile)
	ind, err := (&protocol.EnterRoom{Type: protocol.Indication, Profile: profile, RoomName: p.RoomName,
		UserName: name, Address: "", Member: "false", Link: "false"}).AppendPacket(nil)
	if err == nil {
		for _, o := range r.members {
			c.deliver(o.c, ind)
		}
		s.counters.out(protocol.IDEnterRoom, len(r.members), len(r.members)*len(ind))
	}
	r.members = append(r.members, m)
	r.conns = append(r.conns, c)
	c.addMember(m)
	c.reply(&protocol.EnterRoom{Type: protocol.Confirm, Profile: profile, RoomName: p.RoomName, UserName: name,
		Result: protocol.EnterOK, RoomType: protocol.RoomNormal, Count: int32(len(r.members)), Users: r.usersLocked()})
	r.mu.Unlock()
	s.counters.users.Add(1)
}

// exitRoom removes membership m of c and tells the others.
func (s *Server) exitRoom(c *conn, m *member) {
	r := m.r
	r.mu.Lock()
	for i, o := range r.members {
		if o == m {
			r.members = append(r.members[:i], r.members[i+1:]...)
			r.conns = append(r.conns[:i], r.conns[i+1:]...)
			r.conns[len(r.conns):cap(r.conns)][0] = nil
			break
		}
	}
	if len(r.members) > 0 {
		b, err := (&protocol.ExitRoom{Type: protocol.Indication, RoomName: r.name, UserName: m.name}).AppendPacket(c.scratch[:0])
		if err == nil {
			c.keepScratch(b)
			for _, o := range r.members {
				c.deliver(o.c, b)
			}
			s.counters.out(protocol.IDExitRoom, len(r.members), len(r.members)*len(b))
		}
	}
	empty := len(r.members) == 0 && r.guests == 0
	r.mu.Unlock()
	c.removeMember(m)
	s.counters.users.Add(-1)
	if empty {
		s.maybeRemove(r)
	}
}

// handleChat relays a chat: the hot path of the benchmark. It decodes in
// place, builds the indication once in the sender's scratch buffer and
// writes it to every other member under the room's lock, then confirms to
// the sender; nothing is allocated.
func (c *conn) handleChat(body []byte) {
	s := c.s
	v, err := protocol.ParseChat(body)
	if err != nil {
		c.closeFor(ReasonProtocol, err)
		return
	}
	name, text := protocol.TrimRaw(v.UserName), protocol.TrimRaw(v.Text)
	if protocol.UTF16Len(name) > s.cfg.MaxName || protocol.UTF16Len(text) > s.cfg.MaxText {
		c.close(ReasonTooLong)
		return
	}
	if len(name) == 0 || len(text) == 0 {
		c.close(ReasonBadRequest)
		return
	}
	if v.RoomID != 0 {
		s.privateChat(c, v, text)
		return
	}
	m := c.memberOf(v.RoomName)
	if m == nil {
		c.strayChat() // not in that room: dropped, as the original does
		return
	}
	r := m.r
	r.mu.Lock()
	// The receivers' first lines (their lock and socket) are out of the
	// cache at 950 rooms: independent loads of a word of each (ws, which
	// never changes), before the packets are built, let the processor
	// fetch them in parallel rather than one miss after another at each
	// send.
	t := uintptr(0)
	for _, o := range r.conns {
		t += uintptr(unsafe.Pointer(o.ws))
	}
	r.touched = t
	b := protocol.AppendHeader(c.scratch[:0], protocol.IDChat, protocol.Indication)
	b = protocol.AppendBool(b, v.Question)
	b = protocol.AppendInt32(b, 0)
	b = protocol.AppendRawString(b, r.nameRaw)
	b = protocol.AppendRawString(b, m.nameRaw)
	b = protocol.AppendRawString(b, text)
	ind := len(b)
	b = protocol.AppendHeader(b, protocol.IDChat, protocol.Confirm)
	b = protocol.AppendBool(b, v.Question)
	b = protocol.AppendInt32(b, 0)
	b = protocol.AppendRawString(b, r.nameRaw)
	b = protocol.AppendRawString(b, nil)
	b = protocol.AppendRawString(b, nil)
	var n int
	if c.eng != nil {
		n, c.paceRoom = c.eng.relay(c, r.conns, b[:ind], b[ind:])
	} else {
		n, c.paceRoom = relayChat(c, r.conns, b[:ind], b[ind:])
	}
	r.mu.Unlock()
	c.keepScratch(b)
	s.counters.out(protocol.IDChat, n+1, n*ind+len(b)-ind)
	s.counters.chats.Add(1)
	s.counters.deliveries.Add(uint64(n))
}

func (s *Server) userList(c *conn, p *protocol.UserList) {
	conf := &protocol.UserList{Type: protocol.Confirm, RoomName: p.RoomName, Result: protocol.UserListNoSuchRoom,
		RoomType: protocol.RoomUnknown, Users: []protocol.User{}}
	if r := s.findRoom(p.RoomName); r != nil {
		r.mu.Lock()
		if !r.removed {
			conf.Result, conf.RoomType, conf.DocumentBase, conf.Users = protocol.UserListOK, protocol.RoomNormal, r.documentBase, r.usersLocked()
		}
		r.mu.Unlock()
	}
	c.reply(conf)
}

// checkNames closes c when a name or text is over its limit.
func (s *Server) checkLengths(c *conn, names []string, text string) bool {
	for _, n := range names {
		if jlen(n) > s.cfg.MaxName {
			c.close(ReasonTooLong)
			return false
		}
	}
	if jlen(text) > s.cfg.MaxText {
		c.close(ReasonTooLong)
		return false
	}
	return true
}

// toMember finds, in a room c is in, the user addressed by name; the
// room's lock is held on return when found.
func (s *Server) toMember(c *conn, roomName, to string) (*member, *member) {
	m := c.memberOfName(roomName)
	if m == nil {
		return nil, nil
	}
	m.r.mu.Lock()
	t := m.r.findLocked(to)
	if t == nil {
		m.r.mu.Unlock()
		return nil, nil
	}
	return m, t
}

func (s *Server) whisper(c *conn, p *protocol.Whisper) {
	if !s.checkLengths(c, []string{p.FromName, p.ToName}, p.Text) {
		return
	}
	m, t := s.toMember(c, p.RoomName, p.ToName)
	if m == nil {
		return
	}
	b, err := (&protocol.Whisper{Type: protocol.Indication, RoomName: p.RoomName, FromName: m.name, ToName: p.ToName, Text: p.Text}).AppendPacket(nil)
	if err == nil {
		t.c.send(b)
		s.counters.out(protocol.IDWhisper, 1, len(b))
	}
	m.r.mu.Unlock()
}

func (s *Server) beep(c *conn, p *protocol.Beep) {
	if !s.checkLengths(c, []string{p.FromName, p.ToName}, "") {
		return
	}
	m, t := s.toMember(c, p.RoomName, p.ToName)
	if m == nil {
		return
	}
	b, err := (&protocol.Beep{Type: protocol.Indication, RoomName: p.RoomName, FromName: m.name, ToName: p.ToName}).AppendPacket(nil)
	if err == nil {
		t.c.send(b)
		s.counters.out(protocol.IDBeep, 1, len(b))
	}
	m.r.mu.Unlock()
}

// refuseRequest counts a request refused for a limit; the connection
// stays open.
func (s *Server) refuseRequest(c *conn, reason string) {
	s.counters.requestsRefused[reason].Add(1)
	s.warn.note("refused", reason, c.remote, "")
}

// enterPrivate opens a private session. Inviting oneself is allowed, as
// the original allows it (a confirm, no indication): refusing it would
// change what a client sees, and under the per-connection cap it costs no
// more than any other session. Past MaxPrivate sessions opened and not
// yet closed, the request is refused without a reply, as the original
// answers an EnterPrivate whose users are not both in the room.
func (s *Server) enterPrivate(c *conn, p *protocol.EnterPrivate) {
	m, t := s.toMember(c, p.RoomName, p.ToName)
	if m == nil {
		return
	}
	defer m.r.mu.Unlock()
	if c.privateFull() {
		s.refuseRequest(c, ReasonMaxPrivate)
		return
	}
	sess := &private{a: c, b: t.c, aName: m.name, bName: t.name}
	s.privMu.Lock()
	sess.id = s.newPrivateIDLocked()
	s.privates[sess.id] = sess
	s.privMu.Unlock()
	c.addPriv(sess, true)
	if t.c != c && !t.c.addPriv(sess, false) {
		// The invited connection is closing: end the session at once
		// (the indication goes to it, and is dropped).
		s.endPrivate(c, sess)
		return
	}
	c.reply(&protocol.EnterPrivate{Type: protocol.Confirm, RoomName: p.RoomName, FromName: m.name, ToName: p.ToName,
		RoomID: sess.id, Host: "", Profile: t.profile})
	if t.c != c {
		b, err := (&protocol.EnterPrivate{Type: protocol.Indication, RoomName: p.RoomName, FromName: m.name, ToName: p.ToName,
			RoomID: sess.id, Host: "", Profile: m.profile}).AppendPacket(nil)
		if err == nil {
			t.c.send(b)
			s.counters.out(protocol.IDEnterPrivate, 1, len(b))
		}
	}
}

// privateFull tells whether c has opened as many private sessions as it
// may.
func (c *conn) privateFull() bool {
	max := c.s.cfg.MaxPrivate
	if max <= 0 {
		return false
	}
	c.pmu.Lock()
	defer c.pmu.Unlock()
	return c.opened >= max
}

// newPrivateIDLocked is a positive id no live session has; s.privMu must
// be held.
func (s *Server) newPrivateIDLocked() int32 {
	for {
		id := s.nextPriv.Add(1) & math.MaxInt32
		if id != 0 && s.privates[id] == nil {
			return id
		}
	}
}

// addPriv adds sess to the connection's sessions (counted as opened by it
// when opener); false when the connection has already ended its sessions.
func (c *conn) addPriv(sess *private, opener bool) bool {
	c.pmu.Lock()
	defer c.pmu.Unlock()
	if opener {
		c.opened++
	}
	if c.privs == nil {
		if c.privsEnded {
			return false
		}
		c.privs = map[*private]struct{}{}
	}
	c.privs[sess] = struct{}{}
	return true
}

func (c *conn) dropPriv(sess *private, opener bool) {
	c.pmu.Lock()
	delete(c.privs, sess)
	if opener {
		c.opened--
	}
	c.pmu.Unlock()
}

// privateChat relays a chat in a private session; unlike the original,
// only the session's two members may post in it.
func (s *Server) privateChat(c *conn, v protocol.ChatView, text []byte) {
	s.privMu.Lock()
	sess := s.privates[v.RoomID]
	s.privMu.Unlock()
	if sess == nil {
		c.strayChat() // no such session: dropped, as the original does
		return
	}
	other, name, ok := sess.other(c)
	if !ok {
		c.strayChat() // not its session
		return
	}
	if other == c {
		return
	}
	b := protocol.AppendHeader(nil, protocol.IDChat, protocol.Indication)
	b = protocol.AppendBool(b, v.Question)
	b = protocol.AppendInt32(b, v.RoomID)
	b = protocol.AppendRawString(b, v.RoomName)
	b = protocol.AppendRawString(b, mustEncode(name))
	b = protocol.AppendRawString(b, text)
	other.send(b)
	s.counters.out(protocol.IDChat, 1, len(b))
	s.counters.privateChats.Add(1)
}

func (s *Server) exitPrivate(c *conn, id int32) {
	s.privMu.Lock()
	sess := s.privates[id]
	s.privMu.Unlock()
	if sess == nil {
		return
	}
	if _, _, ok := sess.other(c); !ok {
		return
	}
	s.endPrivate(c, sess)
}

// endPrivate ends sess, left by c, and tells the other member. Whoever
// removes it from the server's table ends it; each lock is held for O(1)
// work, so ending many sessions never holds up anyone else's.
func (s *Server) endPrivate(c *conn, sess *private) {
	s.privMu.Lock()
	if s.privates[sess.id] != sess {
		s.privMu.Unlock()
		return
	}
	delete(s.privates, sess.id)
	s.privMu.Unlock()
	sess.a.dropPriv(sess, true)
	if sess.b != sess.a {
		sess.b.dropPriv(sess, false)
	}
	other, name, _ := sess.other(c)
	if other != c {
		b, err := (&protocol.ExitPrivate{Type: protocol.Indication, RoomID: sess.id, FromName: name}).AppendPacket(nil)
		if err == nil {
			other.send(b)
			s.counters.out(protocol.IDExitPrivate, 1, len(b))
		}
	}
}

// exitAllPrivate ends every session of a closing connection: O(its
// sessions).
func (s *Server) exitAllPrivate(c *conn) {
	c.pmu.Lock()
	sessions := c.privs
	c.privs, c.privsEnded = nil, true
	c.pmu.Unlock()
	for sess := range sessions {
		s.endPrivate(c, sess)
	}
}
