//go:build linux

package swarm

import (
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/volanogo/volanogo/pkg/protocol"
)

// The epoll engine (Spec.Engine EngineEpoll) runs the timed phase of
// turn-taking and of paced runs without a goroutine per user: a few event
// loops, each an OS thread blocked in epoll_wait, read every ready socket
// and run its user's packet handler themselves. The set-up (connect,
// Access, EnterRoom) and what follows the timed phase stay on goroutines:
// they are not timed.
//
// A paced user's sends are timers of its loop: a heap of the users' next
// sends, the earliest of which bounds epoll_wait's wait (to the
// nanosecond with epoll_pwait2; a send's lateness counts in the scheduled
// latency). The loop sends each chat when its time comes, as the goroutine
// engine's sender does, and makes its users leave their rooms when the run
// has drained (the engine's leave).
//
// At the start, each user's socket leaves Go's poller: the loop takes a
// duplicate of the descriptor and the net.Conn is closed, so that no
// readiness is reported twice. The duplicate shares the socket's file
// description, which is non-blocking already. Edge-triggered readiness
// (EPOLLET): a user's handler reads until a read comes back short, which
// on a TCP socket means its receive queue was empty then, and bytes that
// come after that read are a new edge. An end of stream is no such
// edge once reported (EPOLLRDHUP, EPOLLHUP), so a user whose socket has
// reported one reads to the end (link.ended). Level-triggered, every socket
// reported would be put back on the ready list and polled again
// (tcp_poll) in the next epoll_wait only to be dropped there: one poll
// more per read, which the kernel floor pays (about 2% of the client's
// samples at 15 rooms; see bench/client/compare.sh).

// evSupported says whether this platform has the epoll engine.
const evSupported = true

// evEngine is the loops of one run.
type evEngine struct {
	loops []*evLoop
	// conns are the users attached, by the order of their attachment,
	// which each one's epoll events carry (no lock, no map on the path of
	// an event); nil once detached.
	conns []atomic.Pointer[evConn]
	// users are the same users, which is all an event needs: the loop
	// reads one entry of it and the user's own state.
	users []atomic.Pointer[user]
	next  int
	wg    sync.WaitGroup
	// closing ends the loops; base (nanotime, once set) starts the timed
	// phase; leaving makes the paced users leave their rooms.
	closing, leaving atomic.Bool
	base             atomic.Int64
	// procs is GOMAXPROCS before the engine raised it to the loops plus
	// one (0: not raised), and raised what it set.
	procs, raised int
}

// evLoop is one event loop: an epoll instance and the users it serves.
type evLoop struct {
	e            *evEngine
	epfd, wakefd int
	mu           sync.Mutex
	// pending: the users attached before the start (under mu).
	pending []*evConn
	// rec is the recorder of the loop's users (made at the first attach,
	// before the loop uses it).
	rec *recorder

	// readers are the loop's idle packet readers. A user holds one only
	// while bytes of an incomplete packet wait in it, and takes the last
	// one given back when its socket is ready: the same few readers and
	// their buffers serve all, and stay in the cache (the kernel copies
	// into them).
	readers []*protocol.Reader

	// The loop's thread only: the paced users' next sends (a min-heap on
	// evConn.next), and whether it has started them and made them leave.
	timers        []*evConn
	started, left bool
}

// evConn is a user served by a loop until its handler says it is done.
type evConn struct {
	l   *evLoop
	idx int32 // in evEngine.conns
	u   *user
	// ended is called once, from the loop's thread, with the user's
	// outcome; the descriptor is then no longer the loop's.
	ended func(error)
	gone  bool // detached
	// start, when set, is called at the start of the timed phase (user 1
	// of a turn-taking room sends the room's first chat).
	start func() error

	// A paced user: its first send offset from the start, the time of its
	// next send (nanotime), its place in the loop's heap (-1: none), the
	// chats it sent, and whether it has left its room.
	paced        bool
	offset, next int64
	hi           int
	sent         int64
	exited       bool
}

