package server

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volanogo/volanogo/pkg/protocol"
)

func TestProtectiveDefaults(t *testing.T) {
	s, err := New(Config{})
	require.NoError(t, err)
	assert.Equal(t, DefaultAccessTimeout, s.cfg.AccessTimeout)
	assert.Equal(t, DefaultIdleTimeout, s.cfg.IdleTimeout)
	assert.Equal(t, DefaultHandshakeTimeout, s.cfg.HandshakeTimeout)
	assert.Equal(t, DefaultMaxPrivate, s.cfg.MaxPrivate)
	assert.Equal(t, DefaultMaxRooms, s.cfg.MaxRooms)
	assert.Equal(t, DefaultRoomListMax, s.cfg.RoomListMax)
	assert.Equal(t, ":8002", DefaultMetrics)
	off, err := New(Config{AccessTimeout: Off, IdleTimeout: Off, MaxPrivate: Off, MaxRooms: Off})
	require.NoError(t, err)
	assert.Negative(t, off.cfg.AccessTimeout)
	assert.Negative(t, off.cfg.IdleTimeout)
	_, err = New(Config{AccessTimeout: -2})
	assert.Error(t, err)
}

// TestAccessTimeout: a connection that sends nothing, or a part of its
// Access, is closed once the access timeout is over, counted by reason,
// and a real user is served meanwhile.
func TestAccessTimeout(t *testing.T) { forEngines(t, testAccessTimeout) }

func testAccessTimeout(t *testing.T, engine string) {
	s := startServer(t, Config{Engine: engine, AccessTimeout: 300 * time.Millisecond})
	silent := dial(t, s)
	partial := dial(t, s)
	b, err := markAccess("Room1").AppendPacket(nil)
	require.NoError(t, err)
	partial.sendRaw(b[:25])
	user := dial(t, s)
	user.access("Room1")
	user.enter("Room1", "real")
	start := time.Now()
	silent.expectClosed()
	partial.expectClosed()
	assert.GreaterOrEqual(t, time.Since(start), 200*time.Millisecond)
	waitFor(t, "access timeouts counted", func() bool { return s.counters.closed[ReasonAccessTimeout].Load() == 2 })
	// the user who sent Access in time is still there, past the deadline
	user.send(&protocol.RoomList{Type: protocol.Request})
	assert.IsType(t, &protocol.RoomList{}, user.expect())
}

// TestWebSocketTimeouts: an upgrade request that never comes, and an
// upgraded connection without an Access, are closed and counted.
func TestWebSocketTimeouts(t *testing.T) { forEngines(t, testWebSocketTimeouts) }

func testWebSocketTimeouts(t *testing.T, engine string) {
	s := startServer(t, Config{Engine: engine, WSListen: "127.0.0.1:0", HandshakeTimeout: 300 * time.Millisecond, AccessTimeout: 300 * time.Millisecond})
	nc, err := net.Dial("tcp", s.WSAddr().String())
	require.NoError(t, err)
	defer nc.Close()
	_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = io.ReadAll(nc)
	require.NoError(t, err, "closed by the server, not by our deadline")
	waitFor(t, "handshake timeout counted", func() bool { return s.counters.closed[ReasonHandshakeTimeout].Load() == 1 })

	w, _, err := dialWS(t, s, "")
	require.NoError(t, err)
	_ = w.ws.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, _, err = w.ws.ReadMessage()
	require.Error(t, err)
	waitFor(t, "access timeout counted", func() bool { return s.counters.closed[ReasonAccessTimeout].Load() == 1 })
	assert.Zero(t, s.counters.closed[ReasonHandshakeTimeout].Load()-1, "an upgraded connection is not a handshake timeout")
}

// serverConn finds the server's side of a test client.
func serverConn(t *testing.T, s *Server, cl net.Conn) *conn {
	t.Helper()
	var found *conn
	waitFor(t, "the server's connection", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		for c := range s.conns {
			if c.remote == cl.LocalAddr().String() {
				found = c
				return true
			}
		}
		return false
	})
	return found
}

// TestSendBufferBound: what waits for a client that never reads, queued
// or handed to a write that has not returned, never passes the send
// buffer plus one packet, until the client is cut off; its room goes on.
func TestSendBufferBound(t *testing.T) { forEngines(t, testSendBufferBound) }

