package server

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gorilla/websocket"

	"github.com/volanogo/volanogo/pkg/protocol"
)

// writeStall is how long a blocked write may wait before its receiver is
// cut off as a slow consumer, whatever its buffered bytes.
const writeStall = 30 * time.Second

// conn is one client connection, over TCP or WebSocket.
//
// The fields that relaying a chat to this connection touches come first,
// so that they share one cache line: at 19,000 connections the relay's
// user-space time is mostly cache misses on the receivers' state. The
// second line has what a chat from this connection touches on an event
// loop (its reader, its room, its scratch buffer, its packet count): a
// paced run's chat finds all of them out of the cache. (conn's size
// class, 448 bytes, is whole cache lines, so these are lines of their
// own: TestConnLayout.)
type conn struct {
	mu        sync.Mutex // guards the fields marked c.mu, closed, flushing, lingering, taken, and those from inflight down to wake
	ws        *websocket.Conn
	fd        int32 // TCP on unix: the socket, for non-blocking writes; -1 otherwise
	closed    bool
	flushing  bool     // TCP: a writer (goroutine, or the loop) owns out
	accessed  bool     // owned by the reading goroutine
	paceRoom  bool     // owned by the reading goroutine: its last chat found a receiver behind
	lingering string   // close with this reason once the queue is written
	taken     int64    // TCP: bytes the kernel has taken (for the slow-consumer log line)
	eng       loopConn // TCP on an event-loop engine: its socket; nil otherwise

	// Second line: owned by the reading goroutine, but s.
	s       *Server
	reader  *protocol.Reader
	first   *member            // members[0], or nil
	byRoom  map[string]*member // members by room (modified UTF-8 name), once it entered two; else nil
	scratch []byte
	packets uint64 // packets read (TCP; for the idle timeout)

	members  []*member // rooms entered, in order (owned by the reading goroutine)
	out      []byte    // TCP: bytes the socket has not taken yet (c.mu)
	inflight int       // TCP: bytes handed to the writer's blocking write, not yet all taken (c.mu)
	spare    []byte
	wsq      [][]byte // WebSocket: packets waiting for the writer
	queued   int      // WebSocket: bytes waiting, including the message being written
	reason   string
	detail   string        // what was wrong, for the log
	wake     chan struct{} // WebSocket: its writer's; TCP on the goroutine engine: ends its violation hold (displace.go)

	nc     net.Conn
	remote string

	// Owned by the reading goroutine.
	guestOf    *room
	strikes    int
	sinceYield int       // packets handled since the goroutine last yielded
	share      share     // its chat rate and stray chats (share.go): beside sinceYield, which a chat touches too
	tokens     float64   // requests (other than chats) it may make now
	lastReq    time.Time // when tokens was last topped up
	throttled  int       // times it was slowed down

	// WebSocket: unix nanoseconds of the last packet read (the reader
	// stores it, the writer's idle check loads it).
	lastPacket atomic.Int64
	// status: connAdmitted (its Access was read), connHeld (in its
	// violation hold), as other goroutines see them: a WebSocket's writer,
	// displacement at a connection limit (displace.go).
	status atomic.Uint32
	born   int64 // unix nanoseconds of its tracking (s.mu): displacement takes the oldest first

	pmu    sync.Mutex            // guards privs and opened
	privs  map[*private]struct{} // private sessions this connection is in
	opened int                   // sessions it opened that have not ended
	// privsEnded: the connection has ended its sessions (it is closing).
	privsEnded bool
}

func newTCPConn(s *Server, nc net.Conn) (*conn, error) {
	c := &conn{s: s, nc: nc, remote: nc.RemoteAddr().String(), fd: -1}
	if k, ok := nc.(loopConn); ok {
		k.attach(c) // its loop takes a reader when it has input
		c.eng = k
		return c, nil
	}
	if sc, ok := nc.(syscall.Conn); ok && canRawWrite {
		raw, err := sc.SyscallConn()
		if err != nil {
			return nil, err
		}
		if err := raw.Control(func(fd uintptr) { c.fd = int32(fd) }); err != nil { //nolint:gosec // a descriptor fits
			return nil, err
		}
	}
	c.reader = protocol.NewReader(withLowWater(nc), s.cfg.MaxPacket)
	return c, nil
}

// send queues one packet (or several, concatenated) for the client. It
// never blocks on the network: on TCP it writes what the socket takes at
// once and leaves the rest to a writer goroutine; past the send buffer the
// connection is closed as a slow consumer.
func (c *conn) send(b []byte) {
	c.mu.Lock()
	if len(b) > 0 && c.rawReadyLocked() {
		// the system call here, not three calls down (relayChat)
		if m := sendRaw(int(c.fd), b); m > 0 {
			c.taken += int64(m)
			if b = b[m:]; len(b) == 0 {
				c.mu.Unlock()
				return
			}
		}
	}
	c.sendLocked(b)
	c.mu.Unlock()
}

