//go:build linux

package swarm

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/volanogo/volanogo/pkg/protocol"
)

// The epoll engine (Spec.Engine EngineEpoll) runs the timed phase of
// turn-taking without a goroutine per user: a few event loops, each an OS
// thread blocked in epoll_wait, read every ready socket and run its user's
// packet handler themselves. The set-up (connect, Access, EnterRoom) and
// what follows the timed phase stay on goroutines: they are not timed.
//
// At the start, each user's socket leaves Go's poller: the loop takes a
// duplicate of the descriptor and the net.Conn is closed, so that no
// readiness is reported twice. The duplicate shares the socket's file
// description, which is non-blocking already. Level-triggered readiness:
// a user's handler reads until the socket would block, and a socket it
// left unread is reported again.

// evSupported says whether this platform has the epoll engine.
const evSupported = true

// evEngine is the loops of one run.
type evEngine struct {
	loops []*evLoop
	next  int
	wg    sync.WaitGroup
}

// evLoop is one event loop: an epoll instance and the users it serves.
type evLoop struct {
	epfd, wakefd int
	mu           sync.Mutex
	conns        map[int32]*evConn
}

// evConn is a user served by a loop until its handler says it is done.
type evConn struct {
	u      *user
	handle func(protocol.Frame) (bool, error)
	// ended is called once, from the loop's thread, with the user's
	// outcome; the descriptor is then no longer the loop's.
	ended func(error)
}

// newEvEngine starts n loops.
func newEvEngine(n int) (*evEngine, error) {
	e := &evEngine{}
	for i := 0; i < n; i++ {
		l, err := newEvLoop()
		if err != nil {
			e.close()
			return nil, err
		}
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
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(wakefd)}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, wakefd, &ev); err != nil {
		unix.Close(epfd)
		unix.Close(wakefd)
		return nil, os.NewSyscallError("epoll_ctl", err)
	}
	return &evLoop{epfd: epfd, wakefd: wakefd, conns: make(map[int32]*evConn)}, nil
}

// close stops the loops and waits for them. Users still attached (an
// aborted run) are ended with an error.
func (e *evEngine) close() {
	one := []byte{1, 0, 0, 0, 0, 0, 0, 0}
	for _, l := range e.loops {
		_, _ = unix.Write(l.wakefd, one)
	}
	e.wg.Wait()
	for _, l := range e.loops {
		for _, c := range l.conns {
			l.detach(c, errors.New("the run ended"))
		}
		unix.Close(l.epfd)
		unix.Close(l.wakefd)
	}
}

// attach hands the user's socket to a loop, which calls handle with
// every packet until it says done or fails, then ended.
func (e *evEngine) attach(u *user, handle func(protocol.Frame) (bool, error), ended func(error)) error {
	lk := u.l
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

	l := e.loops[e.next%len(e.loops)]
	e.next++
	c := &evConn{u: u, handle: handle, ended: ended}
	l.mu.Lock()
	l.conns[int32(fd)] = c
	l.mu.Unlock()
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP, Fd: int32(fd)}
	if err := unix.EpollCtl(l.epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		l.mu.Lock()
		delete(l.conns, int32(fd))
		l.mu.Unlock()
		lk.evMu.Lock()
		lk.evState = evDetached
		lk.evMu.Unlock()
		lk.raw, lk.onLoop = false, false
		return os.NewSyscallError("epoll_ctl", err)
	}
	return nil
}

// run is the loop: on its own OS thread, it waits for readiness and runs
// the ready users' handlers until the engine closes.
func (l *evLoop) run() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	events := make([]unix.EpollEvent, 256)
	for {
		n, err := unix.EpollWait(l.epfd, events, -1)
		if err != nil {
			if err == unix.EINTR {
				continue
			}
			return
		}
		for i := 0; i < n; i++ {
			fd := events[i].Fd
			if int(fd) == l.wakefd {
				return
			}
			l.mu.Lock()
			c := l.conns[fd]
			l.mu.Unlock()
			if c == nil {
				continue
			}
			c.u.l.mayRead = true
			if stop, err := c.u.pump(c.handle); stop {
				l.detach(c, err)
			}
		}
	}
}

// detach takes the user's socket out of the loop and ends the user.
func (l *evLoop) detach(c *evConn, err error) {
	lk := c.u.l
	fd := lk.fd
	_ = unix.EpollCtl(l.epfd, unix.EPOLL_CTL_DEL, fd, nil)
	l.mu.Lock()
	delete(l.conns, int32(fd))
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
