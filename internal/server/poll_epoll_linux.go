//go:build linux

package server

import (
	"cmp"
	"io"
	"os"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The epoll engine (Config.Engine EngineEpoll): the event-loop core over
// epoll. A loop waits in epoll_wait and reads each ready socket once per
// wait (level-triggered: a socket with more to read is reported again by
// the next wait, after the others have had their turn). Relaying is the
// goroutine engine's: a chat is written by the sender's loop, under the
// room's lock, straight into each receiver's socket (relayChat); what a
// socket does not take waits in the receiver's out buffer, and the
// receiver's own loop writes it when epoll reports room (EPOLLOUT).

// epSock is the epoll poller's state of a socket.
type epSock struct {
	budget     int32  // reads left in this wake-up (the loop's)
	mask       uint32 // the readiness registered (conn.mu)
	registered bool   // (conn.mu)
}

// epollPoller is one loop's epoll instance.
type epollPoller struct {
	l            *loop[epSock]
	epfd, wakefd int
	events       []unix.EpollEvent
	// coalesce is Config.Coalesce, as a timespec for nanosleep (zero:
	// none).
	coalesce unix.Timespec
	naps     int // (the loop's; for the tests)
}

// wakeSlot marks the eventfd in epoll's data.
const wakeSlot = -1

// newEpollEngine starts the epoll engine's loops.
func newEpollEngine(s *Server) (ioEngine, error) {
	e, err := startLoops(s, s.cfg.Loops, cmp.Or(s.cfg.LoopFill, epollLoopFill), newEpollPoller)
	if err != nil {
		return nil, err
	}
	return e, nil
}

func newEpollPoller(l *loop[epSock]) (poller[epSock], error) {
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
	return &epollPoller{l: l, epfd: epfd, wakefd: wakefd, events: make([]unix.EpollEvent, 256),
		coalesce: unix.NsecToTimespec(int64(l.s.cfg.Coalesce))}, nil
}

func (p *epollPoller) stopped() {}

// close closes the epoll instance and the eventfd, once no loop may wake
// this one.
func (p *epollPoller) close() {
	unix.Close(p.epfd)
	unix.Close(p.wakefd)
}

func (p *epollPoller) wake() {
	one := [8]byte{1}
	_, _ = unix.Write(p.wakefd, one[:])
}

// poll waits for readiness and hands each ready socket to the loop.
func (p *epollPoller) poll(d time.Duration, quiet bool) error {
	n, err := p.wait(d, quiet)
	if err != nil {
		return err
	}
	l := p.l
	for i := range n {
		ev := p.events[i]
		if ev.Fd == wakeSlot {
			var b [8]byte
			_, _ = unix.Read(p.wakefd, b[:])
			l.woken()
			continue
		}
		k := l.slots[ev.Fd]
		if k == nil {
			continue // released earlier in this round
		}
		k.x.budget = 1
		const hup = unix.EPOLLHUP | unix.EPOLLERR
		l.event(k, ev.Events&^uint32(unix.EPOLLOUT) != 0, ev.Events&(unix.EPOLLOUT|hup) != 0, ev.Events&hup != 0)
	}
	if n > 0 && n < coalesceFew && p.coalesce.Nsec > 0 {
		p.nap()
	}
	return nil
}

// wait waits up to d (< 0: until an event) for events. With connections
// open it keeps the loop's P (waitKeepingP) unless the loop is quiet; with
// none, or quiet, it waits through the scheduler, its P free.
func (p *epollPoller) wait(d time.Duration, quiet bool) (int, error) {
	msec := -1
	if d >= 0 {
		msec = int((d + time.Millisecond - 1) / time.Millisecond)
	}
	if d < 0 || (quiet && d > 0) {
		n, err := unix.EpollWait(p.epfd, p.events, msec)
		if err == unix.EINTR {
			return 0, nil
		}
		return n, err
	}
	n, err := waitKeepingP(unix.SYS_EPOLL_PWAIT, uintptr(p.epfd),
		uintptr(unsafe.Pointer(&p.events[0])), uintptr(len(p.events)), uintptr(msec))
	return int(n), err
}

// coalesceFew is the events of a round under which a loop with
// Config.Coalesce naps before its next wait: a fuller round means events
// are coming faster than one at a time, and more are waiting.
const coalesceFew = 32

// nap sleeps Config.Coalesce in a raw system call, keeping the loop's P
// as its wait does, so that the events of that time are taken in one
// wake-up. A signal (a preemption request) ends the nap early.
func (p *epollPoller) nap() {
	p.naps++
	_, _ = waitKeepingP(unix.SYS_NANOSLEEP, uintptr(unsafe.Pointer(&p.coalesce)), 0, 0, 0)
}

// read is one recv per wake-up (the budget): a socket with more is
// reported again by the next wait.
func (p *epollPoller) read(k *sock[epSock], b []byte) (int, error) {
	if k.x.budget <= 0 || len(b) == 0 {
		return 0, errWouldBlock
	}
	k.x.budget--
	for {
		n, _, errno := syscall.RawSyscall6(sysRecv, uintptr(k.fd),
			uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), 0, 0, 0)
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

// maskLocked is the readiness the connection waits for (conn.mu held).
func (p *epollPoller) maskLocked(k *sock[epSock]) uint32 {
	var m uint32
	if !k.paused && !k.sawEOF {
		m = unix.EPOLLIN | unix.EPOLLRDHUP
	}
	if k.c.flushing {
		m |= unix.EPOLLOUT
	}
	return m
}

func (p *epollPoller) add(k *sock[epSock]) error {
	c := k.c
	c.mu.Lock()
	defer c.mu.Unlock()
	k.x.mask = p.maskLocked(k)
	ev := unix.EpollEvent{Events: k.x.mask, Fd: k.slot}
	if err := unix.EpollCtl(p.epfd, unix.EPOLL_CTL_ADD, int(k.fd), &ev); err != nil {
		return os.NewSyscallError("epoll_ctl", err)
	}
	k.x.registered = true
	return nil
}

func (p *epollPoller) update(k *sock[epSock]) {
	k.c.mu.Lock()
	p.updateLocked(k)
	k.c.mu.Unlock()
}

// updateLocked tells epoll the readiness the connection now waits for; a
// sender's loop calls it too, for a receiver of another loop (epoll_ctl
// may be called from any thread).
func (p *epollPoller) updateLocked(k *sock[epSock]) {
	c := k.c
	m := p.maskLocked(k)
	if !k.x.registered || m == k.x.mask || c.closed {
		return
	}
	ev := unix.EpollEvent{Events: m, Fd: k.slot}
	if err := unix.EpollCtl(p.epfd, unix.EPOLL_CTL_MOD, int(k.fd), &ev); err != nil {
		c.detail = "epoll_ctl: " + err.Error()
		c.closeLocked(ReasonWriteError)
		return
	}
	k.x.mask = m
}

func (p *epollPoller) wantOut(k *sock[epSock]) { p.updateLocked(k) }

func (p *epollPoller) inFlight(*sock[epSock]) bool { return false }

// remove: closing the descriptor takes it out of the epoll set (it is its
// file's only descriptor: the accepted one was closed after the dup).
func (p *epollPoller) remove(*sock[epSock]) bool { return true }

func (p *epollPoller) deliver(_ *sock[epSock], o *conn, b []byte) { o.send(b) }

func (p *epollPoller) relay(k *sock[epSock], conns []*conn, ind, conf []byte) (int, bool) {
	return relayChat(k.c, conns, ind, conf)
}
