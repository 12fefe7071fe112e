//go:build linux

package server

import (
	"cmp"
	"errors"
	"io"
	"math"
	"net"
	"os"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/volanogo/volanogo/pkg/protocol"
)

// The epoll engine (Config.Engine EngineEpoll) serves TCP connections
// without a goroutine each: a few event loops, each a goroutine that
// waits in epoll_wait keeping its P (evLoop.wait), read the ready sockets
// and run the same packet handlers (conn.handle) as the goroutine
// engine, on the loop's goroutine. Relaying is unchanged: a chat is written by the sender's
// loop, under the room's lock, straight into each receiver's socket;
// what a socket does not take waits in the receiver's buffer, and the
// receiver's own loop writes it when epoll reports room (EPOLLOUT),
// instead of a writer goroutine.
//
// The accept loop takes connections from the listener as before; each
// socket then leaves Go's poller (a duplicate of its descriptor is kept,
// the net.Conn closed: a listener's RawConn cannot wait for readiness,
// so accept4 on it is not an option). A connection's descriptor is closed by its loop only: a
// close from anywhere else (a slow consumer cut by another loop's relay,
// Shutdown) shuts the socket down, which the loop sees as readable, and
// posts it to the loop.
//
// Readiness is level-triggered. A ready socket gets one read per wait:
// the packets that read completes are handled, and a socket with more
// to read is reported again by the next wait, after the other ready
// sockets have had their turn (the goroutine engine yields every 32
// packets for the same fairness).
//
// A connection holds a reader and a scratch buffer only while it has
// part of a packet: a read that leaves none gives them back to the
// loop's pool at once, for the next socket that reads, which finds them
// in the cache. At 19,000 mostly idle connections they would be half the
// memory. (Until this, a connection kept them until a scan found it
// idle: in a paced run, where each of 19,000 users reads every second,
// the scans walked thousands of them four times a second, and the
// readers the pool could not keep went to the GC.)
//
// Deadlines (the idle timeout, the write stall) are checked by a scan of
// all the loop's connections every full tick: an eighth of the shortest
// of them, between 5 ms and 4 s. Every tick (at most 250 ms, and at most
// an eighth of the Access deadline) a shorter scan visits only the
// connections that drain after a refusal (a second at most), to end the
// drains, and those that have not yet sent their Access, for its
// deadline. (The Access deadline, 10 s by default, made the full scan
// walk every connection each second: at 19,000 connections, about 1% of
// the server's time went to cache misses on connections that had long
// passed their Access.)
// A connection paced by --request-rate is paused (no EPOLLIN) until its
// wait is over, rather than sleeping on the loop.

func checkEngine(name string) error {
	switch name {
	case EngineGoroutine, EngineEpoll, EngineURing, EngineAuto:
		return nil
	}
	return errors.New("engine must be goroutine, epoll, uring or auto (got " + strconv.Quote(name) + ")")
}

// errWouldBlock is what an evSock read returns when the socket has
// nothing more now (or the read budget of this wake-up is spent). It is
// a timeout to protocol.Reader, which keeps a partial packet and may be
// called again.
var errWouldBlock = wouldBlock{}

type wouldBlock struct{}

func (wouldBlock) Error() string   { return "read would block" }
func (wouldBlock) Timeout() bool   { return true }
func (wouldBlock) Temporary() bool { return true }

// evSock states.
const (
	sockLoose    = iota // accepted, not yet handed to a loop: Close closes it
	sockAttached        // a loop owns it: Close shuts it down and tells the loop
	sockClosing         // shut down, the loop will close it
	sockClosed          // the descriptor is closed
)

