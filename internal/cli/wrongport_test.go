package cli

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volanogo/volanogo/pkg/protocol"
)

// TestLoadAtAnHTTPServer: pointed at an HTTP server (a metrics port, a
// WebSocket endpoint) that answers its first packet with an HTTP reply,
// load fails saying so, not with the packet id that "HT" makes (18516).
func TestLoadAtAnHTTPServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			// As an HTTP server answers a request it cannot parse.
			_, _ = c.Read(make([]byte, 512))
			_, _ = io.WriteString(c, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
			_ = c.Close()
		}
	}()
	defer func() { _ = ln.Close(); <-done }()
	host, port, err := net.SplitHostPort(ln.Addr().String())
	require.NoError(t, err)
	var out, errb bytes.Buffer
	code := Main(context.Background(), []string{"load", "-host", host, "-port", port, "-rooms", "1", "-users", "2",
		"-count", "1", "-file", "", "--quiet", "--stall-timeout", "10s"}, strings.NewReader(""), &out, &errb)
	assert.Equal(t, 1, code, errb.String())
	assert.Contains(t, strings.Join(strings.Fields(out.String()+errb.String()), " "), "this is an HTTP server", "folded at 80 columns")
}

// freePort is a loopback port where nothing listens (one the kernel just
// gave and took back).
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	_, port, err := net.SplitHostPort(ln.Addr().String())
	require.NoError(t, err)
	require.NoError(t, ln.Close())
	return port
}

// TestLoadRefusedBeforeAnyRun: with nothing listening at the port, load
// says so and what to do before any run, and prints no result lines (Mark's
// lines of zeros); --json still prints its line.
func TestLoadRefusedBeforeAnyRun(t *testing.T) {
	t.Chdir(t.TempDir())
	port := freePort(t)
	code, out, errOut := run(t, "load", "-host", "127.0.0.1", "-port", port, "-rooms", "1", "-users", "2", "-count", "1")
	assert.Equal(t, 1, code)
	assert.Empty(t, out, "no result lines")
	assert.Contains(t, errOut, "nothing listens at 127.0.0.1:"+port+" (connection refused)")
	assert.Contains(t, errOut, "--serve")
	assert.NoFileExists(t, defaultMarkFile, "no log of a run that did not start")

	code, out, _ = run(t, "load", "-host", "127.0.0.1", "-port", port, "--json", "-file", "")
	assert.Equal(t, 1, code)
	assert.Contains(t, out, `"verdict": "fail", "exit": 1`)

	code, _, errOut = run(t, "load", "--url", "ws://127.0.0.1:"+port+"/chat", "-file", "")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "nothing listens at 127.0.0.1:"+port)

	code, _, errOut = run(t, "load", "--url", "nats://127.0.0.1:"+port, "-file", "")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "start the nats broker first, or let load start one for each run (--serve nats-server|")
}

// fakeVolano answers like a VOLANO chat port: an Access request gets an
// Access confirm, anything else (an HTTP request) a closed connection.
func fakeVolano(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	confirm, err := (&protocol.Access{Type: protocol.Confirm, Result: protocol.AccessOK}).AppendPacket(nil)
	require.NoError(t, err)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.SetDeadline(time.Now().Add(5 * time.Second))
			f, err := protocol.NewReader(c, 0).Next()
			if err == nil && f.ID == protocol.IDAccess {
				_, _ = c.Write(confirm)
			}
			_ = c.Close()
		}
	}()
	t.Cleanup(func() { _ = ln.Close(); wg.Wait() })
	return ln.Addr().String()
}

// TestLoadWebSocketAtVolanoPort: a ws:// URL at a VOLANO chat port is named
// as such before any run, with what to give instead.
func TestLoadWebSocketAtVolanoPort(t *testing.T) {
	addr := fakeVolano(t)
	code, out, errOut := run(t, "load", "--url", "ws://"+addr+"/chat", "-file", "", "-rooms", "1", "-users", "2", "-count", "1")
	assert.Equal(t, 1, code)
	assert.Empty(t, out)
	assert.Contains(t, errOut, "this port speaks the VOLANO protocol")
	assert.Contains(t, errOut, "drop ws:// (--url volano://"+addr)
}

// fakeWebSocket is a WebSocket endpoint at /chat that, as volanogo serve's
// does, answers bytes that are no HTTP request with 400 Bad Request.
func fakeWebSocket(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	mux := http.NewServeMux()
	up := websocket.Upgrader{}
	mux.HandleFunc("/chat", func(w http.ResponseWriter, r *http.Request) {
		if c, err := up.Upgrade(w, r, nil); err == nil {
			_ = c.Close()
		}
	})
	conns := make(chan net.Conn)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _ = srv.Serve(&chanListener{conns: conns, addr: ln.Addr()}) }()
	go func() {
		defer wg.Done()
		defer close(conns)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b := make([]byte, 1)
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			if n, _ := c.Read(b); n == 1 && b[0] == 'G' {
				_ = c.SetReadDeadline(time.Time{})
				conns <- &prefixConn{Conn: c, prefix: b}
				continue
			}
			_, _ = io.WriteString(c, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
			_ = c.Close()
		}
	}()
	t.Cleanup(func() { _ = ln.Close(); _ = srv.Close(); wg.Wait() })
	return ln.Addr().String()
}

// chanListener hands http.Server the connections sent on conns.
type chanListener struct {
	conns chan net.Conn
	addr  net.Addr
}

func (l *chanListener) Accept() (net.Conn, error) {
	c, ok := <-l.conns
	if !ok {
		return nil, net.ErrClosed
	}
	return c, nil
}
func (l *chanListener) Close() error   { return nil }
func (l *chanListener) Addr() net.Addr { return l.addr }

// prefixConn gives back the bytes read before it was handed on.
type prefixConn struct {
	net.Conn
	prefix []byte
}

func (c *prefixConn) Read(p []byte) (int, error) {
	if len(c.prefix) > 0 {
		n := copy(p, c.prefix)
		c.prefix = c.prefix[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

// TestLoadVolanoAtWebSocketPort: pointed with the VOLANO protocol at a
// WebSocket endpoint, the run that no user got into prints why and the
// URL to give, not Mark's lines of zeros.
func TestLoadVolanoAtWebSocketPort(t *testing.T) {
	host, port, err := net.SplitHostPort(fakeWebSocket(t))
	require.NoError(t, err)
	code, out, errOut := run(t, "load", "-host", host, "-port", port, "-file", "", "-rooms", "1", "-users", "2", "-count", "1",
		"--stall-timeout", "10s")
	assert.Equal(t, 1, code, errOut)
	assert.NotContains(t, out, "Messages sent", "no lines of zeros")
	assert.Contains(t, out, "No user got into a room")
	flat := strings.Join(strings.Fields(out), " ")
	assert.Contains(t, flat, "is a WebSocket endpoint (ws://"+host+":"+port+"/chat answered the handshake): use --url ws://"+host+":"+port+"/chat")
}
