//go:build linux

package server

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/volanogo/volanogo/pkg/protocol"
)

// The event-loop core: what the epoll and io_uring engines share, written
// once. A few loops, each a goroutine locked to its OS thread, serve the
// TCP connections: a loop reads its connections' packets and runs the
// handlers (conn.handle) on its own goroutine, keeps their deadlines,
// pauses the ones the request rate paces, drains the ones being let go
// and releases the closed ones. How a loop waits and talks to the kernel
// is its poller's (poller[X]): epoll reports readiness and the loop reads;
// io_uring reports completed receives and sends. X is the poller's own
// state of a socket, kept in the socket (sock.x).
//
// A connection's socket moves through these states, each move a
// compare-and-swap:
//
//	accepted --serve--> attached --Close--> closing --release--> released
//	accepted --Close--> released (its descriptor closed at once)
//
// accepted: made by accept, tracked by the server or not, no loop has it;
// a close closes the descriptor, and serve, finding it closed, finishes
// the connection itself: the loop never sees it. attached: its loop owns
// it; a close shuts the socket down (the client sees the close now) and
// posts it to the loop. closing: the loop releases it once nothing of the
// poller's names its descriptor any more (io_uring: its last completion),
// and only then closes the descriptor: exactly once, by its owner.

// Socket states (sock.state).
const (
	sockAccepted int32 = iota
	sockAttached
	sockClosing
	sockReleased
)

// errWouldBlock is what a socket's read returns when it has nothing more
// now (or the read budget of this wake-up is spent). It is a timeout to
// protocol.Reader, which keeps a partial packet and may be called again.
var errWouldBlock = wouldBlock{}

type wouldBlock struct{}

func (wouldBlock) Error() string   { return "read would block" }
func (wouldBlock) Timeout() bool   { return true }
func (wouldBlock) Temporary() bool { return true }

// poller is how a loop waits and talks to the kernel. All but wantOut and
// wake run on the loop's goroutine.
type poller[X any] interface {
	// add starts watching a new connection of the loop.
	add(k *sock[X]) error
	// update makes what the poller waits for on k match its state:
	// input unless paused or at its end, room to write while bytes wait.
	update(k *sock[X])
	// wantOut is sock.wantOut's (conn.mu held; any goroutine).
	wantOut(k *sock[X])
	// inFlight tells whether bytes of k are in the poller's hands (a
	// send queued or under way): its write stall does not run then
	// (conn.mu held).
	inFlight(k *sock[X]) bool
	// remove stops watching k before its release; false while a request
	// still names its descriptor: the poller posts k when it is done.
	remove(k *sock[X]) bool
	// read reads what k's socket has for its connection's reader.
	read(k *sock[X], p []byte) (int, error)
	// poll submits what is prepared, waits for events (d < 0: until one
	// comes; 0: not at all; else at most d) and hands them to the loop
	// (loop.event, loop.woken). A wait with a limit keeps the loop's P
	// (waitKeepingP) unless quiet: the loop's last wait was long, and
	// this one goes through the scheduler.
	poll(d time.Duration, quiet bool) error
	// wake ends the loop's wait (any goroutine).
	wake()
	// deliver and relay are sock's (loopConn).
	deliver(k *sock[X], o *conn, b []byte)
	relay(k *sock[X], conns []*conn, ind, conf []byte) (int, bool)
	// stopped ends the poller's work (the loop's goroutine, last).
	stopped()
	// close releases what is left (the engine's stop, once no loop may
	// wake another).
	close()
}

// sock is one TCP connection of an event-loop engine: the net.Conn over
// the raw non-blocking socket that the accept loop, the connection's
// reader and conn.closeLocked see, and the state its loop keeps for it.
// What the loop touches for each event comes first, then the poller's
// state, then the deadlines.
type sock[X any] struct {
	c    *conn
	loop *loop[X]
	fd   int32
	slot int32 // index in loop.slots; -1 before register and after release

	x X // the poller's

	state  atomic.Int32 // sockAccepted ... sockReleased
	queued bool         // in loop.queue (guarded by loop.qmu)
	paused bool         // written by the loop under conn.mu
	// Guarded by conn.mu.
	endRead bool // the loop read the end of stream and releases it next (settle)
	sawEOF  bool // draining, the client closed: no more reading

	// Owned by the loop.
	pausedAt  int32 // index in loop.yielding (pauseBy 0) or loop.timed, -1 if in neither
	watchAt   int32 // index in loop.watch, -1 if not there
	batchLeft int32 // bytes of the current write batch not yet written (conn.mu)
	seen      uint32
	scanned   uint32          // c.packets at the last scan
	stallBy   int64           // unix nanos: the write stall deadline of the current batch (conn.mu)
	packetBy  int64           // unix nanos: the deadline of the packet arriving: before Access the Access's; after, the packet timeout's from the scan that saw it begun (0: none)
	idleAt    int64           // unix nanos: the next idle check (0: not armed)
	lingerBy  int64           // unix nanos: the end of the drain (0: not draining)
	pauseBy   int64           // unix nanos: a paused connection resumes then
	held      *protocol.Frame // the packet a paused connection handles on resuming
}

