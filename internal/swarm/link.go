package swarm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gorilla/websocket"

	"github.com/volanogo/volanogo/internal/broker"
	"github.com/volanogo/volanogo/pkg/protocol"
)

// link is one client connection: a TCP socket, or a WebSocket whose binary
// messages (one packet each) are read as one stream, so that the same
// protocol.Reader serves both.
type link struct {
	// Raw mode (TCP, the timed phase of turn-taking): the user's whole
	// loop runs inside one syscall.RawConn.Read callback, reading the
	// socket with read(2) itself, so that after a read that drained the
	// socket it waits for readiness instead of trying (and failing) one
	// more read: one read(2) per wake-up instead of two. What every read
	// and write touches comes first (one cache line).
	fd      int
	raw     bool
	mayRead bool
	// onLoop is set while an event loop's thread runs the user (writes
	// then wait with poll(2), up to writeTimeout).
	onLoop bool
	// ended is set by an event loop once the socket has reported an end
	// of stream or an error (EPOLLRDHUP, EPOLLHUP, EPOLLERR): reads go on
	// to the end then, as no later edge would announce it (see sysRead).
	ended bool
	// rbuf, when set (batched reads), holds what one read(2) returned.
	rbuf         []byte
	rpos, rend   int
	writeTimeout time.Duration

	nc net.Conn
	ws *websocket.Conn
	mr io.Reader // the WebSocket message being read
	// wmu serialises WebSocket writes (gorilla allows one writer; a paced
	// user writes from its sender and, for a Ping, from its reader).
	wmu sync.Mutex
	rc  syscall.RawConn
	// br, on a broker target, translates between the user's VOLANO
	// packets and the broker's protocol (internal/broker).
	br *broker.Conn

	// The epoll engine (evloop_linux.go): evfd is the duplicate descriptor
	// a loop reads once the net.Conn is closed; evState says who owns it
	// (under evMu); evClose asks the loop to close it when it lets go.
	evMu    sync.Mutex
	evfd    int
	evState int
	evClose bool

	// To 192 bytes, a size the allocator aligns to cache lines
	// (TestHotLines).
	_ [24]byte
}

// States of a link's descriptor under the epoll engine.
const (
	evNone     = iota // never left Go's poller
	evAttached        // a loop reads it
	evDetached        // the loop let go; the link closes it
	evClosed
)

// errWouldBlock is Read's answer in raw mode when the socket has been
// drained: wait for readiness. It is a timeout for protocol.Reader, which
// keeps its state and may be called again.
var errWouldBlock = wouldBlock{}

type wouldBlock struct{}

func (wouldBlock) Error() string   { return "would block" }
func (wouldBlock) Timeout() bool   { return true }
func (wouldBlock) Temporary() bool { return true }

// dialer opens links to the server.
type dialer struct {
	transport string
	addr      string // host:port (tcp)
	url       string // ws
	broker    broker.Options
	bind      *binder
	timeout   time.Duration
	// said is the broker's product and version (see brokerSays).
	said atomic.Pointer[[2]string]
}

func (d *dialer) dial(ctx context.Context) (*link, error) {
	nd := &net.Dialer{Timeout: d.timeout}
	if la := d.bind.local(); la != nil {
		nd.LocalAddr = la
	}
	if d.transport == TransportWS {
		wd := &websocket.Dialer{
			NetDialContext:   nd.DialContext,
			HandshakeTimeout: d.timeout,
			ReadBufferSize:   2048,
			WriteBufferSize:  1024,
		}
		ws, resp, err := wd.DialContext(ctx, d.url, nil)
		if resp != nil && resp.Body != nil {
			resp.Body.Close()
		}
		if err != nil {
			if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
				return nil, fmt.Errorf("websocket %s: %s: %w", d.url, resp.Status, err)
			}
			return nil, err
		}
		return &link{nc: ws.NetConn(), ws: ws}, nil
	}
	nc, err := nd.DialContext(ctx, "tcp", d.addr)
	if err != nil {
		return nil, err
	}
	l := &link{nc: nc}
	if d.broker.Protocol != "" {
		if err := l.brokerHandshake(d.broker, d.timeout); err != nil {
			nc.Close()
			return nil, err
		}
		d.brokerSays(l)
	}
	l.initRaw()
	return l, nil
}

