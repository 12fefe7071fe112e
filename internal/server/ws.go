package server

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/volanogo/volanogo/pkg/protocol"
)

// WebSocket keep-alive: the server pings every wsPingPeriod and closes a
// connection that has not answered (or sent anything) for wsPongWait.
const (
	wsPingPeriod = 30 * time.Second
	wsPongWait   = 75 * time.Second
	wsWriteWait  = 10 * time.Second
)

// WebSocketHandler upgrades requests to WebSocket chat connections: the
// same packets as over TCP, exactly one per binary message.
func (s *Server) WebSocketHandler() http.Handler {
	up := &websocket.Upgrader{
		ReadBufferSize:  1024,
		WriteBufferSize: 1024,
		CheckOrigin:     s.checkOrigin,
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.MaxConnections > 0 && s.counters.open.Load() >= int64(s.cfg.MaxConnections) && s.makeRoom() == 0 {
			s.counters.refused[ReasonMaxConns].Add(1)
			http.Error(w, "too many connections", http.StatusServiceUnavailable)
			return
		}
		if !websocket.IsWebSocketUpgrade(r) {
			s.plainHTTP(w, r)
			http.Error(w, "a WebSocket upgrade request is expected here", http.StatusBadRequest)
			return
		}
		if hc, ok := r.Context().Value(handshakeKey{}).(*handshakeConn); ok {
			hc.upgraded.Store(true)
		}
		ws, err := up.Upgrade(w, r, nil)
		if err != nil {
			return // Upgrade has replied
		}
		s.counters.accepted[1].Add(1)
		c := &conn{s: s, nc: ws.NetConn(), fd: -1, ws: ws, remote: r.RemoteAddr, wake: make(chan struct{}, 1)}
		c.lastPacket.Store(time.Now().UnixNano())
		if !s.track(c) {
			_ = ws.Close()
			return
		}
		go c.wsWriter()
		c.serveWS()
	})
}

// wsMux serves the WebSocket listener: /chat, and a plain HTTP request
// anywhere else, or one to /chat that is not an upgrade, is answered with
// its HTTP error, closed and counted (not_websocket), rather than left to
// idle until the handshake timeout counts it as one.
func (s *Server) wsMux() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/chat", s.WebSocketHandler())
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.plainHTTP(w, r)
		http.NotFound(w, r)
	})
	return mux
}

// plainHTTP counts a request on the WebSocket listener that is not an
// upgrade, once per connection, and has its connection closed after the
// reply.
func (s *Server) plainHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Connection", "close")
	if hc, ok := r.Context().Value(handshakeKey{}).(*handshakeConn); ok {
		hc.closedFor(ReasonNotWebSocket, clip(r.Method+" "+r.URL.Path, maxQuoted))
	}
}

// checkOrigin allows requests without an Origin (non-browser clients),
// same-host origins, and those on the allow-list ("*" allows all).
func (s *Server) checkOrigin(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	for _, o := range s.cfg.WSOrigins {
		if o == "*" || strings.EqualFold(o, origin) {
			return true
		}
	}
	u, err := url.Parse(origin)
	return err == nil && strings.EqualFold(u.Host, r.Host)
}

// handshakeListener counts the WebSocket connections closed because their
// upgrade request did not arrive within the handshake timeout (the HTTP
// server's ReadHeaderTimeout and IdleTimeout close them).
type handshakeListener struct {
	net.Listener
	s *Server
}

// Accept makes room at the open-files limit as the chat listener does
// (displace.go), so that a user of the WebSocket is not left in the
// backlog behind connections that will never chat; when there is none to
// let go, the HTTP server retries after a pause of its own.
func (l *handshakeListener) Accept() (net.Conn, error) {
	for {
		nc, err := l.Listener.Accept()
		if err != nil {
			if outOfFiles(err) && l.s.makeRoom() > 0 {
				waitForDescriptor()
				continue
			}
			return nil, err
		}
		return &handshakeConn{Conn: nc, s: l.s}, nil
	}
}

// handshakeKey is the request context's key of its *handshakeConn.
type handshakeKey struct{}

func withHandshakeConn(ctx context.Context, nc net.Conn) context.Context {
	if hc, ok := nc.(*handshakeConn); ok {
		return context.WithValue(ctx, handshakeKey{}, hc)
	}
	return ctx
}

type handshakeConn struct {
	net.Conn
	s        *Server
	upgraded atomic.Bool
	counted  atomic.Bool
	began    bool // a byte was read (by the HTTP server's goroutine)
}

// errNotHTTP ends a connection on the WebSocket listener whose first byte
// cannot begin an HTTP request.
var errNotHTTP = errors.New("not an HTTP request")

func (c *handshakeConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if !c.began && n > 0 {
		c.began = true
		// A request line begins with its method, a token of letters: a
		// VOLANO packet (a client at the wrong port: its length first) or
		// a TLS hello is closed now, not left to the handshake timeout.
		if b := p[0]; (b < 'A' || b > 'Z') && (b < 'a' || b > 'z') {
			c.closedFor(ReasonNotWebSocket, "")
			return 0, errNotHTTP
		}
	}
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) && !c.upgraded.Load() {
		c.closedFor(ReasonHandshakeTimeout, "")
	}
	return n, err
}