// evSock is one TCP connection of the epoll engine: a net.Conn over the
// raw non-blocking socket (what the accept loop, protocol.Reader and
// closeLocked see) and the state its loop keeps for it.
//
// What the loop reads for every event (the descriptor, the connection,
// the read budget, paused, active) is on the first of its two cache
// lines; it is 128 bytes, a size class of whole lines
// (TestEvSockLayout).
type evSock struct {
	rawSock
	c    *conn
	loop *evLoop

	// Owned by the loop.
	budget int32 // reads left in this wake-up
	slot   int32 // index in loop.slots; -1 once released
	active bool  // in loop.active: draining (lingerBy set)
	queued bool  // in loop.queue (guarded by loop.qmu)

	// Guarded by conn.mu.
	registered bool
	endRead    bool // the loop read the end of stream and releases it next (settle)
	paused     bool
	sawEOF     bool // draining, the client closed: no more reading
	mask       uint32
	batchLeft  int32 // bytes of the current batch not yet written (at most the send buffer)

	loopDeadlines       // owned by the loop
	stallBy       int64 // unix nanos: the write stall deadline of the current batch (conn.mu)
}

func (k *evSock) Read(p []byte) (int, error) {
	if k.budget <= 0 || len(p) == 0 {
		return 0, errWouldBlock
	}
	k.budget--
	for {
		n, _, errno := syscall.RawSyscall6(sysRecv, uintptr(k.fd),
			uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)), 0, 0, 0)
		switch {
		case errno == syscall.EINTR:
			continue
		case errno == syscall.EAGAIN:
			return 0, errWouldBlock
		case errno != 0:
			return 0, os.NewSyscallError("read", errno)
		case n == 0:
			return 0, io.EOF
		}
		return int(n), nil
	}
}

// Close closes a socket no loop has; for one a loop has, it shuts the
// socket down (the client sees the close now) and tells the loop, which
// closes the descriptor once the connection is finished. For a tracked
// connection it is called under conn.mu (closeLocked).
//
// When the loop itself read the client's close, it releases the
// connection as soon as the read returns (settle): a shutdown and a
// wake-up of the loop would only add two system calls to Mark's every
// exit, so the descriptor is simply left for release to close.
func (k *evSock) Close() error {
	if k.endRead && k.state.CompareAndSwap(sockAttached, sockClosing) {
		return nil
	}
	return k.close(k.post)
}

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

// attachConn makes c the connection of k (newTCPConn) and picks its
// loop, before the connection is tracked (so before anything may post
// it).
func (k *evSock) attachConn(c *conn) {
	k.c = c
	c.ev = k
	c.fd = k.fd
	k.remote = nil // c.remote has it
	c.s.mu.Lock()
	if e := c.s.ev; e != nil {
		k.loop = pickLoop(e.loops, e.fill)
	}
	c.s.mu.Unlock()
}

// post queues the connection for its loop's attention (new, closed, or
// draining) and wakes the loop.
func (k *evSock) post() {
	l := k.loop
	if l == nil {
		return
	}
	l.qmu.Lock()
	if k.queued {
		l.qmu.Unlock()
		return
	}
	k.queued = true
	l.queue = append(l.queue, k.c)
	wake := !l.signalled
	l.signalled = true
	l.qmu.Unlock()
	if wake {
		l.wake()
	}
}

// evEngine is a server's event loops.
type evEngine struct {
	loops    []*evLoop
	fill     int // Config.LoopFill, or the engine's default
	wg       sync.WaitGroup
	reserved int // loops counted in procs
}

// evLoop is one event loop: an epoll instance and its connections.
type evLoop struct {
	loopShare
	s            *Server
	epfd, wakefd int
	tick         time.Duration
	fullEvery    int // ticks per full scan
	// coalesce is Config.Coalesce, as a timespec for nanosleep (zero:
	// none).
	coalesce unix.Timespec

	qmu       sync.Mutex // guards queue, signalled, stop
	queue     []*conn
	signalled bool
	stop      bool

	// Owned by the loop.
	slots    []*evSock // by epoll's data
	free     []int32
	freeNext []int32 // slots released in this pass, free from the next
	open     int
	paused   []*conn
	nextScan time.Time
	ticks    int     // ticks since the last full scan
	active   []*conn // connections draining (evSock.active)
	fresh    []*conn // connections registered with an Access deadline, until they pass it or Access
	events   []unix.EpollEvent
	discard  [512]byte
	pool     bufPool
}

// wakeSlot marks the eventfd in epoll's data.
const wakeSlot = -1