// brokerHandshake opens the broker's session on the link's connection
// (within timeout) and puts its translation between the user and it.
func (l *link) brokerHandshake(o broker.Options, timeout time.Duration) error {
	br, err := broker.New(o, l.srcRead, l.sinkWrite)
	if err != nil {
		return err
	}
	_ = l.nc.SetDeadline(time.Now().Add(timeout))
	if err := br.Handshake(); err != nil {
		return fmt.Errorf("%s handshake: %w", o.Protocol, err)
	}
	_ = l.nc.SetDeadline(time.Time{})
	l.br = br
	return nil
}

// brokerSays is what the first broker connection's handshake said of the
// broker (NATS's INFO, Redis's HELLO), for the document.
func (d *dialer) brokerSays(l *link) {
	if l.br == nil || d.said.Load() != nil {
		return
	}
	if p, v := l.br.Server(); p != "" {
		d.said.CompareAndSwap(nil, &[2]string{p, v})
	}
}

// srcRead and sinkWrite move a broker connection's own bytes: in raw mode
// through read(2) and write(2), else through the net.Conn.
func (l *link) srcRead(p []byte) (int, error) {
	if l.raw {
		return l.rawRead(p)
	}
	return l.nc.Read(p)
}

func (l *link) sinkWrite(b []byte) error {
	if l.raw {
		return l.rawWrite(b)
	}
	_, err := l.nc.Write(b)
	return err
}

// buffered is what the link holds that a read may return without waiting
// for the socket (a broker's frames not yet translated).
func (l *link) buffered() int {
	if l.br == nil {
		return 0
	}
	return l.br.Buffered()
}

// plainLoop is loop through the connection's own Read.
func (u *user) plainLoop(handle func(protocol.Frame) (bool, error)) error {
	for {
		f, err := u.rd.Next()
		if err != nil {
			return u.failIO("read", err)
		}
		if done, err := handle(f); done || err != nil {
			return err
		}
	}
}

// Read reads the stream of packets.
func (l *link) Read(p []byte) (int, error) {
	if l.br != nil {
		return l.br.Read(p)
	}
	if l.raw {
		return l.rawRead(p)
	}
	if l.ws == nil {
		return l.nc.Read(p)
	}
	for {
		if l.mr == nil {
			mt, r, err := l.ws.NextReader()
			if err != nil {
				var ce *websocket.CloseError
				if errors.As(err, &ce) {
					return 0, io.EOF
				}
				return 0, err
			}
			if mt != websocket.BinaryMessage {
				return 0, fmt.Errorf("websocket: a %s message (packets come in binary messages)", msgType(mt))
			}
			l.mr = r
		}
		n, err := l.mr.Read(p)
		if err == io.EOF {
			l.mr = nil
			if n > 0 {
				return n, nil
			}
			continue
		}
		return n, err
	}
}

func msgType(mt int) string {
	if mt == websocket.TextMessage {
		return "text"
	}
	return "type " + strconv.Itoa(mt)
}

// write sends one packet (WebSocket: one message).
func (l *link) write(pkt []byte) error {
	if l.br != nil {
		return l.br.Write(pkt)
	}
	if l.raw {
		return l.rawWrite(pkt)
	}
	if l.ws == nil {
		_, err := l.nc.Write(pkt)
		return err
	}
	l.wmu.Lock()
	defer l.wmu.Unlock()
	return l.ws.WriteMessage(websocket.BinaryMessage, pkt)
}

func (l *link) setReadDeadline(t time.Time) error {
	if l.onLoop {
		return nil
	}
	if l.ws != nil {
		return l.ws.SetReadDeadline(t)
	}
	return l.nc.SetReadDeadline(t)
}

func (l *link) setWriteDeadline(t time.Time) error {
	if l.onLoop {
		return nil
	}
	if l.ws != nil {
		return l.ws.SetWriteDeadline(t)
	}
	return l.nc.SetWriteDeadline(t)
}

func (l *link) close() error {
	if taken, err := l.evCloseLink(); taken {
		return err
	}
	if l.ws != nil {
		return l.ws.Close()
	}
	return l.nc.Close()
}