// newEvEngine starts n loops for at most users users.
func newEvEngine(n, users int) (*evEngine, error) {
	e := &evEngine{conns: make([]atomic.Pointer[evConn], users), users: make([]atomic.Pointer[user], users)}
	// The loops hold their Ps while they wait (see wait): one more is
	// left for the rest of the run.
	if p := runtime.GOMAXPROCS(0); p < n+1 {
		e.procs, e.raised = runtime.GOMAXPROCS(n+1), n+1
	}
	for i := 0; i < n; i++ {
		l, err := newEvLoop()
		if err != nil {
			e.close()
			return nil, err
		}
		l.e = e
		e.loops = append(e.loops, l)
		e.wg.Add(1)
		go func() { defer e.wg.Done(); l.run() }()
	}
	return e, nil
}

func newEvLoop() (*evLoop, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("epoll_create1", err)
	}
	wakefd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		unix.Close(epfd)
		return nil, os.NewSyscallError("eventfd", err)
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: evWake}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, wakefd, &ev); err != nil {
		unix.Close(epfd)
		unix.Close(wakefd)
		return nil, os.NewSyscallError("epoll_ctl", err)
	}
	return &evLoop{epfd: epfd, wakefd: wakefd}, nil
}

// noPwait2 is set once the kernel has said it has no epoll_pwait2.
var noPwait2 atomic.Bool

// evWake is the event data of a loop's eventfd (a user's is its index).
const evWake = -1

// close stops the loops and waits for them. Users still attached (an
// aborted run) are ended with an error.
func (e *evEngine) close() {
	e.closing.Store(true)
	e.wake()
	e.wg.Wait()
	for i := range e.conns {
		if c := e.conns[i].Load(); c != nil {
			c.l.detach(c, errors.New("the run ended"))
		}
	}
	for _, l := range e.loops {
		if l.rec != nil {
			l.rec.flush()
		}
	}
	if e.procs > 0 && runtime.GOMAXPROCS(0) == e.raised {
		runtime.GOMAXPROCS(e.procs)
	}
	for _, l := range e.loops {
		unix.Close(l.epfd)
		unix.Close(l.wakefd)
	}
}

// wake interrupts every loop's wait, so that it looks at the engine's
// flags.
func (e *evEngine) wake() {
	one := []byte{1, 0, 0, 0, 0, 0, 0, 0}
	for _, l := range e.loops {
		_, _ = unix.Write(l.wakefd, one)
	}
}

// start starts the timed phase at base (nanotime): the first chat of each
// turn-taking room, and the paced users' sends, each user's first at base
// plus its offset.
func (e *evEngine) start(base int64) {
	e.base.Store(base)
	e.wake()
}

// leave makes the paced users leave their rooms (the run has drained).
func (e *evEngine) leave() {
	e.leaving.Store(true)
	e.wake()
}

// attachTurns hands a turn-taking user's socket to a loop, which calls
// its firstTurn at the start of the timed phase and its turnFrame with
// every packet until it says done or fails, then ended.
func (e *evEngine) attachTurns(u *user, ended func(error)) error {
	return e.attachConn(&evConn{u: u, start: u.firstTurn, ended: ended, hi: -1})
}

// attachPaced hands a paced user to a loop, which reads its socket and
// sends its chats, the first offset after the start (see start), until
// it has left its room (see leave) or fails, then calls ended.
func (e *evEngine) attachPaced(u *user, offset time.Duration, ended func(error)) error {
	return e.attachConn(&evConn{u: u, ended: ended, hi: -1, paced: true, offset: int64(offset)})
}