// engineAccept returns the acceptor's accept function: the listener's
// own, or on the epoll engine accept4 on its descriptor.
func (s *Server) engineAccept(ln net.Listener) func() (net.Conn, error) {
	tl, ok := ln.(*net.TCPListener)
	if ok && s.Engine() == EngineURing {
		return s.urAccept(tl)
	}
	if s.Engine() != EngineEpoll || !ok || s.startEngine() == nil {
		return ln.Accept
	}
	return acceptRaw(tl, func(fd int, remote *net.TCPAddr) net.Conn {
		return &evSock{rawSock: rawSock{fd: fd, remote: remote}, slot: -1}
	})
}

// startEngine starts the loops once; nil if they cannot be (logged: the
// connections are then served by goroutines).
func (s *Server) startEngine() *evEngine {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ev != nil {
		return s.ev
	}
	n := s.cfg.Loops
	if n <= 0 {
		// One per processor: each loop keeps its P while it waits
		// (holdProcs raises GOMAXPROCS by one for the rest of the
		// process). Measured on 2 processors, two loops cost the server
		// about what one did per message but took a quarter off the
		// client's CPU at 475 and 950 rooms (its reads come in fuller
		// batches) and carried 11% more msg/s at 950 rooms.
		n = baseProcs()
	}
	full := 4 * time.Second
	for _, d := range []time.Duration{s.cfg.IdleTimeout, writeStall} {
		if d > 0 {
			full = min(full, d/8)
		}
	}
	full = max(full, 5*time.Millisecond)
	tick := min(full, 250*time.Millisecond)
	if d := s.cfg.AccessTimeout; d > 0 {
		tick = min(tick, max(d/8, 5*time.Millisecond))
	}
	fullEvery := max(int(full/tick), 1)
	e := &evEngine{fill: cmp.Or(s.cfg.LoopFill, epollLoopFill)}
	for range n {
		l, err := newEvLoop(s, tick, fullEvery)
		if err != nil {
			s.log.Error("epoll engine: cannot start, serving with goroutines", "err", err)
			e.stop()
			return nil
		}
		e.loops = append(e.loops, l)
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			// A loop keeps its thread: yielding to a preemption
			// request otherwise moved it between threads, and each
			// move found the loop's data out of that processor's
			// cache and its thread waiting to be scheduled.
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			l.run()
		}()
	}
	holdProcs(len(e.loops))
	e.reserved = len(e.loops)
	s.ev = e
	return e
}

// procs counts the Ps that the event loops of this process hold while
// they wait (evLoop.wait). One P is kept for the rest of the process
// (the accept loop, the metrics server, timers, the GC's workers):
// GOMAXPROCS is raised to the loops plus one when it is not already as
// many.
var procs struct {
	sync.Mutex
	held int // Ps held by running event loops
	base int // GOMAXPROCS before the loops came (while held > 0)
}

// baseProcs is GOMAXPROCS as it was before the event loops raised it.
func baseProcs() int {
	procs.Lock()
	defer procs.Unlock()
	if procs.held > 0 {
		return procs.base
	}
	return runtime.GOMAXPROCS(0)
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

// stopEngine stops the loops (Shutdown, once every connection is
// finished).
func (s *Server) stopEngine() {
	s.stopURing()
	s.mu.Lock()
	e := s.ev
	s.ev = nil
	s.mu.Unlock()
	if e != nil {
		e.stop()
	}
}

func (e *evEngine) stop() {
	for _, l := range e.loops {
		l.qmu.Lock()
		l.stop = true
		l.qmu.Unlock()
		l.wake()
	}
	e.wg.Wait()
	for _, l := range e.loops {
		unix.Close(l.epfd)
		unix.Close(l.wakefd)
	}
	holdProcs(-e.reserved)
	e.reserved = 0
}

// serveConn serves a tracked connection: on its goroutine, or on a loop.
func (s *Server) serveConn(c *conn) {
	if c.ur != nil {
		s.urServe(c)
		return
	}
	k := c.ev
	if k == nil {
		go c.serve()
		return
	}
	if k.loop == nil {
		// the engine stopped (the server is closing)
		c.close(ReasonShutdown)
		c.finish()
		return
	}
	if s.cfg.AccessTimeout > 0 {
		k.accessBy = time.Now().Add(s.cfg.AccessTimeout).UnixNano()
	}
	k.loop.conns.Add(1) // before a close may release it
	k.state.Store(sockAttached)
	k.post()
}

func newEvLoop(s *Server, tick time.Duration, fullEvery int) (*evLoop, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("epoll_create1", err)
	}
	wakefd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		unix.Close(epfd)
		return nil, os.NewSyscallError("eventfd", err)
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: wakeSlot}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, wakefd, &ev); err != nil {
		unix.Close(epfd)
		unix.Close(wakefd)
		return nil, os.NewSyscallError("epoll_ctl", err)
	}
	return &evLoop{s: s, epfd: epfd, wakefd: wakefd, tick: tick, fullEvery: fullEvery, events: make([]unix.EpollEvent, 256),
		coalesce: unix.NsecToTimespec(int64(s.cfg.Coalesce))}, nil
}