// sendLocked is send with c.mu held.
func (c *conn) sendLocked(b []byte) {
	if c.closed || c.lingering != "" {
		// A connection being let go gets nothing more than what was
		// queued before (its refusal, or what it had when the server
		// began to drain).
		return
	}
	if c.ws != nil {
		c.sendWSLocked(b)
		return
	}
	if !c.flushing {
		n, err := c.tryWrite(b)
		if err != nil {
			c.closeLocked(ReasonWriteError)
			return
		}
		c.taken += int64(n)
		b = b[n:]
		if len(b) == 0 {
			return
		}
	}
	if len(c.out)+c.inflight+len(b) > c.s.cfg.SendBuffer {
		c.detail = fmt.Sprintf("the kernel took %d bytes, %d more were waiting", c.taken, len(c.out)+c.inflight)
		c.closeLocked(ReasonSlowConsumer)
		return
	}
	c.out = append(c.out, b...)
	if !c.flushing {
		c.flushing = true
		if c.eng != nil {
			c.eng.wantOut() // its loop writes the rest when the socket has room
			return
		}
		// The connection is open, so its reading goroutine holds the wait
		// group above zero: adding here is safe even during Shutdown.
		c.s.wg.Add(1)
		go c.flush()
	}
}

// tryWrite writes without blocking; on a platform without raw access it
// writes nothing and lets the writer goroutine do it. c.mu must be held
// and the connection open: the socket is only closed under c.mu (in
// closeLocked), so the descriptor cannot be closed, let alone reused,
// during the write. Writing on the descriptor directly skips the runtime's
// per-operation locking and poller bookkeeping, which the profile showed
// at about 6% of the relay's CPU; blocking writes still go through the
// net.Conn (flush), never at the same time as this one.
func (c *conn) tryWrite(b []byte) (int, error) {
	if c.fd < 0 {
		return 0, nil
	}
	return writeNonblock(uintptr(c.fd), b)
}

// pending is the bytes waiting for the client, as the send buffer counts
// them: queued, or handed to a write that has not returned.
func (c *conn) pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ws != nil {
		return c.queued
	}
	return len(c.out) + c.inflight
}

// flush is the TCP writer goroutine: it drains out with blocking writes
// and ends when out is empty. The bytes of a write stay counted (inflight)
// until it returns, so that what waits for one client, in out and in the
// write, never passes the send buffer.
func (c *conn) flush() {
	defer c.s.wg.Done()
	for {
		c.mu.Lock()
		if c.closed || len(c.out) == 0 {
			c.flushing = false
			if !c.closed && c.lingering != "" {
				c.shutdownWriteLocked()
			}
			c.mu.Unlock()
			return
		}
		buf := c.out
		c.out = c.spare[:0]
		c.spare = nil
		c.inflight = len(buf)
		c.mu.Unlock()

		_ = c.nc.SetWriteDeadline(time.Now().Add(writeStall))
		n, err := c.nc.Write(buf)

		c.mu.Lock()
		c.inflight = 0
		c.taken += int64(n)
		if cap(buf) <= 4096 {
			c.spare = buf[:0]
		}
		if err != nil {
			reason := ReasonWriteError
			if errors.Is(err, os.ErrDeadlineExceeded) {
				reason = ReasonSlowConsumer
			}
			c.closeLocked(reason)
		}
		c.mu.Unlock()
	}
}

// close closes the connection for reason; the first reason counts. The
// reading goroutine then runs the disconnect processing.
func (c *conn) close(reason string) {
	c.mu.Lock()
	c.closeLocked(reason)
	c.mu.Unlock()
}

// closeFor closes the connection for reason, keeping detail (what was
// wrong) for the log.
func (c *conn) closeFor(reason string, err error) {
	c.mu.Lock()
	if !c.closed && err != nil {
		c.detail = err.Error()
	}
	c.closeLocked(reason)
	c.mu.Unlock()
}

func (c *conn) closeLocked(reason string) {
	if c.closed {
		return
	}
	c.closed = true
	c.reason = reason
	c.out, c.spare, c.wsq, c.inflight = nil, nil, nil, 0
	if c.ws != nil {
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
	_ = c.nc.Close()
}

// closeSilently closes a connection that was never tracked.
func (c *conn) closeSilently() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	_ = c.nc.Close()
}

