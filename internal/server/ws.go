package server

import (
	"net/http"
	"net/url"
	"strings"
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
		if s.cfg.MaxConnections > 0 && s.counters.open.Load() >= int64(s.cfg.MaxConnections) {
			s.counters.refused[ReasonMaxConns].Add(1)
			http.Error(w, "too many connections", http.StatusServiceUnavailable)
			return
		}
		ws, err := up.Upgrade(w, r, nil)
		if err != nil {
			return // Upgrade has replied
		}
		s.counters.accepted[1].Add(1)
		c := &conn{s: s, nc: ws.NetConn(), fd: -1, ws: ws, remote: r.RemoteAddr, wake: make(chan struct{}, 1)}
		if !s.track(c) {
			_ = ws.Close()
			return
		}
		go c.wsWriter()
		c.serveWS()
	})
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

// serveWS is a WebSocket connection's reading goroutine.
func (c *conn) serveWS() {
	defer c.finish()
	c.ws.SetReadLimit(int64(c.s.cfg.MaxPacket))
	_ = c.ws.SetReadDeadline(time.Now().Add(wsPongWait))
	c.ws.SetPongHandler(func(string) error {
		return c.ws.SetReadDeadline(time.Now().Add(wsPongWait))
	})
	for {
		c.mu.Lock()
		lingering, closed := c.lingering, c.closed
		c.mu.Unlock()
		if closed {
			return
		}
		if lingering != "" {
			c.drain(lingering)
			return
		}
		mt, msg, err := c.ws.ReadMessage()
		if err != nil {
			reason := ReasonReadError
			if websocket.IsCloseError(err, websocket.CloseNormalClosure, websocket.CloseGoingAway, websocket.CloseNoStatusReceived) {
				reason = ReasonEOF
			} else if strings.Contains(err.Error(), "read limit exceeded") {
				reason = ReasonTooLarge
			}
			c.close(reason)
			return
		}
		_ = c.ws.SetReadDeadline(time.Now().Add(wsPongWait))
		if mt != websocket.BinaryMessage {
			c.close(ReasonProtocol)
			return
		}
		p, err := protocol.DecodeMessage(msg)
		if err != nil {
			c.s.log.Info("malformed packet", "remote", c.remote, "err", err)
			c.close(ReasonProtocol)
			return
		}
		c.s.counters.in(p.PacketID(), len(msg))
		if p.PacketID() == protocol.IDChat && c.accessed {
			c.handleChat(msg[6:])
			continue
		}
		c.handlePacket(p)
	}
}

// wsWriter writes the queued packets, one binary message each, and pings.
func (c *conn) wsWriter() {
	ping := time.NewTicker(wsPingPeriod)
	defer ping.Stop()
	for {
		select {
		case <-c.wake:
		case <-ping.C:
			_ = c.ws.SetWriteDeadline(time.Now().Add(wsWriteWait))
			if err := c.ws.WriteMessage(websocket.PingMessage, nil); err != nil {
				c.close(ReasonWriteError)
				return
			}
			continue
		}
		c.mu.Lock()
		q, closed, lingering := c.wsq, c.closed, c.lingering
		c.wsq, c.queued = nil, 0
		c.mu.Unlock()
		if closed {
			return
		}
		for _, b := range q {
			_ = c.ws.SetWriteDeadline(time.Now().Add(writeStall))
			if err := c.ws.WriteMessage(websocket.BinaryMessage, b); err != nil {
				c.close(ReasonWriteError)
				return
			}
		}
		if lingering != "" {
			c.mu.Lock()
			empty := len(c.wsq) == 0
			c.mu.Unlock()
			if empty {
				_ = c.ws.WriteControl(websocket.CloseMessage,
					websocket.FormatCloseMessage(websocket.CloseNormalClosure, lingering), time.Now().Add(wsWriteWait))
				c.close(lingering)
				return
			}
		}
	}
}