func (l *evLoop) wake() {
	one := [8]byte{1}
	_, _ = unix.Write(l.wakefd, one[:])
}

// run is the loop.
func (l *evLoop) run() {
	for {
		n, err := l.wait(l.waitMillis())
		if err != nil {
			l.s.log.Error("epoll engine: epoll_wait failed", "err", err)
			return
		}
		for i := range max(n, 0) {
			ev := l.events[i]
			if ev.Fd == wakeSlot {
				var b [8]byte
				_, _ = unix.Read(l.wakefd, b[:])
				if l.runQueue() {
					return
				}
				continue
			}
			if k := l.slots[ev.Fd]; k != nil {
				l.service(k, ev.Events)
			}
		}
		now := time.Now()
		if len(l.paused) > 0 {
			l.resumePaused(now.UnixNano())
		}
		if !now.Before(l.nextScan) {
			if l.ticks++; l.ticks >= l.fullEvery {
				l.ticks = 0
				l.scan(now.UnixNano())
			} else {
				l.scanActive(now.UnixNano())
			}
			l.nextScan = now.Add(l.tick)
		}
		l.free = append(l.free, l.freeNext...)
		l.freeNext = l.freeNext[:0]
		if n > 0 && n < coalesceFew && l.coalesce.Nsec > 0 {
			l.nap()
		}
	}
}

// coalesceFew is the events of a round under which a loop with
// Config.Coalesce naps before its next wait: a fuller round means
// events are coming faster than one at a time, and more are waiting.
const coalesceFew = 32

// nap sleeps Config.Coalesce (under 10 ms: the timespec's seconds are
// zero) in a raw system call, keeping the loop's P as its wait does, so
// that the events of that time are taken in one wake-up. The senders'
// wake-ups of a loop that naps are cheaper too: nobody waits on its
// epoll. A signal (a preemption request) ends the nap early.
func (l *evLoop) nap() {
	_, _, errno := syscall.RawSyscall(unix.SYS_NANOSLEEP, uintptr(unsafe.Pointer(&l.coalesce)), 0, 0)
	if errno == syscall.EINTR {
		runtime.Gosched()
	}
}

// wait waits up to msec (-1: forever) for events.
//
// With connections open it is a raw system call: the loop keeps its P
// (processor) while it waits, as the kernel floor's thread does. Through
// the scheduler's system call path (entersyscall), a wait of more than
// 20 µs with no idle P has its P taken by sysmon and handed to another
// thread, and the loop must get one back on its way out: at 15 rooms
// that kept sysmon waking every 200 µs and cost about a tenth of the
// server's CPU, in nanosleep, futex and thread switches. A P held this
// way is one the rest of the process cannot use, so one P is kept for
// it (holdProcs). The wait is still preemptible:
// sysmon's or the GC's preemption signal ends it (EINTR), and the loop
// yields. With no connection the loop waits forever, through the
// scheduler, its P free.
func (l *evLoop) wait(msec int) (int, error) {
	if msec < 0 {
		n, err := unix.EpollWait(l.epfd, l.events, msec)
		if err == unix.EINTR {
			return 0, nil
		}
		return n, err
	}
	n, _, errno := syscall.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(l.epfd),
		uintptr(unsafe.Pointer(&l.events[0])), uintptr(len(l.events)), uintptr(msec), 0, 0)
	switch errno {
	case 0:
		return int(n), nil
	case syscall.EINTR:
		// most likely a preemption request: let the scheduler have it
		runtime.Gosched()
		return 0, nil
	}
	return 0, errno
}