func testSendBufferBound(t *testing.T, engine string) {
	const bound = 32 << 10
	s := startServer(t, Config{Engine: engine, SendBuffer: bound, SocketSendBuffer: 4096})
	talker := dial(t, s)
	talker.access("Bound")
	talker.enter("Bound", "talker")
	sleeper := dial(t, s)
	require.NoError(t, sleeper.c.(*net.TCPConn).SetReadBuffer(4096))
	sleeper.access("Bound")
	sleeper.enter("Bound", "sleeper")
	talker.expect()
	sc := serverConn(t, s, sleeper.c)
	chatB, err := chat("Bound", "talker", strings.Repeat("x", 200)).AppendPacket(nil)
	require.NoError(t, err)
	packet := len(chatB)
	most := 0
	deadline := time.Now().Add(20 * time.Second)
	for s.counters.closed[ReasonSlowConsumer].Load() == 0 {
		require.True(t, time.Now().Before(deadline), "never cut off")
		talker.sendRaw(chatB)
		for {
			p := talker.expect()
			if p.PacketType() == protocol.Confirm {
				break
			}
		}
		if n := sc.pending(); n > most {
			most = n
		}
		require.LessOrEqual(t, most, bound+packet)
	}
	assert.Positive(t, most)
	t.Logf("most bytes waiting: %d (bound %d + packet %d)", most, bound, packet)
}

// TestWebSocketSendBufferBound: the same on WebSocket, where the writer
// takes the whole queue at once.
func TestWebSocketSendBufferBound(t *testing.T) { forEngines(t, testWebSocketSendBufferBound) }

func testWebSocketSendBufferBound(t *testing.T, engine string) {
	const bound = 32 << 10
	s := startServer(t, Config{Engine: engine, WSListen: "127.0.0.1:0", SendBuffer: bound})
	talker := dial(t, s)
	talker.access("WSBound")
	talker.enter("WSBound", "talker")
	d := websocket.Dialer{HandshakeTimeout: 5 * time.Second, NetDial: func(network, addr string) (net.Conn, error) {
		nc, err := net.Dial(network, addr)
		if err == nil {
			_ = nc.(*net.TCPConn).SetReadBuffer(4096)
		}
		return nc, err
	}}
	ws, _, err := d.Dial("ws://"+s.WSAddr().String()+"/chat", nil)
	require.NoError(t, err)
	defer ws.Close()
	w := &wsClient{t: t, ws: ws}
	w.send(markAccess("WSBound"))
	w.expect()
	w.send(&protocol.EnterRoom{Type: protocol.Request, Profile: "p", RoomName: "WSBound", UserName: "sleeper"})
	w.expect()
	talker.expect()
	var sc *conn
	waitFor(t, "the server's connection", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		for c := range s.conns {
			if c.ws != nil {
				sc = c
			}
		}
		return sc != nil
	})
	chatB, err := chat("WSBound", "talker", strings.Repeat("x", 200)).AppendPacket(nil)
	require.NoError(t, err)
	most := 0
	deadline := time.Now().Add(20 * time.Second)
	for s.counters.closed[ReasonSlowConsumer].Load() == 0 {
		require.True(t, time.Now().Before(deadline), "never cut off")
		talker.sendRaw(chatB)
		for talker.expect().PacketType() != protocol.Confirm {
		}
		if n := sc.pending(); n > most {
			most = n
		}
		require.LessOrEqual(t, most, bound+len(chatB))
	}
}

// TestPrivateSessionCap: one connection's EnterPrivate requests past the
// cap are refused without a reply; inviting oneself counts like any
// other; closing ends every session and tells the other members.
func TestPrivateSessionCap(t *testing.T) { forEngines(t, testPrivateSessionCap) }

func testPrivateSessionCap(t *testing.T, engine string) {
	s := startServer(t, Config{Engine: engine, MaxPrivate: 5})
	a, b := aliceAndBob(t, s, "P")
	for i := range 8 {
		to := "alice"
		if i%2 == 1 {
			to = "bob"
		}
		a.send(&protocol.EnterPrivate{Type: protocol.Request, RoomName: "P", FromName: "alice", ToName: to})
	}
	a.send(&protocol.RoomList{Type: protocol.Request})
	confirms := 0
	for {
		p := a.expect()
		if _, ok := p.(*protocol.RoomList); ok {
			break
		}
		require.IsType(t, &protocol.EnterPrivate{}, p)
		confirms++
	}
	assert.Equal(t, 5, confirms)
	assert.Equal(t, uint64(3), s.counters.requestsRefused[ReasonMaxPrivate].Load())
	// bob was invited twice (sessions 2 and 4)
	for range 2 {
		assert.Equal(t, protocol.Indication, b.expect().(*protocol.EnterPrivate).Type)
	}
	// bob's own invitations are his own budget
	b.send(&protocol.EnterPrivate{Type: protocol.Request, RoomName: "P", FromName: "bob", ToName: "alice"})
	assert.Equal(t, protocol.Confirm, b.expect().PacketType())
	a.expect() // the indication

	a.c.Close()
	exits := 0
	for exits < 3 {
		switch p := b.expect().(type) {
		case *protocol.ExitPrivate:
			exits++
		case *protocol.ExitRoom:
		default:
			t.Fatalf("unexpected %#v", p)
		}
	}
	waitFor(t, "sessions gone", func() bool {
		s.privMu.Lock()
		defer s.privMu.Unlock()
		return len(s.privates) == 0
	})
}