func (e *evEngine) attachConn(c *evConn) error {
	u := c.u
	lk := u.l
	if e.next >= len(e.conns) {
		return fmt.Errorf("engine epoll: more users than the %d planned", len(e.conns))
	}
	if lk.rc == nil {
		return fmt.Errorf("engine epoll: %s has no TCP socket", u)
	}
	fd := -1
	var derr error
	if err := lk.rc.Control(func(s uintptr) {
		fd, derr = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0)
	}); err != nil {
		return err
	}
	if derr != nil {
		return os.NewSyscallError("dup", derr)
	}
	// The duplicate keeps the socket open; Go's poller forgets it.
	_ = lk.nc.Close()
	lk.evMu.Lock()
	lk.evfd, lk.evState = fd, evAttached
	lk.evMu.Unlock()
	lk.fd, lk.raw, lk.mayRead, lk.onLoop = fd, true, true, true
	lk.writeTimeout = u.r.rs.spec.StallTimeout
	if u.batch && lk.rbuf == nil {
		lk.rbuf = make([]byte, 2048)
	}
	if u.confirmLowat {
		u.lowat = u.r.confirmSize + 1
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVLOWAT, u.lowat); err != nil {
			u.confirmLowat, u.lowat = false, 0
		}
	}

	li := e.next % len(e.loops)
	l := e.loops[li]
	c.l, c.idx = l, int32(e.next)
	e.next++
	if l.rec == nil {
		rs := u.r.rs
		l.rec = &recorder{rs: rs, shard: rs.shards[li%len(rs.shards)], shared: true}
	}
	u.rec = l.rec
	if u.rd != nil && u.rd.Buffered() == 0 {
		// The loop lends it one when its socket is ready.
		u.rd = nil
	}
	e.users[c.idx].Store(u)
	e.conns[c.idx].Store(c)
	l.mu.Lock()
	l.pending = append(l.pending, c)
	l.mu.Unlock()
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLET, Fd: c.idx}
	if err := unix.EpollCtl(l.epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		e.conns[c.idx].Store(nil)
		e.users[c.idx].Store(nil)
		u.rec = nil
		l.mu.Lock()
		c.gone = true
		l.mu.Unlock()
		lk.evMu.Lock()
		lk.evState = evDetached
		lk.evMu.Unlock()
		lk.raw, lk.onLoop = false, false
		return os.NewSyscallError("epoll_ctl", err)
	}
	return nil
}

// run is the loop: on its own OS thread, it waits for readiness or its
// next timer and runs the ready users' handlers and the due sends until
// the engine closes.
func (l *evLoop) run() {
	events := make([]unix.EpollEvent, 256)
	for {
		n, err := l.wait(events, l.timeout())
		if err != nil {
			return
		}
		if n > 0 {
			l.prefetch(events[:n])
		}
		for i := 0; i < n; i++ {
			idx := events[i].Fd
			if idx == evWake {
				var b [8]byte
				_, _ = unix.Read(l.wakefd, b[:])
				if l.e.closing.Load() {
					return
				}
				l.notified()
				continue
			}
			u := l.e.users[idx].Load()
			if u == nil {
				continue
			}
			if u.rd == nil {
				u.rd = l.reader(u.l, u.r.rs.spec.MaxPacket)
			}
			u.l.mayRead = true
			if events[i].Events&(unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
				u.l.ended = true
			}
			var stop bool
			var err error
			if u.r.rs.paced {
				stop, err = u.pump(u.pacedFrame)
			} else {
				stop, err = u.pump(u.turnFrame)
			}
			if stop {
				l.detach(l.e.conns[idx].Load(), err)
			} else if u.rd.Buffered() == 0 {
				l.readers = append(l.readers, u.rd)
				u.rd = nil
			}
		}
		if len(l.timers) > 0 {
			l.fire()
		}
	}
}

