package server

import (
	"bufio"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volanogo/volanogo/pkg/protocol"
)

// TestPlainHTTPOnWebSocketPort: a plain HTTP request on the WebSocket
// listener, to another path or to /chat without an upgrade, is answered
// with its HTTP error, closed at once and counted as not_websocket: not
// left idle until the handshake timeout counted it as one.
func TestPlainHTTPOnWebSocketPort(t *testing.T) {
	s := startServer(t, Config{WSListen: "127.0.0.1:0", HandshakeTimeout: 5 * time.Second})
	for _, tc := range []struct {
		path string
		code int
	}{{"/", http.StatusNotFound}, {"/chat", http.StatusBadRequest}, {"/favicon.ico", http.StatusNotFound}} {
		nc, err := net.Dial("tcp", s.WSAddr().String())
		require.NoError(t, err)
		_, err = io.WriteString(nc, "GET "+tc.path+" HTTP/1.1\r\nHost: x\r\n\r\n")
		require.NoError(t, err)
		_ = nc.SetReadDeadline(time.Now().Add(3 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(nc), nil)
		require.NoError(t, err)
		assert.Equal(t, tc.code, resp.StatusCode, tc.path)
		_, err = io.ReadAll(resp.Body)
		require.NoError(t, err)
		resp.Body.Close()
		_, err = nc.Read(make([]byte, 1))
		assert.ErrorIs(t, err, io.EOF, "%s: closed after the reply, well before the handshake timeout", tc.path)
		nc.Close()
	}
	assert.Equal(t, uint64(3), s.counters.closed[ReasonNotWebSocket].Load())
	assert.Zero(t, s.counters.closed[ReasonHandshakeTimeout].Load())
	assert.Zero(t, s.counters.accepted[1].Load(), "no WebSocket accepted")

	// a real upgrade still works
	w, _, err := dialWS(t, s, "")
	require.NoError(t, err)
	w.send(markAccess(""))
	assert.IsType(t, &protocol.Access{}, w.expect())
}

// TestNotHTTPOnWebSocketPort: bytes that cannot begin an HTTP request (a
// VOLANO client pointed at the WebSocket port, a TLS hello) are closed at
// once and counted as not_websocket, not held until the handshake timeout.
func TestNotHTTPOnWebSocketPort(t *testing.T) {
	s := startServer(t, Config{WSListen: "127.0.0.1:0", HandshakeTimeout: 30 * time.Second})
	access, err := markAccess("").AppendPacket(nil)
	require.NoError(t, err)
	for _, first := range [][]byte{access, {0x16, 0x03, 0x01, 0x00, 0x05}} {
		nc, err := net.Dial("tcp", s.WSAddr().String())
		require.NoError(t, err)
		_, err = nc.Write(first)
		require.NoError(t, err)
		_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		start := time.Now()
		_, err = io.ReadAll(nc)
		assert.NoError(t, err, "closed by the server, not by the read deadline")
		assert.Less(t, time.Since(start), 5*time.Second, "closed well before the handshake timeout")
		nc.Close()
	}
	waitFor(t, "both counted", func() bool { return s.counters.closed[ReasonNotWebSocket].Load() == 2 })
	assert.Zero(t, s.counters.closed[ReasonHandshakeTimeout].Load())
	assert.Zero(t, s.counters.accepted[1].Load(), "no WebSocket accepted")
}

// TestAccessDeniedLogBounded: the debug line of a refused Access quotes
// at most 64 bytes of each of the peer's strings, and a flood of refused
// Access requests makes one such line a second, saying how many it left
// out, not one each.
func TestAccessDeniedLogBounded(t *testing.T) {
	var log syncBuffer
	logger := slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s := startServer(t, Config{Logger: logger, RequestRate: Off})
	huge := strings.Repeat("é", 1500) // 3,000 bytes: two of them fit in a packet of DefaultMaxPacket
	const n = 30
	start := time.Now()
	for range n {
		c := dial(t, s)
		a := markAccess("")
		a.AppletVersion, a.DocumentBase = huge, "http://"+huge
		c.send(a)
		assert.Equal(t, protocol.AccessVersionDenied, c.expect().(*protocol.Access).Result)
		c.c.Close()
	}
	took := time.Since(start)
	var lines []string
	for _, l := range strings.Split(log.String(), "\n") {
		if strings.Contains(l, "access denied") {
			lines = append(lines, l)
		}
	}
	require.NotEmpty(t, lines)
	assert.LessOrEqual(t, len(lines), 1+int(took/debugInterval), "one line a second for %d refusals in %v", n, took)
	for _, l := range lines {
		assert.Less(t, len(l), 512, "a bounded line: %.200s", l)
		assert.Contains(t, l, "more bytes")
	}
	if len(lines) == 1 {
		c := dial(t, s)
		a := markAccess("")
		a.AppletVersion = "1.0"
		time.Sleep(debugInterval) // the next line comes a second after the last
		c.send(a)
		c.expect()
		waitFor(t, "the next line", func() bool { return strings.Count(log.String(), "access denied") == 2 })
		assert.Contains(t, log.String(), "left_out=")
	}
}

// TestClip: clip cuts at a character boundary and says what it left out.
func TestClip(t *testing.T) {
	assert.Equal(t, "short", clip("short", 64))
	assert.Equal(t, "ab... (4 more bytes)", clip("abcdef", 2))
	assert.Equal(t, "a... (4 more bytes)", clip("aéé", 2), "not inside é")
}