// TestMaxRooms: past the dynamic-room limit an Access is accepted but its
// room is not created, so entering it is NO_SUCH_ROOM; permanent rooms do
// not count.
func TestMaxRooms(t *testing.T) { forEngines(t, testMaxRooms) }

func testMaxRooms(t *testing.T, engine string) {
	s := startServer(t, Config{Engine: engine, Rooms: []string{"Lobby"}, MaxRooms: 2})
	a := dial(t, s)
	a.access("D1")
	b := dial(t, s)
	b.access("D2")
	c := dial(t, s)
	got := c.access("D3")
	assert.Equal(t, []string{"Lobby", "D1", "D2"}, got.Rooms)
	assert.Equal(t, protocol.EnterNoSuchRoom, c.enter("D3", "carol").Result)
	assert.Equal(t, protocol.EnterOK, c.enter("Lobby", "carol").Result)
	assert.Equal(t, uint64(1), s.counters.requestsRefused[ReasonMaxRooms].Load())
	a.c.Close()
	waitFor(t, "D1 removed", func() bool { return s.findRoom("D1") == nil })
	d := dial(t, s)
	assert.Equal(t, []string{"Lobby", "D2", "D4"}, d.access("D4").Rooms)
}

// TestRoomListBounded: the room list of an Access or RoomList confirm
// stops at the count and at the byte bound.
func TestRoomListBounded(t *testing.T) { forEngines(t, testRoomListBounded) }

func testRoomListBounded(t *testing.T, engine string) {
	s := startServer(t, Config{Engine: engine, RoomListMax: 3, MaxRoomName: 300})
	var held []*client
	for i := range 5 {
		c := dial(t, s)
		c.access("Room" + strconv.Itoa(i))
		held = append(held, c)
	}
	assert.Equal(t, []string{"Room0", "Room1", "Room2"}, dial(t, s).access2())
	c := held[0]
	c.send(&protocol.RoomList{Type: protocol.Request, Filter: "room"})
	assert.Equal(t, []string{"Room0", "Room1", "Room2"}, c.expect().(*protocol.RoomList).Rooms)
	c.send(&protocol.RoomList{Type: protocol.Request, Filter: "4"})
	assert.Equal(t, []string{"Room4"}, c.expect().(*protocol.RoomList).Rooms)
	c.send(&protocol.RoomList{Type: protocol.Request})
	assert.Equal(t, &protocol.RoomList{Type: protocol.Confirm, Rooms: []string{"Room0", "Room1", "Room2"}}, c.expect())
	// the cached list, and its encoded confirm, follow a change within
	// its reach
	held[1].c.Close()
	waitFor(t, "Room1 removed", func() bool { return s.findRoom("Room1") == nil })
	assert.Equal(t, []string{"Room0", "Room2", "Room3"}, dial(t, s).access2())
	for range 2 {
		c.send(&protocol.RoomList{Type: protocol.Request})
		assert.Equal(t, &protocol.RoomList{Type: protocol.Confirm, Rooms: []string{"Room0", "Room2", "Room3"}}, c.expect())
	}

	// bytes: names of 300 characters stop the list at 16 KiB
	big := startServer(t, Config{Engine: engine, RoomListMax: 1000, MaxRoomName: 300})
	for i := range 60 {
		c := dial(t, big)
		c.access(strings.Repeat("n", 296) + strconv.Itoa(1000+i))
	}
	c = dial(t, big)
	c.send(markAccess(""))
	raw, err := c.r.Next()
	require.NoError(t, err)
	assert.LessOrEqual(t, len(raw.Raw), RoomListMaxBytes+64)
	p, err := raw.Decode()
	require.NoError(t, err)
	assert.Len(t, p.(*protocol.Access).Rooms, RoomListMaxBytes/302)
}