// prefetch asks for the cache lines that serving the users of a
// wake-up's events will touch, for all of them before the first is
// served, so that their misses overlap instead of coming one after the
// other (with thousands of users each line is a miss, and a wake-up
// brings a few events: at 475 rooms about 4). In three passes, each
// reading only lines the pass before asked for: the user's two hot
// lines; then its link's line, its room's line and its ledger's entry of
// the sender it most likely hears from (turn-taking: the sender of the
// room's next chat); then the room's slot of that chat. Even for one
// event this is worth it: served, the user would miss on these lines one
// after the other; asked for together, they come in the time of one
// miss, or during the read (2 µs). At a few hundred users the lines are
// in the cache already and the passes cost a few loads an event.
func (l *evLoop) prefetch(events []unix.EpollEvent) {
	users := l.e.users
	for i := range events {
		if idx := events[i].Fd; idx >= 0 {
			if u := users[idx].Load(); u != nil {
				p := uintptr(unsafe.Pointer(u))
				prefetch(p)
				prefetch(p + 64)
			}
		}
	}
	for i := range events {
		if idx := events[i].Fd; idx >= 0 {
			if u := users[idx].Load(); u != nil {
				prefetch(uintptr(unsafe.Pointer(u.l)))
				prefetch(uintptr(unsafe.Pointer(u.r)))
				// The ledger has an entry per user of the room.
				from := u.ledger.from
				if n := int64(len(from)); n > 0 {
					s := u.ledger.maxK % n
					if s == int64(u.num-1) {
						s = (s + 1) % n
					}
					p := uintptr(unsafe.Pointer(&from[s]))
					prefetch(p)
					prefetch(p + unsafe.Sizeof(from[s]) - 1)
				}
			}
		}
	}
	for i := range events {
		if idx := events[i].Fd; idx >= 0 {
			if u := users[idx].Load(); u != nil {
				if r := u.r; len(r.slots) > 0 {
					p := uintptr(unsafe.Pointer(&r.slots[(u.ledger.maxK+1)&r.mask]))
					prefetch(p)
					prefetch(p + unsafe.Sizeof(r.slots[0]) - 1)
				}
			}
		}
	}
}

// reader lends a reader of lk: the last one given back, or a new one.
func (l *evLoop) reader(lk *link, maxPacket int) *protocol.Reader {
	n := len(l.readers)
	if n == 0 {
		return protocol.NewReader(lk, maxPacket)
	}
	rd := l.readers[n-1]
	l.readers[n-1] = nil
	l.readers = l.readers[:n-1]
	rd.Reset(lk)
	return rd
}

// wait waits up to msec (-1: without end) for events, in a raw system
// call: the loop keeps its P while it waits, as the kernel floor's thread
// does. Through the scheduler's system call path a wait that lasts has
// its P retaken by sysmon and handed to another thread, and the loop
// must get one back on its way out (futex calls, thread switches, and
// sysmon kept waking); and a loop locked to its thread would make every
// preemption such a hand-over. The wait is still preemptible: sysmon's or
// the GC's preemption signal ends it (EINTR: epoll_wait is never
// restarted), and the loop yields. The loops are fewer than the
// processors Go may use (Spec.Loops' default is half), so that the run's
// other goroutines have a P.
//
// A wait with an end is epoll_pwait2's, to the nanosecond (Linux 5.11),
// so that a paced send is not late by the rounding of epoll_wait's
// milliseconds; epoll_pwait's, rounded up, on an older kernel.
func (l *evLoop) wait(events []unix.EpollEvent, ns int64) (int, error) {
	var n uintptr
	errno := syscall.ENOSYS
	if ns >= 0 && !noPwait2.Load() {
		ts := unix.NsecToTimespec(ns)
		n, _, errno = syscall.RawSyscall6(unix.SYS_EPOLL_PWAIT2, uintptr(l.epfd),
			uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), uintptr(unsafe.Pointer(&ts)), 0, 0)
		if errno == syscall.ENOSYS {
			noPwait2.Store(true)
		}
	}
	if errno == syscall.ENOSYS {
		msec := -1
		if ns >= 0 {
			msec = int(min((ns+int64(time.Millisecond)-1)/int64(time.Millisecond), math.MaxInt32))
		}
		n, _, errno = syscall.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(l.epfd),
			uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), uintptr(msec), 0, 0)
	}
	switch errno {
	case 0:
		return int(n), nil
	case syscall.EINTR:
		runtime.Gosched()
		return 0, nil
	}
	return 0, os.NewSyscallError("epoll_pwait", errno)
}