// waitMillis is epoll_wait's timeout: until the next scan or resume;
// forever with no connections.
func (l *evLoop) waitMillis() int {
	if l.open == 0 {
		return -1
	}
	until := l.nextScan
	now := time.Now()
	for _, c := range l.paused {
		if t := time.Unix(0, c.ev.pauseBy); t.Before(until) {
			until = t
		}
	}
	d := until.Sub(now)
	if d <= 0 {
		return 0
	}
	return int((d + time.Millisecond - 1) / time.Millisecond)
}

// runQueue handles the posted connections; true when the loop must stop.
func (l *evLoop) runQueue() bool {
	l.qmu.Lock()
	q := l.queue
	l.queue = nil
	l.signalled = false
	stop := l.stop
	for _, c := range q {
		c.ev.queued = false
	}
	l.qmu.Unlock()
	for _, c := range q {
		k := c.ev
		if k.slot < 0 {
			if k.state.Load() == sockClosed {
				continue // released already
			}
			l.register(c)
		}
		l.settle(c)
	}
	return stop
}

// register adds a new connection to the loop.
func (l *evLoop) register(c *conn) {
	k := c.ev
	if n := len(l.free); n > 0 {
		k.slot = l.free[n-1]
		l.free = l.free[:n-1]
	} else {
		k.slot = int32(len(l.slots))
		l.slots = append(l.slots, nil)
	}
	l.slots[k.slot] = k
	l.open++
	if k.accessBy != 0 && !c.accessed {
		l.fresh = append(l.fresh, c)
	}
	if c.reader != nil && c.reader.Buffered() == 0 {
		l.pool.giveBack(c) // readIn takes one when the socket has input
	}
	if l.open == 1 {
		l.nextScan = time.Now().Add(l.tick)
	}
	c.mu.Lock()
	k.mask = c.evMaskLocked()
	ev := unix.EpollEvent{Events: k.mask, Fd: k.slot}
	err := unix.EpollCtl(l.epfd, unix.EPOLL_CTL_ADD, k.fd, &ev)
	k.registered = err == nil
	if err != nil {
		c.closeLocked(ReasonReadError)
		c.detail = "epoll_ctl: " + err.Error()
	}
	c.mu.Unlock()
}

// service handles one readiness report.
func (l *evLoop) service(k *evSock, events uint32) {
	c := k.c
	if events&(unix.EPOLLOUT|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
		c.evWriteOut()
	}
	if events&^uint32(unix.EPOLLOUT) != 0 {
		switch {
		case k.paused:
			if events&(unix.EPOLLHUP|unix.EPOLLERR) != 0 {
				l.resume(c) // a client that hung up is not paced
			}
		case k.active && k.lingerBy != 0: // (only a draining one is active)
			l.drainRead(c)
		default:
			l.readIn(k)
		}
	}
	l.settle(c)
}

// settle releases a closed connection and starts the drain of one being
// let go.
func (l *evLoop) settle(c *conn) {
	c.mu.Lock()
	closed, lingering := c.closed, c.lingering
	c.mu.Unlock()
	switch {
	case closed:
		l.release(c)
	case lingering != "" && c.ev.lingerBy == 0:
		k := c.ev
		// drain: a second at most for the reply to go out and the
		// client to close
		k.lingerBy = time.Now().Add(time.Second).UnixNano()
		l.activate(c)
		if k.paused {
			k.paused = false
			k.held = nil
			c.evUpdate()
		}
		l.drainRead(c)
		c.mu.Lock()
		closed = c.closed
		c.mu.Unlock()
		if closed {
			l.release(c)
		}
	}
}