// closedFor counts the connection, once, as closed before any upgrade for
// reason (not_websocket, handshake_timeout), and notes it for the warning
// log.
func (c *handshakeConn) closedFor(reason, detail string) {
	if c.counted.CompareAndSwap(false, true) {
		c.s.counters.closed[reason].Add(1)
		c.s.warn.note("closed", reason, c.RemoteAddr().String(), detail)
	}
}

func (c *conn) sendWSLocked(b []byte) {
	if c.queued+len(b) > c.s.cfg.SendBuffer {
		c.closeLocked(ReasonSlowConsumer)
		return
	}
	c.wsq = append(c.wsq, append([]byte(nil), b...))
	c.queued += len(b)
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// serveWS is a WebSocket connection's reading goroutine. The Access must
// arrive within the access timeout; after it the read deadline is the
// pong wait, renewed by every message and pong.
func (c *conn) serveWS() {
	defer c.finish()
	cfg := &c.s.cfg
	c.ws.SetReadLimit(int64(cfg.MaxPacket))
	first := time.Now().Add(wsPongWait)
	if cfg.AccessTimeout > 0 {
		first = time.Now().Add(cfg.AccessTimeout)
	}
	_ = c.ws.SetReadDeadline(first)
	c.ws.SetPongHandler(func(string) error {
		if !c.admitted() {
			return nil
		}
		return c.ws.SetReadDeadline(time.Now().Add(wsPongWait))
	})
	for {
		if c.stopping() {
			return
		}
		mt, msg, err := c.ws.ReadMessage()
		if err != nil {
			if c.stopping() {
				return
			}
			reason := ReasonReadError
			switch {
			case websocket.IsCloseError(err, websocket.CloseNormalClosure, websocket.CloseGoingAway, websocket.CloseNoStatusReceived):
				reason = ReasonEOF
			case errors.Is(err, websocket.ErrReadLimit):
				reason = ReasonTooLarge
			case isTimeout(err) && !c.accessed:
				reason = ReasonAccessTimeout
			}
			c.closeFor(reason, err)
			return
		}
		c.lastPacket.Store(time.Now().UnixNano())
		if mt != websocket.BinaryMessage {
			c.close(ReasonProtocol)
			return
		}
		p, err := protocol.DecodeMessage(msg)
		if err != nil {
			c.closeFor(ReasonProtocol, err)
			return
		}
		c.s.counters.in(p.PacketID(), len(msg))
		if p.PacketID() != protocol.IDChat {
			c.throttle()
		} else {
			c.paceChat()
		}
		if p.PacketID() == protocol.IDChat && c.accessed {
			c.handleChat(msg[6:])
		} else {
			c.handlePacket(p)
		}
		if c.share.doomed {
			c.close(ReasonNotInRoom) // a new one costs a flooder a handshake
			return
		}
		if c.accessed {
			_ = c.ws.SetReadDeadline(time.Now().Add(wsPongWait))
		}
		c.yieldSometimes()
	}
}

// wsIdle is the writer's idle check, at each ping: a Ping packet once no
// packet has come for an idle timeout, the close after two.
func (c *conn) wsIdle(pinged *bool) bool {
	idle := c.s.cfg.IdleTimeout
	if idle <= 0 || !c.admitted() {
		return true
	}
	since := time.Since(time.Unix(0, c.lastPacket.Load()))
	switch {
	case since >= 2*idle:
		c.close(ReasonIdle)
		return false
	case since >= idle && !*pinged:
		*pinged = true
		c.sendPing()
	case since < idle:
		*pinged = false
	}
	return true
}

// wsWriter writes the queued packets, one binary message each, and pings.
func (c *conn) wsWriter() {
	ping := time.NewTicker(wsPingPeriod)
	defer ping.Stop()
	pinged := false
	for {
		select {
		case <-c.wake:
		case <-ping.C:
			if !c.wsIdle(&pinged) {
				return
			}
			_ = c.ws.SetWriteDeadline(time.Now().Add(wsWriteWait))
			if err := c.ws.WriteMessage(websocket.PingMessage, nil); err != nil {
				c.close(ReasonWriteError)
				return
			}
		}
		c.mu.Lock()
		q, closed, lingering := c.wsq, c.closed, c.lingering
		c.wsq = nil
		c.mu.Unlock()
		if closed {
			return
		}
		// Each message stays counted in queued until its write returns.
		for _, b := range q {
			_ = c.ws.SetWriteDeadline(time.Now().Add(writeStall))
			if err := c.ws.WriteMessage(websocket.BinaryMessage, b); err != nil {
				reason := ReasonWriteError
				if isTimeout(err) {
					reason = ReasonSlowConsumer
				}
				c.close(reason)
				return
			}
			c.mu.Lock()
			c.queued -= len(b)
			c.mu.Unlock()
		}
		if lingering != "" {
			c.mu.Lock()
			empty := len(c.wsq) == 0
			c.mu.Unlock()
			if empty {
				code := websocket.CloseNormalClosure
				if lingering == ReasonShutdown {
					code = websocket.CloseGoingAway
				}
				_ = c.ws.WriteControl(websocket.CloseMessage,
					websocket.FormatCloseMessage(code, lingering), time.Now().Add(wsWriteWait))
				c.close(lingering)
				return
			}
		}
	}
}

// isTimeout tells a deadline's error, as the net package or the
// websocket library (which wraps it in its own net.Error) returns it.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}