// access2 sends an Access with no room and returns the listed rooms.
func (c *client) access2() []string {
	c.t.Helper()
	return c.access("").Rooms
}

// TestWarnRateLimited: a flood of malformed connections gives one warning
// per reason per interval, with the count, and the metrics count them all.
func TestWarnRateLimited(t *testing.T) { forEngines(t, testWarnRateLimited) }

func testWarnRateLimited(t *testing.T, engine string) {
	var logBuf syncBuffer
	logger := slog.New(slog.NewTextHandler(&logBuf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	s, err := New(Config{Listen: "127.0.0.1:0", Logger: logger, LogInterval: time.Hour, Engine: engine})
	require.NoError(t, err)
	require.NoError(t, s.Start())
	const n = 40
	for range n {
		c := dialAddr(t, s.Addr().String())
		c.sendRaw([]byte{0x03, 0xe7, 0, 0, 0, 1})
		c.expectClosed()
	}
	waitFor(t, "closes counted", func() bool { return s.counters.closed[ReasonProtocol].Load() == n })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, s.Shutdown(ctx))
	out := logBuf.String()
	lines := strings.Count(out, "reason=protocol")
	assert.Equal(t, 2, lines, "the first at once, the rest counted at the end:\n%s", out)
	assert.Contains(t, out, "count=1 ")
	assert.Contains(t, out, "count="+strconv.Itoa(n-1)+" ")
	assert.Contains(t, out, "level=WARN")
	assert.Contains(t, out, "last_error=")
}

func TestHealthAndReady(t *testing.T) { forEngines(t, testHealthAndReady) }

func testHealthAndReady(t *testing.T, engine string) {
	s := startServer(t, Config{Engine: engine, MetricsListen: "127.0.0.1:0"})
	cl := http.Client{Timeout: 5 * time.Second}
	get := func(path string) (int, string) {
		resp, err := cl.Get("http://" + s.MetricsAddr().String() + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, _ := get("/healthz")
	assert.Equal(t, http.StatusOK, code)
	code, body := get("/readyz")
	assert.Equal(t, http.StatusOK, code, body)
	assert.Equal(t, int32(1), s.reserves.Load(), "the reserve is open before Start returns")
	s.draining.Store(true)
	code, body = get("/readyz")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Contains(t, body, "draining")
	s.draining.Store(false)
}

// TestDrain: a graceful stop under load lets every queued packet out,
// closes with a FIN rather than a reset, and refuses new connections.
func TestDrain(t *testing.T) { forEngines(t, testDrain) }

func testDrain(t *testing.T, engine string) {
	s, err := New(Config{Listen: "127.0.0.1:0", WSListen: "127.0.0.1:0", MetricsListen: "127.0.0.1:0", DrainTimeout: 5 * time.Second, Engine: engine})
	require.NoError(t, err)
	require.NoError(t, s.Start())
	a, b := aliceAndBob(t, s, "Drain")
	w, _, err := dialWS(t, s, "")
	require.NoError(t, err)
	w.send(markAccess("Drain"))
	w.expect()
	// chats in flight when the drain begins: every one is delivered
	const chats = 50
	for i := range chats {
		a.send(chat("Drain", "alice", "m"+strconv.Itoa(i)))
	}
	for range chats {
		a.expect()
	}
	done := make(chan error, 1)
	go func() { done <- s.Drain(context.Background()) }()
	got := 0
	for {
		p, err := b.next(5 * time.Second)
		if err != nil {
			assert.ErrorIs(t, err, io.EOF, "a clean close")
			break
		}
		if _, ok := p.(*protocol.Chat); ok {
			got++
		}
	}
	assert.Equal(t, chats, got)
	// while it drains, /readyz says so
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + s.MetricsAddr().String() + "/readyz")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Contains(t, string(body), "draining")
	_ = w.ws.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, _, err = w.ws.ReadMessage()
	assert.True(t, websocket.IsCloseError(err, websocket.CloseGoingAway), "%v", err)
	a.c.Close()
	b.c.Close()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("drain did not end")
	}
	assert.Zero(t, s.counters.open.Load())
	assert.Equal(t, uint64(3), s.counters.closed[ReasonShutdown].Load())
	_, err = net.DialTimeout("tcp", s.Addr().String(), time.Second)
	assert.Error(t, err, "not accepting")
}