// readIn reads the socket once and handles the packets that completes.
func (l *evLoop) readIn(k *evSock) {
	c := k.c
	k.budget = 1
	if c.reader == nil {
		c.reader = l.pool.reader(k, c.s.cfg.MaxPacket)
		if c.scratch == nil {
			c.scratch = l.pool.scratch()
		}
	}
	for {
		c.mu.Lock()
		stop := c.closed || c.lingering != ""
		c.mu.Unlock()
		if stop {
			return
		}
		f, err := c.reader.Next()
		if err != nil {
			if err == errWouldBlock || errors.Is(err, errWouldBlock) {
				if c.reader.Buffered() == 0 {
					// Nothing of a next packet yet: the reader and
					// the scratch buffer go back to the loop's pool
					// now, for the next socket that reads (they
					// are still in the cache then).
					l.pool.giveBack(c)
				}
				return
			}
			if err == io.EOF {
				c.mu.Lock()
				k.endRead = true
				c.mu.Unlock()
			}
			c.readFailed(err)
			return
		}
		c.received(f)
		if f.ID != protocol.IDChat {
			if d := c.throttleDelay(); d > 0 {
				l.pause(c, f, d)
				return
			}
			c.takeToken()
		}
		c.handle(f)
	}
}

// pause holds the packet f of a connection paced by the request rate
// and stops reading it for d.
func (l *evLoop) pause(c *conn, f protocol.Frame, d time.Duration) {
	k := c.ev
	k.held = &f // valid: the reader is not called until resume
	k.pauseBy = time.Now().Add(d).UnixNano()
	c.mu.Lock()
	k.paused = true
	c.evUpdateLocked()
	c.mu.Unlock()
	l.paused = append(l.paused, c)
}

func (l *evLoop) resumePaused(now int64) {
	kept := l.paused[:0]
	var due []*conn
	for _, c := range l.paused {
		k := c.ev
		switch {
		case !k.paused || k.slot < 0:
		case k.pauseBy <= now:
			due = append(due, c)
		default:
			kept = append(kept, c)
		}
	}
	clear(l.paused[len(kept):])
	l.paused = kept
	for _, c := range due {
		l.resume(c)
		l.settle(c)
	}
}

// resume handles a paused connection's held packet and reads on.
func (l *evLoop) resume(c *conn) {
	k := c.ev
	if !k.paused {
		return
	}
	c.mu.Lock()
	k.paused = false
	c.evUpdateLocked()
	stop := c.closed || c.lingering != ""
	c.mu.Unlock()
	f := k.held
	k.held = nil
	if stop || f == nil {
		return
	}
	c.throttleResume()
	c.takeToken()
	c.handle(*f)
	l.readIn(k)
}

// drainRead reads and discards the input of a connection being let go;
// at its end of stream the connection closes, once its reply is out.
func (l *evLoop) drainRead(c *conn) {
	k := c.ev
	if k.sawEOF {
		return
	}
	n, _, errno := syscall.RawSyscall6(sysRecv, uintptr(k.fd),
		uintptr(unsafe.Pointer(&l.discard[0])), uintptr(len(l.discard)), 0, 0, 0)
	if errno == syscall.EAGAIN || errno == syscall.EINTR || (errno == 0 && n > 0) {
		return
	}
	c.mu.Lock()
	if c.flushing && !c.closed {
		k.sawEOF = true // closed by evWriteOut once the reply is out
		c.evUpdateLocked()
	} else {
		c.closeLocked(c.lingering)
	}
	c.mu.Unlock()
}

// activate puts c in the list of the tick's scan (scanActive).
func (l *evLoop) activate(c *conn) {
	if k := c.ev; !k.active {
		k.active = true
		l.active = append(l.active, c)
	}
}

// scan checks the deadlines of all the loop's connections (a full tick).
func (l *evLoop) scan(now int64) {
	for _, k := range l.slots {
		if k != nil {
			l.check(k, now)
		}
	}
	l.pruneActive()
	l.scanFresh(now)
}

// scanActive checks the connections that drain, and the Access
// deadlines (a tick between two full ones).
func (l *evLoop) scanActive(now int64) {
	for _, c := range l.active {
		if k := c.ev; k.slot >= 0 {
			l.check(k, now)
		}
	}
	l.pruneActive()
	l.scanFresh(now)
}

