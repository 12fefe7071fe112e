package server

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volanogo/volanogo/pkg/protocol"
)

// The scenarios of the protocol sheet's sections 5 and 6, numbered as in
// testdata/captures/probe-replies.txt where the original server's answer
// was recorded.
func TestScenarios(t *testing.T) { forEngines(t, testScenarios) }

func testScenarios(t *testing.T, engine string) {
	s := startServer(t, Config{Engine: engine, Rooms: sampleRooms})
	closedBy := func(reason string) func() bool {
		return func() bool { return s.counters.closed[reason].Load() > 0 }
	}

	t.Run("1 unknown packet id first", func(t *testing.T) {
		c := dial(t, s)
		c.sendRaw([]byte{0x03, 0xe7, 0, 0, 0, 1})
		c.expectClosed()
		waitFor(t, "protocol close counted", closedBy(ReasonProtocol))
	})
	t.Run("2 chat as first packet", func(t *testing.T) {
		c := dial(t, s)
		c.send(chat("Room1", "Mark1", "hi"))
		c.expectClosed()
		waitFor(t, "first-packet close counted", closedBy(ReasonFirstPacket))
	})
	t.Run("3 wrong applet version", func(t *testing.T) {
		c := dial(t, s)
		a := markAccess("Room1")
		a.AppletVersion = "1.0"
		c.send(a)
		got := c.expect().(*protocol.Access)
		assert.Equal(t, protocol.AccessVersionDenied, got.Result)
		assert.Empty(t, got.Rooms)
		c.expectClosed()
	})
	t.Run("4 empty documentBase", func(t *testing.T) {
		c := dial(t, s)
		a := markAccess("Room1")
		a.DocumentBase = ""
		c.send(a)
		assert.Equal(t, protocol.AccessDocumentDenied, c.expect().(*protocol.Access).Result)
		c.expectClosed()
	})
	t.Run("4b unparsable and file documentBase", func(t *testing.T) {
		for _, doc := range []string{"not a url", "file:///etc/passwd", "ftp://x/y", "%zz"} {
			c := dial(t, s)
			a := markAccess("")
			a.DocumentBase = doc
			c.send(a)
			assert.Equal(t, protocol.AccessDocumentDenied, c.expect().(*protocol.Access).Result, doc)
			c.expectClosed()
		}
	})
	t.Run("5 second access", func(t *testing.T) {
		c := dial(t, s)
		got := c.access("Room1")
		assert.Equal(t, append(append([]string{}, sampleRooms...), "Room1"), got.Rooms[:4])
		c.send(markAccess("Room1"))
		c.expectClosed()
		waitFor(t, "second-access close counted", closedBy(ReasonSecondAccess))
	})
	t.Run("6 no such room", func(t *testing.T) {
		c := dial(t, s)
		c.access("")
		e := c.enter("NoSuchRoomXYZ", "bob")
		assert.Equal(t, protocol.EnterNoSuchRoom, e.Result)
		assert.Equal(t, "NoSuchRoomXYZ", e.RoomName)
		assert.Equal(t, "bob", e.UserName)
		assert.Zero(t, e.RoomType)
		assert.Zero(t, e.Count)
		assert.Empty(t, e.Users)
	})
	t.Run("7 user name of 21 characters", func(t *testing.T) {
		c := dial(t, s)
		c.access("ProbeRoom7")
		c.send(&protocol.EnterRoom{Type: protocol.Request, Profile: "p", RoomName: "ProbeRoom7", UserName: strings.Repeat("x", 21)})
		c.expectClosed()
		waitFor(t, "too-long close counted", closedBy(ReasonTooLong))
	})
	t.Run("7b limits count UTF-16 units after trimming", func(t *testing.T) {
		c := dial(t, s)
		c.access("ProbeRoom7b")
		// 20 units with surrounding blanks: accepted
		e := c.enter("ProbeRoom7b", "  "+strings.Repeat("é", 20)+"  ")
		assert.Equal(t, protocol.EnterOK, e.Result)
		assert.Equal(t, strings.Repeat("é", 20), e.UserName)
		// 10 characters beyond the BMP are 20 units: accepted; 11 are 22: closed
		c2 := dial(t, s)
		c2.access("ProbeRoom7b")
		assert.Equal(t, protocol.EnterOK, c2.enter("ProbeRoom7b", strings.Repeat("😀", 10)).Result)
		c3 := dial(t, s)
		c3.access("ProbeRoom7b")
		c3.send(&protocol.EnterRoom{Type: protocol.Request, Profile: "p", RoomName: "ProbeRoom7b", UserName: strings.Repeat("😀", 11)})
		c3.expectClosed()
	})
	t.Run("7c room name and profile over their limits", func(t *testing.T) {
		c := dial(t, s)
		c.access("")
		c.send(&protocol.EnterRoom{Type: protocol.Request, Profile: "p", RoomName: strings.Repeat("r", 101), UserName: "u"})
		c.expectClosed()
		c2 := dial(t, s)
		c2.access("ProbeRoom7c")
		c2.send(&protocol.EnterRoom{Type: protocol.Request, Profile: strings.Repeat("p", 201), RoomName: "ProbeRoom7c", UserName: "u"})
		c2.expectClosed()
	})
	t.Run("8 empty user name", func(t *testing.T) {
		c := dial(t, s)
		c.access("ProbeRoom8")
		c.send(&protocol.EnterRoom{Type: protocol.Request, Profile: "p", RoomName: "ProbeRoom8", UserName: "   "})
		c.expectClosed()
		waitFor(t, "bad-request close counted", closedBy(ReasonBadRequest))
	})
	t.Run("9 duplicate name and entering twice", func(t *testing.T) {
		a := dial(t, s)
		a.access("ProbeRoom9")
		e := a.enter("ProbeRoom9", "alice")
		require.Equal(t, protocol.EnterOK, e.Result)
		assert.Equal(t, protocol.RoomNormal, e.RoomType)
		assert.Equal(t, int32(1), e.Count)
		assert.Equal(t, []protocol.User{{Name: "alice", Profile: "p", Host: "", Member: "false", Link: "false"}}, e.Users)
		b := dial(t, s)
		b.access("ProbeRoom9")
		e = b.enter("ProbeRoom9", "alice")
		assert.Equal(t, protocol.EnterNameTaken, e.Result)
		assert.Zero(t, e.Count)
		// the connection stays open after a refusal: the same name in
		// another room is fine
		assert.Equal(t, protocol.EnterOK, b.enter("Sample Permanent Room A", "alice").Result)
		// entering a room one is already in closes
		a.send(&protocol.EnterRoom{Type: protocol.Request, Profile: "p", RoomName: "ProbeRoom9", UserName: "alice2"})
		a.expectClosed()
	})

	t.Run("10 and 11 chat round", func(t *testing.T) {
		a := dial(t, s)
		a.access("ProbeRoom10")
		a.enter("ProbeRoom10", "alice")
		b := dial(t, s)
		b.access("ProbeRoom10")
		e := b.enter("ProbeRoom10", "bob")
		assert.Equal(t, int32(2), e.Count)
		assert.Equal(t, []string{"alice", "bob"}, []string{e.Users[0].Name, e.Users[1].Name})
		ind := a.expect().(*protocol.EnterRoom)
		assert.Equal(t, &protocol.EnterRoom{Type: protocol.Indication, Profile: "p", RoomName: "ProbeRoom10",
			UserName: "bob", Address: "", Member: "false", Link: "false"}, ind)

		a.send(chat("ProbeRoom10", "alice", "  hello world  "))
		assert.Equal(t, &protocol.Chat{Type: protocol.Confirm, RoomName: "ProbeRoom10"}, a.expect())
		assert.Equal(t, &protocol.Chat{Type: protocol.Indication, RoomName: "ProbeRoom10", UserName: "alice", Text: "hello world"}, b.expect())

		// 11: the registered name replaces the one in the request; a chat
		// to a room not entered is dropped without a reply
		b.send(chat("ProbeRoom10", "mallory", "who am i"))
		assert.Equal(t, &protocol.Chat{Type: protocol.Indication, RoomName: "ProbeRoom10", UserName: "bob", Text: "who am i"}, a.expect())
		assert.Equal(t, &protocol.Chat{Type: protocol.Confirm, RoomName: "ProbeRoom10"}, b.expect())
		b.send(chat("Sample Permanent Room B", "bob", "anyone?"))
		b.expectNothing(100 * time.Millisecond)
		a.expectNothing(50 * time.Millisecond)
	})
	t.Run("12 room list, user list, whisper, beep, client ping", func(t *testing.T) {
		a, b := aliceAndBob(t, s, "ProbeRoom12")

		a.send(&protocol.RoomList{Type: protocol.Request, Filter: "PROBEROOM12"})
		assert.Equal(t, &protocol.RoomList{Type: protocol.Confirm, Filter: "PROBEROOM12", Rooms: []string{"ProbeRoom12"}}, a.expect())
		a.send(&protocol.RoomList{Type: protocol.Request, Filter: "sample"})
		assert.Equal(t, sampleRooms, a.expect().(*protocol.RoomList).Rooms)

		a.send(&protocol.UserList{Type: protocol.Request, RoomName: "ProbeRoom12"})
		ul := a.expect().(*protocol.UserList)
		assert.Equal(t, protocol.UserListOK, ul.Result)
		assert.Equal(t, protocol.RoomNormal, ul.RoomType)
		assert.Equal(t, "http://www.volano.com/chat.html", ul.DocumentBase)
		assert.Len(t, ul.Users, 2)
		a.send(&protocol.UserList{Type: protocol.Request, RoomName: "Sample Permanent Room C"})
		ul = a.expect().(*protocol.UserList)
		assert.Equal(t, protocol.UserListOK, ul.Result)
		assert.Equal(t, "", ul.DocumentBase)
		a.send(&protocol.UserList{Type: protocol.Request, RoomName: "NoSuchRoomXYZ"})
		ul = a.expect().(*protocol.UserList)
		assert.Equal(t, protocol.UserListNoSuchRoom, ul.Result)
		assert.Zero(t, ul.RoomType)
		assert.Empty(t, ul.Users)

		a.send(&protocol.Whisper{Type: protocol.Request, RoomName: "ProbeRoom12", FromName: "x", ToName: "bob", Text: "psst"})
		assert.Equal(t, &protocol.Whisper{Type: protocol.Indication, RoomName: "ProbeRoom12", FromName: "alice", ToName: "bob", Text: "psst"}, b.expect())
		a.send(&protocol.Beep{Type: protocol.Request, RoomName: "ProbeRoom12", FromName: "x", ToName: "bob"})
		assert.Equal(t, &protocol.Beep{Type: protocol.Indication, RoomName: "ProbeRoom12", FromName: "alice", ToName: "bob"}, b.expect())
		a.send(&protocol.Ping{Type: protocol.Response})
		a.send(&protocol.Ping{Type: protocol.Request})
		a.expectNothing(100 * time.Millisecond)
		b.expectNothing(10 * time.Millisecond)
	})
	t.Run("13 private chat", func(t *testing.T) {
		a, b := aliceAndBob(t, s, "ProbeRoom13")
		m := dial(t, s) // mallory, in the room but not in the session
		m.access("ProbeRoom13")
		m.enter("ProbeRoom13", "mallory")
		a.expect()
		b.expect()

		a.send(&protocol.EnterPrivate{Type: protocol.Request, RoomName: "ProbeRoom13", FromName: "x", ToName: "bob"})
		cnf := a.expect().(*protocol.EnterPrivate)
		assert.Equal(t, protocol.Confirm, cnf.Type)
		assert.Equal(t, "alice", cnf.FromName)
		assert.Equal(t, "bob", cnf.ToName)
		assert.Equal(t, "p", cnf.Profile)
		require.Positive(t, cnf.RoomID)
		ind := b.expect().(*protocol.EnterPrivate)
		assert.Equal(t, protocol.Indication, ind.Type)
		assert.Equal(t, cnf.RoomID, ind.RoomID)
		assert.Equal(t, "alice", ind.FromName)
		id := cnf.RoomID

		a.send(&protocol.Chat{Type: protocol.Request, RoomID: id, UserName: "alice", Text: "private hi "})
		assert.Equal(t, &protocol.Chat{Type: protocol.Indication, RoomID: id, UserName: "alice", Text: "private hi"}, b.expect())
		b.send(&protocol.Chat{Type: protocol.Request, RoomID: id, UserName: "bob", Text: "private back"})
		assert.Equal(t, &protocol.Chat{Type: protocol.Indication, RoomID: id, UserName: "bob", Text: "private back"}, a.expect())
		// unlike the original, an outsider cannot post into the session
		m.send(&protocol.Chat{Type: protocol.Request, RoomID: id, UserName: "mallory", Text: "intrusion"})
		a.expectNothing(100 * time.Millisecond)
		b.expectNothing(10 * time.Millisecond)

		a.send(&protocol.ExitPrivate{Type: protocol.Request, RoomID: id, FromName: "alice"})
		assert.Equal(t, &protocol.ExitPrivate{Type: protocol.Indication, RoomID: id, FromName: "alice"}, b.expect())
		a.send(&protocol.Chat{Type: protocol.Request, RoomID: id, UserName: "alice", Text: "gone"})
		b.expectNothing(100 * time.Millisecond)
	})
	t.Run("13b disconnect ends private sessions", func(t *testing.T) {
		a, b := aliceAndBob(t, s, "ProbeRoom13b")
		b.send(&protocol.EnterPrivate{Type: protocol.Request, RoomName: "ProbeRoom13b", FromName: "bob", ToName: "alice"})
		id := b.expect().(*protocol.EnterPrivate).RoomID
		a.expect()
		b.c.Close()
		assert.Equal(t, &protocol.ExitPrivate{Type: protocol.Indication, RoomID: id, FromName: "bob"}, a.expect())
		assert.Equal(t, &protocol.ExitRoom{Type: protocol.Indication, RoomName: "ProbeRoom13b", UserName: "bob"}, a.expect())
	})
	t.Run("18 private session edge cases", func(t *testing.T) {
		a, b := aliceAndBob(t, s, "ProbeRoom18")

		// Inviting oneself: a confirm and no indication.
		a.send(&protocol.EnterPrivate{Type: protocol.Request, RoomName: "ProbeRoom18", FromName: "alice", ToName: "alice"})
		self := a.expect().(*protocol.EnterPrivate)
		assert.Equal(t, protocol.Confirm, self.Type)
		assert.Equal(t, "alice", self.ToName)
		// Inviting someone not in the room, or an unknown session's exit: nothing.
		a.send(&protocol.EnterPrivate{Type: protocol.Request, RoomName: "ProbeRoom18", FromName: "alice", ToName: "nobody"})
		a.send(&protocol.ExitPrivate{Type: protocol.Request, RoomID: 1 << 30, FromName: "alice"})
		a.expectNothing(100 * time.Millisecond)
		b.expectNothing(10 * time.Millisecond)

		a.send(&protocol.EnterPrivate{Type: protocol.Request, RoomName: "ProbeRoom18", FromName: "alice", ToName: "bob"})
		id := a.expect().(*protocol.EnterPrivate).RoomID
		b.expect()
		// The registered name replaces the one given, the text is trimmed,
		// the room name and the question flag pass as sent.
		a.send(&protocol.Chat{Type: protocol.Request, Question: true, RoomID: id, RoomName: "ProbeRoom18", UserName: "zed", Text: " two "})
		assert.Equal(t, &protocol.Chat{Type: protocol.Indication, Question: true, RoomID: id, RoomName: "ProbeRoom18", UserName: "alice", Text: "two"}, b.expect())
		a.expectNothing(50 * time.Millisecond)
	})
	t.Run("14 exit room and disconnect", func(t *testing.T) {
		var cs []*client
		for _, n := range []string{"alice", "bob", "carol"} {
			c := dial(t, s)
			c.access("ProbeRoom14")
			c.enter("ProbeRoom14", n)
			cs = append(cs, c)
		}
		cs[0].expect()
		cs[0].expect()
		cs[1].expect()
		cs[1].send(&protocol.ExitRoom{Type: protocol.Request, RoomName: "ProbeRoom14", UserName: "bob"})
		want := &protocol.ExitRoom{Type: protocol.Indication, RoomName: "ProbeRoom14", UserName: "bob"}
		assert.Equal(t, want, cs[0].expect())
		assert.Equal(t, want, cs[2].expect())
		cs[1].expectNothing(100 * time.Millisecond)
		cs[2].c.Close()
		assert.Equal(t, &protocol.ExitRoom{Type: protocol.Indication, RoomName: "ProbeRoom14", UserName: "carol"}, cs[0].expect())
	})
	t.Run("15 chat text of 201 characters", func(t *testing.T) {
		a := dial(t, s)
		a.access("ProbeRoom15")
		a.enter("ProbeRoom15", "alice")
		a.send(chat("ProbeRoom15", "alice", strings.Repeat("t", 200)))
		a.expect()
		a.send(chat("ProbeRoom15", "alice", strings.Repeat("t", 201)))
		a.expectClosed()
	})
	t.Run("15b empty chat text or name", func(t *testing.T) {
		for _, p := range []*protocol.Chat{chat("ProbeRoom15b", "alice", "   "), chat("ProbeRoom15b", "", "hi")} {
			a := dial(t, s)
			a.access("ProbeRoom15b")
			a.enter("ProbeRoom15b", "alice")
			a.send(p)
			a.expectClosed()
		}
	})
	t.Run("16 malformed modified UTF-8", func(t *testing.T) {
		c := dial(t, s)
		c.access("")
		// EnterRoom request whose profile is the lone byte 0xff
		c.sendRaw([]byte{0x00, 0xce, 0, 0, 0, 1, 0, 1, 0xff, 0, 1, 'r', 0, 1, 'u'})
		c.expectClosed()
	})
	t.Run("17 room full", func(t *testing.T) {
		s2 := startServer(t, Config{Engine: engine, RoomLimit: 3})
		for i := range 3 {
			c := dial(t, s2)
			c.access("Full")
			require.Equal(t, protocol.EnterOK, c.enter("Full", string(rune('a'+i))).Result)
		}
		c := dial(t, s2)
		c.access("Full")
		e := c.enter("Full", "late")
		assert.Equal(t, protocol.EnterRoomFull, e.Result)
		assert.Equal(t, "late", e.UserName)
		assert.Zero(t, e.Count)
	})
	t.Run("create rooms is for administrators", func(t *testing.T) {
		c := dial(t, s)
		c.access("")
		c.send(&protocol.CreateRooms{Type: protocol.Request, Rooms: []string{"x"}})
		c.expectClosed()
	})
	t.Run("garbage after access closes only that connection", func(t *testing.T) {
		a, b := aliceAndBob(t, s, "ProbeRoomG")
		b.sendRaw([]byte{0xff, 0xff, 0, 0, 0, 1, 1, 2, 3})
		b.expectClosed()
		assert.Equal(t, &protocol.ExitRoom{Type: protocol.Indication, RoomName: "ProbeRoomG", UserName: "bob"}, a.expect())
		a.send(chat("ProbeRoomG", "alice", "still here"))
		assert.Equal(t, protocol.Confirm, a.expect().PacketType())
	})
}