// timeout is the wait's, in nanoseconds: until the next send, or none
// (-1).
func (l *evLoop) timeout() int64 {
	if len(l.timers) == 0 {
		return -1
	}
	return max(l.timers[0].next-nanotime(), 0)
}

// notified acts on the engine's flags: the start of the timed phase,
// and the paced users' exit.
func (l *evLoop) notified() {
	if base := l.e.base.Load(); base != 0 && !l.started {
		l.started = true
		l.mu.Lock()
		pending := l.pending
		l.pending = nil
		l.mu.Unlock()
		for _, c := range pending {
			switch {
			case c.gone || c.u.r.rs.aborted.Load():
			case c.paced && !c.u.r.rs.spec.publishes(c.u.num):
				c.u.doneSending.Store(true) // it only reads
			case c.paced:
				c.next = base + c.offset
				l.push(c)
			case c.start != nil:
				if err := c.start(); err != nil {
					l.detach(c, err)
				}
			}
		}
	}
	if l.e.leaving.Load() && !l.left {
		l.left = true
		for i := range l.e.conns {
			c := l.e.conns[i].Load()
			if c == nil || c.l != l || !c.paced || c.gone || c.exited || c.u.r.rs.aborted.Load() {
				continue
			}
			c.exited = true
			l.remove(c)
			u := c.u
			if u.lowat > 1 {
				// The end may come in packets shorter than a confirm.
				u.lowat = 1
				u.l.setRcvLowat(1)
			}
			err := u.l.write(u.exit)
			if err == nil {
				err = u.l.write(u.roomList)
			}
			if err != nil {
				l.detach(c, u.failIO("write", err))
			}
		}
	}
}

// fireBatch bounds the chats one round of a loop sends: a loop behind its
// schedule goes back to its sockets between batches.
const fireBatch = 64

// fire sends the chats whose time had come at the start of the round,
// each on the user's schedule (one every pause from the user's offset),
// until the user has sent count chats or the run stops; at most
// fireBatch of them, so that a loop behind its schedule still reads (the
// next wait, with a timeout of zero, is a round of reads). Before, a
// loop that fell behind sent chats until it caught up, which at 19,000
// sends a second it never did: its users read nothing until the last
// send of the run, and the delivery latency grew with the run.
func (l *evLoop) fire() {
	now := nanotime()
	for n := 0; n < fireBatch && len(l.timers) > 0 && l.timers[0].next <= now; n++ {
		c := l.timers[0]
		u := c.u
		rs := u.r.rs
		count := int64(rs.spec.Count)
		if rs.aborted.Load() || rs.stopping.Load() || rs.pastDuration(c.next) {
			l.remove(c)
			u.doneSending.Store(true)
			continue
		}
		c.sent++
		at := u.publishSend(c.sent, c.next)
		if rs.inWindow(at) {
			u.sentIn++
		}
		u.tick(at, 1, 0)
		if err := u.l.write(u.chat); err != nil {
			l.remove(c)
			l.detach(c, u.failIO("write", err))
			continue
		}
		u.sentA.Store(c.sent)
		if count > 0 && c.sent >= count {
			l.remove(c)
			u.doneSending.Store(true)
			continue
		}
		c.next += int64(rs.spec.Pause)
		l.down(0)
	}
}

// The heap of timers, on evConn.next.

func (l *evLoop) push(c *evConn) {
	c.hi = len(l.timers)
	l.timers = append(l.timers, c)
	l.up(c.hi)
}

func (l *evLoop) remove(c *evConn) {
	i := c.hi
	if i < 0 {
		return
	}
	last := len(l.timers) - 1
	if i != last {
		l.swap(i, last)
	}
	l.timers[last] = nil
	l.timers = l.timers[:last]
	c.hi = -1
	if i != last {
		l.down(i)
		l.up(i)
	}
}