// closeAfterReply closes the connection once the packets already queued
// have been written: the client gets its refusal before the close. The
// read side is drained until the client closes or a short deadline passes,
// so that unread input does not turn the close into a reset that would
// destroy the reply.
func (c *conn) closeAfterReply(reason string) {
	c.mu.Lock()
	if c.closed || c.lingering != "" {
		c.mu.Unlock()
		return
	}
	c.lingering = reason
	if c.ws != nil {
		select {
		case c.wake <- struct{}{}:
		default:
		}
		c.mu.Unlock()
		return
	}
	if !c.flushing {
		c.shutdownWriteLocked()
	}
	c.mu.Unlock()
}

func (c *conn) shutdownWriteLocked() {
	if tc, ok := c.nc.(interface{ CloseWrite() error }); ok {
		_ = tc.CloseWrite()
	}
}

// serve is the connection's reading goroutine.
//
// Deadlines: the whole Access must arrive within the access timeout.
// After it the read deadline is not touched per packet: it fires every
// period (the shorter of the idle and packet timeouts), and each firing
// looks at what happened since the one before. A packet still arriving
// that was arriving then too has taken longer than the packet timeout
// (closed); an idle timeout without a packet is a strike: a Ping, and at
// the second the close. A busy client costs nothing.
func (c *conn) serve() {
	defer c.finish()
	cfg := &c.s.cfg
	if cfg.AccessTimeout > 0 {
		_ = c.nc.SetReadDeadline(time.Now().Add(cfg.AccessTimeout))
	}
	period := deadlinePeriod(cfg)
	armed := false // the period's deadline is set (after Access)
	var (
		seen        uint64    // c.packets at the last firing
		quietSince  time.Time // the firing that last saw no packet since the one before, or Access
		partial     uint64    // the packet arriving at the last firing
		partialSeen bool
	)
	for {
		if c.accessed && !armed {
			armed = true
			if quietSince.IsZero() {
				seen, quietSince = c.packets, time.Now()
			}
			if period > 0 {
				_ = c.nc.SetReadDeadline(time.Now().Add(period))
			} else {
				_ = c.nc.SetReadDeadline(time.Time{})
			}
		}
		if c.stopping() {
			return
		}
		f, err := c.reader.Next()
		if err != nil {
			if c.stopping() {
				return
			}
			if errors.Is(err, os.ErrDeadlineExceeded) {
				if !c.accessed {
					c.close(ReasonAccessTimeout)
					return
				}
				if period > 0 {
					armed = false
					n, arriving := c.reader.Partial()
					if arriving && cfg.PacketTimeout > 0 && partialSeen && n == partial {
						c.close(ReasonPacketTimeout)
						return
					}
					partial, partialSeen = n, arriving
					now := time.Now()
					if c.packets != seen {
						seen, quietSince, c.strikes = c.packets, now, 0
						continue
					}
					if cfg.IdleTimeout > 0 && now.Sub(quietSince) >= cfg.IdleTimeout {
						quietSince = now
						if c.strikes++; c.strikes >= 2 {
							c.close(ReasonIdle)
							return
						}
						c.sendPing()
					}
					continue
				}
			}
			if c.doomOnRead(err) {
				c.holdThenClose()
				return
			}
			c.readFailed(err)
			return
		}
		c.received(f)
		if f.ID != protocol.IDChat {
			c.throttle()
		} else {
			c.paceChat()
		}
		c.handle(f)
		if c.share.doomed {
			c.holdThenClose()
			return
		}
		if c.paceRoom {
			c.paceRoom = false
			time.Sleep(paceRoom)
		}
		c.yieldSometimes()
	}
}

// deadlinePeriod is how often a reading goroutine's deadline fires after
// the Access: the shorter of the idle and packet timeouts (0: never).
func deadlinePeriod(cfg *Config) time.Duration {
	var d time.Duration
	for _, t := range []time.Duration{cfg.IdleTimeout, cfg.PacketTimeout} {
		if t > 0 && (d == 0 || t < d) {
			d = t
		}
	}
	return d
}

// throttle paces one connection's requests other than chats to the
// request rate, with a burst of one second's worth, by sleeping before
// reading on: the client is slowed down through TCP's flow control, and
// nothing is refused or reordered. The original server does the like with
// its delay.* settings (as shipped, a 1-second pause after each EnterRoom
// or EnterPrivate). A user enters rooms, lists them and opens sessions a
// few times a minute; a flood of such requests from one connection would
// otherwise take a processor.
func (c *conn) throttle() {
	if d := c.throttleDelay(); d > 0 {
		time.Sleep(d)
		c.throttleResume()
	}
	c.takeToken()
}

// throttleDelay tops up the tokens and says how long the connection must
// wait before its next request (0: not at all). The wait is ten requests'
// worth at a time, not one: fewer timers. The event-loop engine waits
// without sleeping (the connection is paused).
func (c *conn) throttleDelay() time.Duration {
	rate := float64(c.s.cfg.RequestRate)
	if rate <= 0 {
		return 0
	}
	now := time.Now()
	if c.lastReq.IsZero() {
		c.tokens = rate
	} else {
		c.tokens = min(rate, c.tokens+now.Sub(c.lastReq).Seconds()*rate)
	}
	c.lastReq = now
	if c.tokens >= 1 {
		return 0
	}
	c.throttled++
	if c.throttled == 1 {
		c.s.refuseRequest(c, ReasonThrottled)
	}
	return time.Duration((10 - c.tokens) / rate * float64(time.Second))
}