func TestDynamicRoomsComeAndGo(t *testing.T) { forEngines(t, testDynamicRoomsComeAndGo) }

func testDynamicRoomsComeAndGo(t *testing.T, engine string) {
	s := startServer(t, Config{Engine: engine, Rooms: []string{"Lobby"}})
	a := dial(t, s)
	got := a.access("Dyn")
	assert.Equal(t, []string{"Lobby", "Dyn"}, got.Rooms)
	a.enter("Dyn", "alice")
	b := dial(t, s)
	assert.Equal(t, []string{"Lobby", "Dyn", "Other"}, b.access("Other").Rooms)
	a.send(&protocol.ExitRoom{Type: protocol.Request, RoomName: "Dyn", UserName: "alice"})
	// still a guest of Dyn: the room stays while the connection does
	b.send(&protocol.RoomList{Type: protocol.Request})
	assert.Equal(t, []string{"Lobby", "Dyn", "Other"}, b.expect().(*protocol.RoomList).Rooms)
	a.c.Close()
	waitFor(t, "Dyn removed", func() bool { return s.findRoom("Dyn") == nil })
	b.send(&protocol.RoomList{Type: protocol.Request})
	assert.Equal(t, []string{"Lobby", "Other"}, b.expect().(*protocol.RoomList).Rooms)
	b.c.Close()
	waitFor(t, "Other removed", func() bool { return s.findRoom("Other") == nil })
	assert.NotNil(t, s.findRoom("Lobby"), "permanent rooms stay")
}

func TestIdlePing(t *testing.T) { forEngines(t, testIdlePing) }

func testIdlePing(t *testing.T, engine string) {
	s := startServer(t, Config{Engine: engine, IdleTimeout: 100 * time.Millisecond})
	c := dial(t, s)
	c.access("")
	assert.Equal(t, &protocol.Ping{Type: protocol.Request}, c.expect())
	c.send(&protocol.Ping{Type: protocol.Response})
	assert.Equal(t, &protocol.Ping{Type: protocol.Request}, c.expect())
	c.expectClosed()
	waitFor(t, "idle close counted", func() bool { return s.counters.closed[ReasonIdle].Load() == 1 })
}

func TestMaxConnections(t *testing.T) { forEngines(t, testMaxConnections) }

func testMaxConnections(t *testing.T, engine string) {
	s := startServer(t, Config{Engine: engine, MaxConnections: 2})
	a := dial(t, s)
	a.access("")
	b := dial(t, s)
	b.access("")
	c := dial(t, s)
	c.expectClosed()
	assert.Equal(t, uint64(1), s.counters.refused[ReasonMaxConns].Load())
	a.send(&protocol.RoomList{Type: protocol.Request})
	a.expect()
}