func newSock[X any](fd int) *sock[X] {
	return &sock[X]{fd: int32(fd), slot: -1, pausedAt: -1, watchAt: -1} //nolint:gosec // a descriptor fits
}

// loopEngine is a server's event loops over pollers of one kind.
type loopEngine[X any] struct {
	s        *Server
	loops    []*loop[X]
	fill     int // Config.LoopFill, or the engine's default
	wg       sync.WaitGroup
	reserved int // Ps counted in holdProcs
}

// loop is one event loop: a poller and its connections.
type loop[X any] struct {
	loopShare
	s         *Server
	p         poller[X]
	tick      time.Duration // the short scan's period
	fullEvery int           // ticks per full scan

	qmu       sync.Mutex // guards queue, signalled, sleeping, stop
	queue     []*sock[X]
	signalled bool // the poller was woken since the queue was last taken
	sleeping  bool // the loop waits (a post must wake it)
	stop      bool

	// Owned by the loop.
	slots     []*sock[X]
	free      []int32
	freeNext  []int32 // slots released in this round, free from the next
	open      int
	yielding  []*sock[X]   // paused until the next round (pauseBy 0)
	timed     pauseHeap[X] // paused until their pauseBy: by the request or chat rate, or held for their close
	due       []*sock[X]   // resumePaused's
	watch     []*sock[X]   // before Access with a deadline, or draining: the short scan's
	nextScan  time.Time
	waitFrom  time.Time // when the last wait began (waitTime)
	longWaits int       // waits in a row that took quietWait or more: from quietWaits on, the next goes through the scheduler
	ticks     int       // ticks since the last full scan
	pool      bufPool
	discard   [512]byte
}

// startLoops starts n loops (one per processor when n is 0), each making
// its poller on its own thread with newPoller.
func startLoops[X any](s *Server, n, fill int, newPoller func(l *loop[X]) (poller[X], error)) (*loopEngine[X], error) {
	if n <= 0 {
		// One per processor: each keeps its P while it waits (holdProcs
		// raises GOMAXPROCS by one for the rest of the process).
		n = baseProcs()
	}
	tick, fullEvery := scanTicks(&s.cfg)
	e := &loopEngine[X]{s: s, fill: fill}
	for range n {
		l := &loop[X]{s: s, tick: tick, fullEvery: fullEvery}
		ready := make(chan error, 1)
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			// A loop keeps its thread: the poller may need it (io_uring's
			// single issuer), and a loop moved between threads finds its
			// data out of that processor's cache.
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			p, err := newPoller(l)
			if err == nil {
				l.p = p // before ready: stop may wake it from then on
			}
			ready <- err
			if err != nil {
				return
			}
			l.run()
			p.stopped()
		}()
		if err := <-ready; err != nil {
			e.stop()
			return nil, err
		}
		e.loops = append(e.loops, l)
	}
	holdProcs(len(e.loops)) // the loops wait keeping their P
	e.reserved = len(e.loops)
	return e, nil
}

// scanTicks is the period of a loop's short scan (the drains, the Access
// deadlines) and how many of them make a full one (the idle timeout, the
// write stall, the packet timeout): a full scan every eighth of the
// shortest of those deadlines, between 5 ms and 4 s; a short one at most
// every 250 ms and every eighth of the Access deadline.
func scanTicks(cfg *Config) (time.Duration, int) {
	full := 4 * time.Second
	for _, d := range []time.Duration{cfg.IdleTimeout, cfg.PacketTimeout, writeStall} {
		if d > 0 {
			full = min(full, d/8)
		}
	}
	full = max(full, 5*time.Millisecond)
	tick := min(full, 250*time.Millisecond)
	if d := cfg.AccessTimeout; d > 0 {
		tick = min(tick, max(d/8, 5*time.Millisecond))
	}
	return tick, max(int(full/tick), 1)
}

func (e *loopEngine[X]) stop() {
	for _, l := range e.loops {
		l.qmu.Lock()
		l.stop = true
		l.qmu.Unlock()
		l.p.wake()
	}
	e.wg.Wait()
	for _, l := range e.loops {
		l.p.close()
	}
	holdProcs(-e.reserved)
	e.reserved = 0
}

func (e *loopEngine[X]) loopConns() []int32 {
	n := make([]int32, len(e.loops))
	for i, l := range e.loops {
		n[i] = l.conns.Load()
	}
	return n
}

// accept is the acceptor's accept function: the socket leaves Go's
// poller (a duplicate of its descriptor, sharing the non-blocking file
// description, stays; the original is closed), to be this engine's.
// Without a descriptor to spare (at the open-files limit) the connection
// is returned as it came, to be served by a goroutine.
func (e *loopEngine[X]) accept(tl *net.TCPListener) func() (net.Conn, error) {
	return func() (net.Conn, error) {
		nc, err := tl.AcceptTCP()
		if err != nil {
			return nil, err
		}
		rc, err := nc.SyscallConn()
		if err != nil {
			return nc, nil
		}
		fd := -1
		_ = rc.Control(func(s uintptr) { fd, _ = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0) })
		if fd < 0 {
			return nc, nil
		}
		_ = nc.Close()
		return newSock[X](fd), nil
	}
}