func (l *evLoop) swap(i, j int) {
	t := l.timers
	t[i], t[j] = t[j], t[i]
	t[i].hi, t[j].hi = i, j
}

func (l *evLoop) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if l.timers[p].next <= l.timers[i].next {
			return
		}
		l.swap(i, p)
		i = p
	}
}

func (l *evLoop) down(i int) {
	n := len(l.timers)
	for {
		m := i
		if a := 2*i + 1; a < n && l.timers[a].next < l.timers[m].next {
			m = a
		}
		if b := 2*i + 2; b < n && l.timers[b].next < l.timers[m].next {
			m = b
		}
		if m == i {
			return
		}
		l.swap(i, m)
		i = m
	}
}

// detach takes the user's socket out of the loop and ends the user.
func (l *evLoop) detach(c *evConn, err error) {
	lk := c.u.l
	fd := lk.fd
	_ = unix.EpollCtl(l.epfd, unix.EPOLL_CTL_DEL, fd, nil)
	l.remove(c)
	l.e.conns[c.idx].Store(nil)
	l.e.users[c.idx].Store(nil)
	l.mu.Lock()
	c.gone = true
	l.mu.Unlock()
	lk.raw, lk.onLoop = false, false
	lk.evMu.Lock()
	if lk.evClose {
		// Closed while the loop had it (an aborted run): close it now.
		unix.Close(fd)
		lk.evState = evClosed
	} else {
		lk.evState = evDetached
	}
	lk.evMu.Unlock()
	c.ended(err)
}

// evCloseLink closes a link whose socket an event loop took. It reports
// false for a link that never left Go's poller.
func (l *link) evCloseLink() (bool, error) {
	l.evMu.Lock()
	defer l.evMu.Unlock()
	switch l.evState {
	case evNone:
		return false, nil
	case evAttached:
		// The loop is reading it: wake it with an end of stream; it
		// closes the descriptor when it lets the user go.
		l.evClose = true
		return true, unix.Shutdown(l.evfd, unix.SHUT_RDWR)
	case evDetached:
		l.evState = evClosed
		return true, unix.Close(l.evfd)
	}
	return true, nil
}

// evControl calls f with the descriptor of a link an event loop took,
// unless it is closed; false for a link that never left Go's poller.
func (l *link) evControl(f func(fd int)) bool {
	l.evMu.Lock()
	defer l.evMu.Unlock()
	switch l.evState {
	case evNone:
		return false
	case evAttached, evDetached:
		f(l.evfd)
	}
	return true
}

// loopWrite writes the rest of a packet that the socket did not take at
// once, on a loop's thread, where Go's poller cannot wait: it waits for
// room with poll(2), up to the write timeout.
func (l *link) loopWrite(b []byte) error {
	deadline := time.Now().Add(l.writeTimeout)
	for len(b) > 0 {
		if err := l.evWait(deadline); err != nil {
			return err
		}
		n, err := rawIO(unix.SYS_WRITE, l.fd, b)
		if err != nil && err != unix.EAGAIN && err != unix.EINTR {
			return os.NewSyscallError("write", err)
		}
		b = b[max(n, 0):]
	}
	return nil
}

// evWait waits until the socket may take more bytes or the deadline.
func (l *link) evWait(deadline time.Time) error {
	for {
		wait := time.Until(deadline)
		if wait <= 0 {
			return os.NewSyscallError("write", unix.ETIMEDOUT)
		}
		pfd := []unix.PollFd{{Fd: int32(l.fd), Events: unix.POLLOUT}}
		_, err := unix.Poll(pfd, int(min(wait, time.Second)/time.Millisecond)+1)
		if err != nil && err != unix.EINTR {
			return os.NewSyscallError("poll", err)
		}
		if pfd[0].Revents&(unix.POLLOUT|unix.POLLERR|unix.POLLHUP) != 0 {
			return nil
		}
	}
}