// throttleResume credits the wait after throttleDelay: what it overshoots
// counts, so the rate holds on a busy machine.
func (c *conn) throttleResume() {
	rate := float64(c.s.cfg.RequestRate)
	after := time.Now()
	c.tokens = min(rate, c.tokens+after.Sub(c.lastReq).Seconds()*rate)
	c.lastReq = after
}

// takeToken spends one request's token.
func (c *conn) takeToken() {
	if c.s.cfg.RequestRate > 0 {
		c.tokens--
	}
}

// paceRoom is how long a connection waits before its next packet when
// its chat found a receiver with half its send buffer or more waiting: a
// sender whose chats outpace its room is slowed to what its receivers
// read, so that they are cut as slow consumers only for their own
// failure to read (one that does not read still reaches its bound, at
// the paced rate). Benchmark receivers are never that far behind.
const paceRoom = time.Millisecond

// yieldEvery is how many packets a reading goroutine handles before it
// lets other goroutines run. A client that floods requests never blocks
// on its socket, and Go preempts a running goroutine only every 10 ms or
// so: without this, one flooding connection delays every other client
// on its processor by that much. A client that waits for its replies
// (every benchmark user) blocks long before.
const yieldEvery = 32

func (c *conn) yieldSometimes() {
	c.sinceYield++
	if c.sinceYield >= yieldEvery {
		c.sinceYield = 0
		runtime.Gosched()
	}
}

// stopping tells whether the reading goroutine should stop: the
// connection is closed, or being let go (then it drains first).
func (c *conn) stopping() bool {
	c.mu.Lock()
	lingering, closed := c.lingering, c.closed
	c.mu.Unlock()
	if closed {
		return true
	}
	if lingering != "" {
		c.drain(lingering)
		return true
	}
	return false
}

// readFailed closes the connection for a read error, by its reason (both
// engines' readers).
func (c *conn) readFailed(err error) {
	c.closeFor(readCloseReason(err), err)
	if !errors.Is(err, io.EOF) {
		c.s.warn.debugf("connection closed", "remote", c.remote, "err", clip(err.Error(), 4*maxQuoted))
	}
}

// received counts a packet read (both engines' readers).
func (c *conn) received(f protocol.Frame) {
	c.packets++
	c.s.counters.in(f.ID, len(f.Raw))
}

// wakeReader makes a reading goroutine blocked in a read look at the
// connection's state (Drain has set it lingering).
func (c *conn) wakeReader() {
	if c.eng != nil {
		c.eng.post()
		return
	}
	if c.ws == nil {
		_ = c.nc.SetReadDeadline(time.Now())
	}
}

// drain waits (at most a second) for the queued reply to be written,
// reads and discards until the client closes or the second is over, then
// closes with reason.
func (c *conn) drain(reason string) {
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		c.mu.Lock()
		// A WebSocket's writer closes the connection itself once the
		// reply and a close message are out.
		pending := !c.closed && (c.ws != nil || c.flushing || len(c.out) > 0)
		c.mu.Unlock()
		if !pending {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if c.ws == nil {
		_ = c.nc.SetReadDeadline(deadline)
		var buf [512]byte
		for {
			if _, err := c.nc.Read(buf[:]); err != nil {
				break
			}
		}
	}
	c.close(reason)
}

func readCloseReason(err error) string {
	var de *protocol.DecodeError
	switch {
	case errors.Is(err, io.EOF):
		return ReasonEOF
	case errors.Is(err, protocol.ErrTooLarge):
		return ReasonTooLarge
	case errors.As(err, &de), errors.Is(err, protocol.ErrUnknownID), errors.Is(err, protocol.ErrMalformedString):
		return ReasonProtocol
	}
	return ReasonReadError
}

// finish runs the disconnect processing: every room and private session
// the connection was in tells its other members, exactly as an explicit
// ExitRoom or ExitPrivate would.
func (c *conn) finish() {
	c.mu.Lock()
	if !c.closed {
		c.closeLocked(ReasonEOF)
	}
	reason := c.reason
	c.mu.Unlock()

	c.s.exitAllPrivate(c)
	for len(c.members) > 0 {
		c.s.exitRoom(c, c.members[len(c.members)-1])
	}
	if c.guestOf != nil {
		c.s.unguest(c.guestOf)
		c.guestOf = nil
	}
	c.s.untrack(c, reason)
}