// serve hands a tracked connection to its loop, unless it was closed
// before (Shutdown, Drain): then its descriptor is closed already, and
// the connection is finished here.
func (e *loopEngine[X]) serve(c *conn) {
	k := c.eng.(*sock[X])
	if e.s.cfg.AccessTimeout > 0 {
		k.packetBy = time.Now().Add(e.s.cfg.AccessTimeout).UnixNano()
	}
	k.loop.conns.Add(1) // before a close may release it
	if !k.state.CompareAndSwap(sockAccepted, sockAttached) {
		k.loop.conns.Add(-1)
		c.finish()
		return
	}
	k.post()
}

// attach makes c the connection of k and picks its loop (loopConn).
func (k *sock[X]) attach(c *conn) {
	k.c = c
	c.fd = k.fd
	c.s.mu.Lock()
	if e, ok := c.s.eng.(*loopEngine[X]); ok {
		k.loop = pickLoop(e.loops, e.fill)
	}
	c.s.mu.Unlock()
}

// post queues the connection for its loop's attention and wakes the loop
// if it waits; before the loop has it, or after, it does nothing.
func (k *sock[X]) post() {
	if st := k.state.Load(); st != sockAttached && st != sockClosing {
		return
	}
	l := k.loop
	l.qmu.Lock()
	if k.queued {
		l.qmu.Unlock()
		return
	}
	k.queued = true
	l.queue = append(l.queue, k)
	l.unlockAndWake()
}

// kick wakes the loop if it waits, so that it handles what completed
// (another loop queued bytes behind a send of this one).
func (l *loop[X]) kick() {
	l.qmu.Lock()
	l.unlockAndWake()
}

// unlockAndWake unlocks l.qmu and wakes the loop if it waits and no wake-up
// is on its way already.
func (l *loop[X]) unlockAndWake() {
	wake := l.sleeping && !l.signalled
	if wake {
		l.signalled = true
	}
	l.qmu.Unlock()
	if wake {
		l.p.wake()
	}
}

func (k *sock[X]) wantOut() {
	k.stallBy = time.Now().Add(writeStall).UnixNano()
	k.batchLeft = batchBytes(len(k.c.out))
	k.loop.p.wantOut(k)
}

func (k *sock[X]) deliver(o *conn, b []byte) { k.loop.p.deliver(k, o, b) }

func (k *sock[X]) relay(c *conn, conns []*conn, ind, conf []byte) (int, bool) {
	return k.loop.p.relay(k, conns, ind, conf)
}

// Read reads for the connection's reader, through the poller.
func (k *sock[X]) Read(p []byte) (int, error) { return k.loop.p.read(k, p) }

// Write writes what the socket takes now; the server writes through
// conn.tryWrite and its loop, never through this.
func (k *sock[X]) Write(p []byte) (int, error) {
	n, err := writeNonblock(uintptr(k.fd), p)
	if err == nil && n < len(p) {
		err = errWouldBlock
	}
	return n, err
}

// Close closes a socket no loop has; for one a loop has, it shuts the
// socket down and posts it to the loop, which closes the descriptor once
// the connection is finished and nothing uses it. For a tracked
// connection it is called under conn.mu (closeLocked).
//
// When the loop itself read the client's close, it releases the
// connection as soon as the read returns (settle): a shutdown and a
// wake-up of the loop would only add two system calls to Mark's every
// exit.
func (k *sock[X]) Close() error {
	for {
		switch k.state.Load() {
		case sockAccepted:
			if k.state.CompareAndSwap(sockAccepted, sockReleased) {
				return unix.Close(int(k.fd))
			}
		case sockAttached:
			if k.state.CompareAndSwap(sockAttached, sockClosing) {
				if k.endRead {
					return nil
				}
				err := unix.Shutdown(int(k.fd), unix.SHUT_RDWR)
				k.post()
				return err
			}
		default:
			return nil
		}
	}
}

// SetReadLowWater has the kernel report the socket readable only once n
// bytes are in (SO_RCVLOWAT; protocol.LowWater): the reader asks for what
// a large packet still lacks, so that one trickled in a few bytes a write
// costs its loop a few wake-ups, not one a write. The loop calls it while
// it reads, so the descriptor is its own.
func (k *sock[X]) SetReadLowWater(n int) error {
	return unix.SetsockoptInt(int(k.fd), unix.SOL_SOCKET, unix.SO_RCVLOWAT, n)
}

// CloseWrite sends a FIN (conn.shutdownWriteLocked, under conn.mu).
func (k *sock[X]) CloseWrite() error {
	if k.state.Load() >= sockClosing {
		return nil
	}
	return unix.Shutdown(int(k.fd), unix.SHUT_WR)
}

