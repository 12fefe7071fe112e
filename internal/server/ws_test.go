package server

import (
	"net/http"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volanogo/volanogo/pkg/protocol"
)

type wsClient struct {
	t  *testing.T
	ws *websocket.Conn
}

func dialWS(t *testing.T, s *Server, origin string) (*wsClient, *http.Response, error) {
	h := http.Header{}
	if origin != "" {
		h.Set("Origin", origin)
	}
	d := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
	ws, resp, err := d.Dial("ws://"+s.WSAddr().String()+"/chat", h)
	if err != nil {
		return nil, resp, err
	}
	t.Cleanup(func() { ws.Close() })
	return &wsClient{t: t, ws: ws}, resp, nil
}

func (c *wsClient) send(p protocol.Packet) {
	b, err := p.AppendPacket(nil)
	require.NoError(c.t, err)
	require.NoError(c.t, c.ws.WriteMessage(websocket.BinaryMessage, b))
}

func (c *wsClient) expect() protocol.Packet {
	c.t.Helper()
	_ = c.ws.SetReadDeadline(time.Now().Add(5 * time.Second))
	mt, msg, err := c.ws.ReadMessage()
	require.NoError(c.t, err)
	require.Equal(c.t, websocket.BinaryMessage, mt)
	p, err := protocol.DecodeMessage(msg)
	require.NoError(c.t, err, "one packet per message")
	return p
}

// TestWebSocket chats between a WebSocket user and a TCP user in one room.
func TestWebSocket(t *testing.T) { forEngines(t, testWebSocket) }

func testWebSocket(t *testing.T, engine string) {
	s := startServer(t, Config{Engine: engine, WSListen: "127.0.0.1:0", WSOrigins: []string{"https://chat.example"}})
	w, _, err := dialWS(t, s, "")
	require.NoError(t, err)
	w.send(markAccess("Mixed"))
	assert.Equal(t, protocol.AccessOK, w.expect().(*protocol.Access).Result)
	w.send(&protocol.EnterRoom{Type: protocol.Request, Profile: "p", RoomName: "Mixed", UserName: "web"})
	assert.Equal(t, protocol.EnterOK, w.expect().(*protocol.EnterRoom).Result)

	c := dial(t, s)
	c.access("Mixed")
	c.enter("Mixed", "tcp")
	assert.Equal(t, "tcp", w.expect().(*protocol.EnterRoom).UserName)

	w.send(chat("Mixed", "web", "from the browser "))
	assert.Equal(t, &protocol.Chat{Type: protocol.Confirm, RoomName: "Mixed"}, w.expect())
	assert.Equal(t, "from the browser", c.expect().(*protocol.Chat).Text)
	c.send(chat("Mixed", "tcp", "from a socket"))
	assert.Equal(t, &protocol.Chat{Type: protocol.Indication, RoomName: "Mixed", UserName: "tcp", Text: "from a socket"}, w.expect())
	assert.Equal(t, protocol.Confirm, c.expect().PacketType())

	// A refused Access is answered, then the connection is closed.
	w2, _, err := dialWS(t, s, "https://chat.example")
	require.NoError(t, err)
	a := markAccess("")
	a.AppletVersion = "1.0"
	w2.send(a)
	assert.Equal(t, protocol.AccessVersionDenied, w2.expect().(*protocol.Access).Result)
	_ = w2.ws.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, _, err = w2.ws.ReadMessage()
	assert.True(t, websocket.IsCloseError(err, websocket.CloseNormalClosure), "want a close, got %v", err)

	// A text message or a malformed packet closes only that connection.
	w3, _, err := dialWS(t, s, "")
	require.NoError(t, err)
	require.NoError(t, w3.ws.WriteMessage(websocket.TextMessage, []byte("hello")))
	_ = w3.ws.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, _, err = w3.ws.ReadMessage()
	assert.Error(t, err)

	// Two packets in one message are not one packet.
	w4, _, err := dialWS(t, s, "")
	require.NoError(t, err)
	b, _ := markAccess("").AppendPacket(nil)
	b, _ = (&protocol.Ping{Type: protocol.Response}).AppendPacket(b)
	require.NoError(t, w4.ws.WriteMessage(websocket.BinaryMessage, b))
	_ = w4.ws.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, _, err = w4.ws.ReadMessage()
	assert.Error(t, err)

	w.send(chat("Mixed", "web", "still fine"))
	w.expect()
	assert.Equal(t, "still fine", c.expect().(*protocol.Chat).Text)
	waitFor(t, "protocol closes counted", func() bool { return s.counters.closed[ReasonProtocol].Load() == 2 })
}

func TestWebSocketOrigins(t *testing.T) { forEngines(t, testWebSocketOrigins) }

func testWebSocketOrigins(t *testing.T, engine string) {
	s := startServer(t, Config{Engine: engine, WSListen: "127.0.0.1:0", WSOrigins: []string{"https://chat.example"}})
	_, resp, err := dialWS(t, s, "https://evil.example")
	require.Error(t, err)
	require.NotNil(t, resp)
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	_, _, err = dialWS(t, s, "https://chat.example")
	assert.NoError(t, err)
	_, _, err = dialWS(t, s, "http://"+s.WSAddr().String())
	assert.NoError(t, err, "same host")
}