// scanFresh checks the Access deadlines of the connections that have not
// sent their Access, and keeps in the list those that still may.
func (l *evLoop) scanFresh(now int64) {
	kept := l.fresh[:0]
	for _, c := range l.fresh {
		k := c.ev
		switch {
		case k.slot < 0 || c.accessed:
		case now > k.accessBy:
			c.close(ReasonAccessTimeout)
			l.settle(c)
		default:
			kept = append(kept, c)
		}
	}
	clear(l.fresh[len(kept):])
	l.fresh = kept
}

// pruneActive keeps in the list the connections that still drain.
func (l *evLoop) pruneActive() {
	kept := l.active[:0]
	for _, c := range l.active {
		if k := c.ev; k.slot >= 0 && k.lingerBy != 0 {
			kept = append(kept, c)
		} else {
			k.active = false
		}
	}
	clear(l.active[len(kept):])
	l.active = kept
}

// check checks the deadlines of one connection, and gives back its
// buffers if it read nothing since the last check.
func (l *evLoop) check(k *evSock, now int64) {
	if scanConn(k.c, k, &k.loopDeadlines, now, &l.pool) {
		l.settle(k.c)
	}
}

func (k *evSock) stalledLocked(now int64) bool { return now > k.stallBy }
func (k *evSock) isPaused() bool               { return k.paused }

// release closes a finished connection's descriptor and runs its
// disconnect processing.
func (l *evLoop) release(c *conn) {
	k := c.ev
	if k.slot < 0 {
		return
	}
	_ = unix.EpollCtl(l.epfd, unix.EPOLL_CTL_DEL, k.fd, nil)
	c.mu.Lock()
	k.state.Store(sockClosed)
	k.registered = false
	_ = unix.Close(k.fd)
	c.fd = -1
	c.mu.Unlock()
	l.slots[k.slot] = nil
	l.freeNext = append(l.freeNext, k.slot)
	k.slot = -1
	k.held = nil
	l.open--
	l.conns.Add(-1)
	c.finish()
	l.pool.giveBack(c)
}

// evMaskLocked is the readiness the connection waits for.
func (c *conn) evMaskLocked() uint32 {
	k := c.ev
	var m uint32
	if !k.paused && !k.sawEOF {
		m = unix.EPOLLIN | unix.EPOLLRDHUP
	}
	if c.flushing {
		m |= unix.EPOLLOUT
	}
	return m
}

func (c *conn) evUpdate() {
	c.mu.Lock()
	c.evUpdateLocked()
	c.mu.Unlock()
}

// evUpdateLocked tells epoll the readiness the connection now waits for.
func (c *conn) evUpdateLocked() {
	k := c.ev
	m := c.evMaskLocked()
	if !k.registered || m == k.mask || c.closed {
		return
	}
	ev := unix.EpollEvent{Events: m, Fd: k.slot}
	if err := unix.EpollCtl(k.loop.epfd, unix.EPOLL_CTL_MOD, k.fd, &ev); err != nil {
		c.detail = "epoll_ctl: " + err.Error()
		c.closeLocked(ReasonWriteError)
		return
	}
	k.mask = m
}

// evWantOut starts a write batch: bytes wait in out for the socket
// (send, under c.mu, flushing just set).
func (c *conn) evWantOut() {
	k := c.ev
	k.stallBy = time.Now().Add(writeStall).UnixNano()
	k.batchLeft = batchBytes(len(c.out))
	c.evUpdateLocked()
}

// batchBytes is n as a write batch's byte count: a batch is at most the
// send buffer, and a larger one (a send buffer of 2 GiB or more) is
// counted as 2 GiB.
func batchBytes(n int) int32 {
	return int32(min(n, math.MaxInt32)) //nolint:gosec // bounded just now
}

// evWriteOut writes what waits in out as far as the socket takes it.
// Like the goroutine engine's writer, a batch (what waited when it
// began) must be written within writeStall, or the client is a slow
// consumer.
func (c *conn) evWriteOut() {
	k := c.ev
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || !c.flushing {
		return
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
	case k.batchLeft <= 0:
		k.batchLeft = batchBytes(len(c.out))
		k.stallBy = time.Now().Add(writeStall).UnixNano()
	}
	c.evUpdateLocked()
}