func (k *sock[X]) SetNoDelay(on bool) error {
	v := 0
	if on {
		v = 1
	}
	return unix.SetsockoptInt(int(k.fd), unix.IPPROTO_TCP, unix.TCP_NODELAY, v)
}

func (k *sock[X]) SetWriteBuffer(n int) error {
	return unix.SetsockoptInt(int(k.fd), unix.SOL_SOCKET, unix.SO_SNDBUF, n)
}

func (k *sock[X]) SetReadBuffer(n int) error {
	return unix.SetsockoptInt(int(k.fd), unix.SOL_SOCKET, unix.SO_RCVBUF, n)
}

func (k *sock[X]) LocalAddr() net.Addr {
	sa, err := unix.Getsockname(int(k.fd))
	if err != nil {
		return &net.TCPAddr{}
	}
	return sockaddrTCP(sa)
}

func (k *sock[X]) RemoteAddr() net.Addr {
	sa, err := unix.Getpeername(int(k.fd))
	if err != nil {
		return &net.TCPAddr{}
	}
	return sockaddrTCP(sa)
}

// The loop keeps the deadlines; these are not used.
func (k *sock[X]) SetDeadline(time.Time) error      { return nil }
func (k *sock[X]) SetReadDeadline(time.Time) error  { return nil }
func (k *sock[X]) SetWriteDeadline(time.Time) error { return nil }

func sockaddrTCP(sa unix.Sockaddr) *net.TCPAddr {
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		return &net.TCPAddr{IP: net.IP(append([]byte(nil), a.Addr[:]...)), Port: a.Port}
	case *unix.SockaddrInet6:
		zone := ""
		if a.ZoneId != 0 {
			zone = strconv.Itoa(int(a.ZoneId))
		}
		return &net.TCPAddr{IP: net.IP(append([]byte(nil), a.Addr[:]...)), Port: a.Port, Zone: zone}
	}
	return &net.TCPAddr{}
}

// run is the loop: take what was posted, wait for events and handle
// them, keep the deadlines.
func (l *loop[X]) run() {
	for {
		q, stop := l.takeQueue()
		if stop {
			return
		}
		for _, k := range q {
			l.posted(k)
		}
		if len(l.yielding) > 0 {
			l.resumePaused(0) // those that yielded in the last round
		}
		d := l.waitTime()
		if err := l.p.poll(d, l.longWaits >= quietWaits); err != nil {
			l.s.log.Error("event loop: wait failed", "engine", l.s.Engine(), "err", err)
			return
		}
		l.qmu.Lock()
		l.sleeping = false
		l.qmu.Unlock()
		now := time.Now()
		if d != 0 && now.Sub(l.waitFrom) >= quietWait {
			l.longWaits++
		} else {
			l.longWaits = 0
		}
		if len(l.timed) > 0 && l.timed[0].pauseBy <= now.UnixNano() {
			l.resumePaused(now.UnixNano())
		}
		if l.open > 0 && !now.Before(l.nextScan) {
			if l.ticks++; l.ticks >= l.fullEvery {
				l.ticks = 0
				l.scan(now.UnixNano())
			} else {
				l.scanWatch(now.UnixNano())
			}
			l.nextScan = now.Add(l.tick)
		}
		l.free = append(l.free, l.freeNext...)
		l.freeNext = l.freeNext[:0]
	}
}

// takeQueue takes the posted connections.
func (l *loop[X]) takeQueue() (q []*sock[X], stop bool) {
	l.qmu.Lock()
	defer l.qmu.Unlock()
	if l.stop {
		// What was posted since its last round is let go: the server
		// stops when every connection is released, so these are late
		// wake-ups of released ones.
		for _, k := range l.queue {
			k.queued = false
		}
		l.queue = nil
		return nil, true
	}
	q = l.queue
	l.queue = nil
	for _, k := range q {
		k.queued = false
	}
	return q, false
}

// waitTime is how long the poller may wait: not at all when something
// was posted meanwhile, else until the next scan or resume, or for as
// long as it takes with no connection. The loop is sleeping from here
// (a post wakes it).
func (l *loop[X]) waitTime() time.Duration {
	d := time.Duration(-1)
	l.waitFrom = time.Now()
	if l.open > 0 {
		until := l.nextScan
		if len(l.timed) > 0 {
			if t := time.Unix(0, l.timed[0].pauseBy); t.Before(until) {
				until = t
			}
		}
		d = max(until.Sub(l.waitFrom), 0)
		if len(l.yielding) > 0 {
			d = 0
		}
	}
	l.qmu.Lock()
	if len(l.queue) > 0 || l.stop {
		d = 0
	} else {
		l.sleeping = true
	}
	l.qmu.Unlock()
	return d
}

// woken: the poller saw the wake-up (the queue is taken next round).
func (l *loop[X]) woken() {
	l.qmu.Lock()
	l.signalled = false
	l.qmu.Unlock()
}

// posted handles a posted connection: a new one is registered, then
// whatever happened to it (closed, draining) is settled.
func (l *loop[X]) posted(k *sock[X]) {
	if k.slot < 0 {
		if st := k.state.Load(); st != sockAttached && st != sockClosing {
			return // released already
		}
		l.register(k)
	}
	l.settle(k)
}

// register adds a new connection to the loop.
func (l *loop[X]) register(k *sock[X]) {
	c := k.c
	if n := len(l.free); n > 0 {
		k.slot = l.free[n-1]
		l.free = l.free[:n-1]
	} else {
		k.slot = int32(len(l.slots)) //nolint:gosec // bounded by the open-files limit
		l.slots = append(l.slots, nil)
	}
	l.slots[k.slot] = k
	l.open++
	if l.open == 1 {
		l.nextScan = time.Now().Add(l.tick)
	}
	if k.packetBy != 0 && !c.accessed {
		l.addWatch(k)
	}
	if err := l.p.add(k); err != nil {
		c.closeFor(ReasonReadError, fmt.Errorf("register with the %s loop: %w", l.s.Engine(), err))
	}
}

// event handles what the poller saw of k: in, input (or its end) to read;
// out, room to write; hup, the client hung up or the socket failed.
func (l *loop[X]) event(k *sock[X], in, out, hup bool) {
	if out {
		l.writeOut(k)
	}
	if in {
		switch {
		case k.paused:
			if hup {
				l.resume(k) // a client that hung up is not paced
			}
		case k.lingerBy != 0:
			l.drainIn(k)
		default:
			l.readIn(k)
		}
	}
	l.settle(k)
}

// settle releases a closed connection, starts the drain of one being let
// go, and has the poller wait for what an open one needs.
func (l *loop[X]) settle(k *sock[X]) {
	if k.slot < 0 {
		return
	}
	c := k.c
	c.mu.Lock()
	closed, lingering := c.closed, c.lingering
	c.mu.Unlock()
	if closed {
		l.release(k)
		return
	}
	if lingering != "" && k.lingerBy == 0 && c.share.doomed {
		// held for its close: closed now, its input never read
		if k.paused {
			l.unpause(k)
		}
		c.doomedClose()
		l.release(k)
		return
	}
	if lingering != "" && k.lingerBy == 0 {
		// drain: a second at most for the reply to go out and the
		// client to close
		k.lingerBy = time.Now().Add(time.Second).UnixNano()
		l.addWatch(k)
		if k.paused {
			l.unpause(k)
		}
		l.drainIn(k)
		c.mu.Lock()
		closed = c.closed
		c.mu.Unlock()
		if closed {
			l.release(k)
			return
		}
	}
	l.p.update(k)
}

// readIn handles the packets that what the socket has completes.
func (l *loop[X]) readIn(k *sock[X]) {
	c := k.c
	if c.reader == nil {
		c.reader = l.pool.reader(k, c.s.cfg.MaxPacket)
		if c.scratch == nil {
			c.scratch = l.pool.scratch()
		}
	}
	for n := 0; ; n++ {
		c.mu.Lock()
		stop := c.closed || c.lingering != ""
		c.mu.Unlock()
		if stop {
			return
		}
		if n == yieldEvery {
			l.pause(k, nil, 0) // the others' turn; on after this round's sends
			return
		}
		f, err := c.reader.Next()
		if err != nil {
			if errors.Is(err, errWouldBlock) {
				if c.reader.Buffered() == 0 {
					// Nothing of a next packet yet: the reader and the
					// scratch buffer go back to the loop's pool now,
					// for the next socket that reads.
					l.pool.giveBack(c)
				}
				return
			}
			if err == io.EOF {
				c.mu.Lock()
				k.endRead = true
				c.mu.Unlock()
			}
			if c.doomOnRead(err) {
				l.holdDoomed(k)
				return
			}
			c.readFailed(err)
			return
		}
		c.received(f)
		if f.ID != protocol.IDChat {
			if d := c.throttleDelay(); d > 0 {
				l.pause(k, &f, d)
				return
			}
			c.takeToken()
		} else if d := c.chatDelay(); d > 0 {
			l.pause(k, &f, d) // charged: handled on resuming
			return
		}
		c.handle(f)
		if c.share.doomed {
			l.holdDoomed(k)
			return
		}
		if c.paceRoom {
			c.paceRoom = false
			l.pause(k, nil, paceRoom)
			return
		}
	}
}

// pause reads nothing more of a connection for d: one paced by the
// request or chat rate, which handles its packet held on resuming; or with d 0
// one that yields after yieldEvery packets (held nil): it reads on at the
// top of the next round, once the sends of this one are out, so that a
// connection flooding its room is paced by what the kernel takes rather
// than have a round queue megabytes for its room before any send (its
// receivers are cut only for their own failure to read).
func (l *loop[X]) pause(k *sock[X], held *protocol.Frame, d time.Duration) {
	k.held = held // valid: the reader is not called until resume
	if k.paused {
		l.unlistPause(k)
	} else {
		k.c.mu.Lock()
		k.paused = true
		k.c.mu.Unlock()
	}
	k.pauseBy = 0
	if d > 0 {
		k.pauseBy = time.Now().Add(d).UnixNano()
	}
	l.listPause(k)
	l.p.update(k)
}

// holdDoomed holds a connection doomed by what it sent, unread, for the
// violation hold; it is closed on resuming (or at once with no hold).
func (l *loop[X]) holdDoomed(k *sock[X]) {
	if d := l.s.cfg.ViolationHold; d > 0 {
		l.pause(k, nil, d)
		k.c.beginHold()
		return
	}
	k.c.doomedClose()
}

// unpause takes k out of the paused lists.
func (l *loop[X]) unpause(k *sock[X]) {
	k.c.mu.Lock()
	k.paused = false
	k.c.mu.Unlock()
	k.held = nil
	l.unlistPause(k)
}

// listPause puts a paused k in the list its pauseBy says: yielding, or
// the heap of timed pauses. Either costs O(log n) at most, so that a
// round's work does not grow with the connections paused (an attacker's
// thousands of held connections).
func (l *loop[X]) listPause(k *sock[X]) {
	if k.pauseBy == 0 {
		k.pausedAt = int32(len(l.yielding)) //nolint:gosec // bounded by the connections
		l.yielding = append(l.yielding, k)
		return
	}
	l.timed.push(k)
}

// unlistPause takes k out of the list listPause put it in, if it is still
// there (resumePaused takes the due ones off the heap first).
func (l *loop[X]) unlistPause(k *sock[X]) {
	if k.pausedAt < 0 {
		return
	}
	if k.pauseBy == 0 {
		removeAt(&l.yielding, &k.pausedAt, func(o *sock[X]) *int32 { return &o.pausedAt })
		return
	}
	l.timed.removeAt(int(k.pausedAt))
}

// resumePaused resumes the paused connections due by now; with now 0,
// the yielding ones.
func (l *loop[X]) resumePaused(now int64) {
	due := l.due[:0]
	if now == 0 {
		due = append(due, l.yielding...)
	} else {
		for len(l.timed) > 0 && l.timed[0].pauseBy <= now {
			due = append(due, l.timed.removeAt(0))
		}
	}
	for _, k := range due {
		l.resume(k)
		l.settle(k)
	}
	clear(due)
	l.due = due[:0]
}

// resume handles a paused connection's held packet and reads on.
func (l *loop[X]) resume(k *sock[X]) {
	if !k.paused {
		return
	}
	f := k.held
	l.unpause(k)
	l.p.update(k)
	c := k.c
	c.mu.Lock()
	stop := c.closed || c.lingering != ""
	c.mu.Unlock()
	if stop {
		return
	}
	if c.share.doomed { // held for the violation hold, unread
		c.doomedClose()
		return
	}
	if f != nil { // paced by the request or chat rate, not yielding
		if f.ID != protocol.IDChat {
			c.throttleResume()
			c.takeToken()
		}
		c.handle(*f)
		if c.share.doomed {
			l.holdDoomed(k)
			return
		}
	}
	l.readIn(k)
}

// drainIn reads and discards the input of a connection being let go; at
// its end of stream the connection closes, once its reply is out.
func (l *loop[X]) drainIn(k *sock[X]) {
	if k.sawEOF {
		return
	}
	for {
		_, err := k.Read(l.discard[:])
		if err == nil {
			continue
		}
		if errors.Is(err, errWouldBlock) {
			return
		}
		break // the end of stream, or an error
	}
	c := k.c
	c.mu.Lock()
	if c.flushing && !c.closed {
		k.sawEOF = true // closed by writeOut once the reply is out
	} else {
		c.closeLocked(c.lingering)
	}
	c.mu.Unlock()
}

// writeOut writes what waits in out as far as the socket takes it. Like
// the goroutine engine's writer, a batch (what waited when it began) must
// be written within writeStall, or the client is a slow consumer.
func (l *loop[X]) writeOut(k *sock[X]) {
	c := k.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || !c.flushing || l.p.inFlight(k) {
		return // (a send in the poller's hands goes on from its completion)
	}
	n, err := c.tryWrite(c.out)
	if err != nil {
		c.detail = err.Error()
		c.closeLocked(ReasonWriteError)
		return
	}
	c.out = c.out[:copy(c.out, c.out[n:])]
	c.taken += int64(n)
	k.batchLeft -= batchBytes(n)
	switch {
	case len(c.out) == 0:
		k.flushed()
	case k.batchLeft <= 0:
		k.batchLeft = batchBytes(len(c.out))
		k.stallBy = time.Now().Add(writeStall).UnixNano()
	}
}

// flushed ends a write batch: nothing waits any more (conn.mu held). A
// connection being let go is shut down for writing now, or closed if the
// client has closed already.
func (k *sock[X]) flushed() {
	c := k.c
	c.flushing = false
	if cap(c.out) > 4096 {
		c.out = nil
	}
	if c.lingering != "" {
		if k.sawEOF {
			c.closeLocked(c.lingering)
			return
		}
		c.shutdownWriteLocked()
	}
}

// batchBytes is n as a write batch's byte count: a batch is at most the
// send buffer, and a larger one is counted as 2 GiB.
func batchBytes(n int) int32 {
	return int32(min(n, 1<<31-1)) //nolint:gosec // bounded just now
}

// addWatch puts k in the short scan's list (scanWatch).
func (l *loop[X]) addWatch(k *sock[X]) {
	if k.watchAt < 0 {
		k.watchAt = int32(len(l.watch)) //nolint:gosec // bounded by the connections
		l.watch = append(l.watch, k)
	}
}

// removeAt removes the element at *at from *list by moving the last one
// into its place (whose index index(o) gives), and sets *at to -1.
func removeAt[T any](list *[]T, at *int32, index func(T) *int32) {
	i := *at
	if i < 0 {
		return
	}
	s := *list
	last := len(s) - 1
	if int(i) != last {
		s[i] = s[last]
		*index(s[i]) = i
	}
	var zero T
	s[last] = zero
	*list = s[:last]
	*at = -1
}

// scan checks the deadlines of all the loop's connections (a full tick).
func (l *loop[X]) scan(now int64) {
	for _, k := range l.slots {
		if k != nil && l.check(k, now) {
			l.settle(k)
		}
	}
	l.scanWatch(now)
}

// scanWatch checks the Access deadlines of the connections that have not
// sent their Access and the drains' ends (a tick), and keeps in the list
// those that still have one of them to come.
func (l *loop[X]) scanWatch(now int64) {
	for i := 0; i < len(l.watch); {
		k := l.watch[i]
		c := k.c
		switch {
		case k.lingerBy != 0:
			if now > k.lingerBy {
				c.close(c.lingering)
				l.settle(k) // released: out of the list
				if i < len(l.watch) && l.watch[i] == k {
					i++
				}
				continue
			}
		case !c.accessed && k.packetBy != 0:
			if now > k.packetBy {
				c.close(ReasonAccessTimeout)
				l.settle(k)
				if i < len(l.watch) && l.watch[i] == k {
					i++
				}
				continue
			}
		default:
			removeAt(&l.watch, &k.watchAt, func(o *sock[X]) *int32 { return &o.watchAt })
			continue // the last one moved here
		}
		i++
	}
}

// check checks the deadlines of one connection at now: the end of its
// drain, a slow consumer's write stall, the Access and idle timeouts (a
// Ping first, then the close); and gives back to the pool the reader and
// scratch buffer of a connection that read nothing since the last scan.
// It reports whether the loop must settle k.
func (l *loop[X]) check(k *sock[X], now int64) bool {
	c := k.c
	cfg := &c.s.cfg
	c.mu.Lock()
	switch {
	case c.closed:
	case k.lingerBy != 0:
		if now > k.lingerBy {
			c.closeLocked(c.lingering)
		}
	case c.flushing && !l.p.inFlight(k) && now > k.stallBy:
		c.closeLocked(ReasonSlowConsumer)
	}
	closed := c.closed
	c.mu.Unlock()
	if closed || k.lingerBy != 0 {
		return true
	}
	packets := uint32(c.packets) //nolint:gosec // compared for equality between two scans
	prev := k.scanned
	if packets == k.scanned && !k.paused && c.reader != nil && c.reader.Buffered() == 0 {
		// Idle since the last scan: its reader and scratch buffer go
		// back to the pool (readIn takes them back), so that thousands
		// of idle connections cost their state only.
		l.pool.giveBack(c)
	}
	k.scanned = packets
	if !c.accessed {
		if k.packetBy != 0 && now > k.packetBy {
			c.close(ReasonAccessTimeout)
			return true
		}
		return false
	}
	if d := cfg.PacketTimeout; d > 0 {
		// a packet arriving: due a packet timeout from the scan that
		// saw it begun (a packet that completed since was another)
		var arriving bool
		if c.reader != nil {
			_, arriving = c.reader.Partial()
		}
		switch {
		case !arriving:
			k.packetBy = 0
		case k.packetBy == 0 || packets != prev:
			k.packetBy = now + int64(d)
		case now > k.packetBy:
			c.close(ReasonPacketTimeout)
			return true
		}
	}
	if cfg.IdleTimeout <= 0 {
		return false
	}
	if k.idleAt == 0 {
		k.idleAt, k.seen = now+int64(cfg.IdleTimeout), packets
		return false
	}
	if now < k.idleAt {
		return false
	}
	if packets != k.seen {
		c.strikes = 0
	} else {
		c.strikes++
		if c.strikes >= 2 {
			c.close(ReasonIdle)
			return true
		}
		c.sendPing()
	}
	k.idleAt, k.seen = now+int64(cfg.IdleTimeout), packets
	return true
}

// release closes a finished connection's descriptor and runs its
// disconnect processing, once nothing of the poller's uses the
// descriptor.
func (l *loop[X]) release(k *sock[X]) {
	if k.slot < 0 || !l.p.remove(k) {
		return
	}
	c := k.c
	c.mu.Lock()
	k.state.Store(sockReleased)
	_ = unix.Close(int(k.fd))
	c.fd = -1
	c.mu.Unlock()
	l.slots[k.slot] = nil
	l.freeNext = append(l.freeNext, k.slot)
	k.slot = -1
	if k.paused {
		l.unpause(k)
	}
	removeAt(&l.watch, &k.watchAt, func(o *sock[X]) *int32 { return &o.watchAt })
	l.open--
	l.conns.Add(-1)
	c.finish()
	l.pool.giveBack(c)
}

// procs counts the Ps that the event loops of this process hold while
// they wait. One P is kept for the rest of the process (the accept loop,
// the metrics server, timers, the GC's workers): GOMAXPROCS is raised to
// the loops plus one when it is not already as many.
var procs struct {
	sync.Mutex
	held int // Ps held by running event loops
	base int // GOMAXPROCS before the loops came (while held > 0)
}

// baseProcs is GOMAXPROCS as it was before the event loops raised it, or
// the processors this process may run on if they are fewer.
func baseProcs() int {
	procs.Lock()
	defer procs.Unlock()
	if procs.held > 0 {
		return min(procs.base, runtime.NumCPU())
	}
	return min(runtime.GOMAXPROCS(0), runtime.NumCPU())
}

// holdProcs counts n more loops (negative: fewer) and sets GOMAXPROCS.
func holdProcs(n int) {
	procs.Lock()
	defer procs.Unlock()
	if procs.held == 0 {
		procs.base = runtime.GOMAXPROCS(0)
	}
	procs.held += n
	want := procs.base
	if procs.held > 0 {
		want = max(want, procs.held+1)
	}
	runtime.GOMAXPROCS(want)
}

// quietWait and quietWaits: a loop whose last quietWaits waits (with the
// rounds after them) each lasted quietWait, sysmon's preemption period,
// or more is quiet, and its next wait goes through the scheduler. A loop
// that keeps its P through such waits is sent a preemption signal every
// 10 ms (EINTR, a yield, the wait again: about 2% of a processor for each
// idle loop with a connection open, measured); through the scheduler,
// each wake-up costs the P's return instead, which a paced run's loop,
// woken every few milliseconds, would pay more often than it is
// preempted (one wait of 1 ms made the server's CPU per message 5-20%
// higher in a paced run of 2,000 rooms of 2; one of 10 ms, 4-21% in one
// of 200 rooms).
const (
	quietWait  = 10 * time.Millisecond
	quietWaits = 3
)

// waitKeepingP waits in a raw system call (trap, a1..a4) keeping the
// loop's P, as the kernel floor's thread does: through the scheduler's
// system call path, a wait of more than 20 µs with no idle P has its P
// taken by sysmon and handed to another thread, and the loop must get one
// back on its way out. The wait is still preemptible: sysmon's or the
// GC's preemption signal ends it (EINTR), and the loop yields.
func waitKeepingP(trap, a1, a2, a3, a4 uintptr) (uintptr, error) {
	r, _, errno := unix.RawSyscall6(trap, a1, a2, a3, a4, 0, 0)
	switch errno {
	case 0:
		return r, nil
	case unix.EINTR:
		runtime.Gosched() // most likely a preemption request
		return 0, nil
	}
	return 0, os.NewSyscallError("wait", errno)
}

// pauseHeap is a loop's timed pauses, a binary heap by pauseBy (soonest
// first); each sock's pausedAt is its index.
type pauseHeap[X any] []*sock[X]

func (h *pauseHeap[X]) push(k *sock[X]) {
	k.pausedAt = int32(len(*h)) //nolint:gosec // bounded by the connections
	*h = append(*h, k)
	h.up(len(*h) - 1)
}

// removeAt takes the sock at i out of the heap and returns it.
func (h *pauseHeap[X]) removeAt(i int) *sock[X] {
	s := *h
	k, last := s[i], len(s)-1
	if i != last {
		h.swap(i, last)
	}
	s[last] = nil
	*h = s[:last]
	if i != last && !h.down(i) {
		h.up(i)
	}
	k.pausedAt = -1
	return k
}

func (h pauseHeap[X]) swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].pausedAt, h[j].pausedAt = int32(i), int32(j) //nolint:gosec // bounded by the connections
}

func (h pauseHeap[X]) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if h[p].pauseBy <= h[i].pauseBy {
			return
		}
		h.swap(i, p)
		i = p
	}
}

// down sifts i down; it tells whether i moved.
func (h pauseHeap[X]) down(i int) bool {
	start := i
	for {
		c := 2*i + 1
		if c >= len(h) {
			break
		}
		if r := c + 1; r < len(h) && h[r].pauseBy < h[c].pauseBy {
			c = r
		}
		if h[i].pauseBy <= h[c].pauseBy {
			break
		}
		h.swap(i, c)
		i = c
	}
	return i > start
}
