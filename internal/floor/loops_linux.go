package floor

import (
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// readBuf is the size of one read, as floor.c reads.
const readBuf = MessageBytes * 64

// threadCPU is the calling thread's CPU time in seconds.
func threadCPU() float64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return float64(ts.Sec) + float64(ts.Nsec)/1e9
}

// rawRead and rawSend call the kernel without telling the Go scheduler
// (as C does): they do not block, the descriptors being ready or the send
// small. They return the byte count or minus the errno.
func rawRead(fd int32, p []byte) int {
	n, _, e := unix.RawSyscall(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	if e != 0 {
		return -int(e)
	}
	return int(n)
}

func rawSend(fd int32, p []byte, flags int) int {
	n, _, e := unix.RawSyscall6(unix.SYS_SENDTO, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)), uintptr(flags), 0, 0)
	if e != 0 {
		return -int(e)
	}
	return int(n)
}

// epollWait blocks, so it goes through the scheduler's system call path.
func epollWait(ep int, ev []unix.EpollEvent, msec int) (int, error) {
	n, err := unix.EpollWait(ep, ev, msec)
	if errors.Is(err, unix.EINTR) {
		return 0, nil
	}
	return n, err
}

// sideResult is what one side's thread measured.
type sideResult struct {
	cpu, elapsed float64
	// wakes is the server's waits that returned events.
	wakes int64
	err   error
}

// newEpoll is an epoll instance watching fds for reading, each event
// carrying its index.
func newEpoll(fds []int32) (int, error) {
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return -1, fmt.Errorf("epoll_create1: %w", err)
	}
	for i, fd := range fds {
		e := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(i)}
		if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, int(fd), &e); err != nil {
			_ = unix.Close(ep)
			return -1, fmt.Errorf("epoll_ctl: %w", err)
		}
	}
	return ep, nil
}

// serveEpoll is the floor's server on one OS thread: it reads whatever a
// connection has and sends it to every other connection of its room,
// until done. With an exit phase (sc not nil) it also relays each exit
// (see script) and closes each connection on its end of file, and stops
// once it has closed them all. ready is closed (or sent an error) once it
// waits.
func serveEpoll(srv []int32, sc *script, done *atomic.Bool, ready chan<- error) sideResult {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	ep, err := newEpoll(srv)
	if err != nil {
		ready <- err
		return sideResult{err: err}
	}
	defer unix.Close(ep)
	buf := make([]byte, readBuf+MessageBytes) // (room for a paced chat held)
	ev := make([]unix.EpollEvent, 256)
	x := newServerExits(srv, sc)
	pc := newPacedServer(sc, len(srv))
	users := sc.users
	var wakes int64
	c0 := threadCPU()
	close(ready)
	for !done.Load() && !x.over() {
		n, err := epollWait(ep, ev, 100)
		if err != nil {
			return sideResult{cpu: threadCPU() - c0, err: fmt.Errorf("server: epoll_wait: %w", err)}
		}
		if n > 0 {
			wakes++
		}
		for k := 0; k < n; k++ {
			i := int(ev[k].Fd)
			r := i / users
			got := rawRead(srv[i], buf[:readBuf])
			if got <= 0 {
				if x != nil && got != -int(unix.EAGAIN) && got != -int(unix.EINTR) {
					x.closed(i)
				}
				continue
			}
			chat, confirms := got, 0
			if x != nil {
				chat = x.chatBytes(i, got)
			}
			if pc != nil {
				chat, confirms = pc.whole(i, buf, got)
			}
			if chat > 0 {
				for j := 0; j < users; j++ {
					if j != i%users {
						rawSend(srv[r*users+j], buf[:chat], unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL)
					}
				}
			}
			if confirms > 0 {
				rawSend(srv[i], pc.confirms(r, confirms), unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL)
			}
			if x != nil && x.leaves(i, got) {
				_ = x.relayExit(i, func(fd int32, b []byte) error {
					rawSend(fd, b, unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL)
					return nil
				})
			}
		}
	}
	cpu := threadCPU() - c0
	return sideResult{cpu: cpu, wakes: wakes, err: x.unclosed()}
}

// serverExits is the server's side of the exit phase: what each
// connection has sent, who has left, who has closed.
type serverExits struct {
	sc   *script
	srv  []int32
	in   []int64
	left []bool
	open int
}

// newServerExits is nil without an exit phase.
func newServerExits(srv []int32, sc *script) *serverExits {
	if sc.exitReq == nil {
		return nil
	}
	return &serverExits{sc: sc, srv: srv, in: make([]int64, len(srv)), left: make([]bool, len(srv)), open: len(srv)}
}

// over is true once every connection is closed.
func (x *serverExits) over() bool { return x != nil && x.open == 0 }

// chatBytes is how many of the got bytes connection i just sent, at the
// start of the buffer, are chats (the rest is its exit).
func (x *serverExits) chatBytes(i, got int) int {
	in, out := x.in[i], x.sc.chatOut
	return int(min(in+int64(got), out) - min(in, out))
}

// leaves counts got more bytes from connection i and tells whether they
// complete its exit requests.
func (x *serverExits) leaves(i, got int) bool {
	x.in[i] += int64(got)
	if x.left[i] || x.in[i] < x.sc.reqEnd(i) {
		return false
	}
	x.left[i] = true
	return true
}

// relayExit sends connection i's ExitRoom indication to the users of its
// room who have not left, and the RoomList confirm to it.
func (x *serverExits) relayExit(i int, send func(fd int32, b []byte) error) error {
	users := x.sc.users
	r := i / users * users
	ind := x.sc.exitInd[i]
	for j := r; j < r+users; j++ {
		if !x.left[j] {
			if err := send(x.srv[j], ind); err != nil {
				return err
			}
		}
	}
	return send(x.srv[i], x.sc.listConf)
}

// closed closes the server's end of connection i, whose client has
// closed its own (or whose socket failed).
func (x *serverExits) closed(i int) {
	if x.srv[i] < 0 {
		return
	}
	_ = unix.Close(int(x.srv[i]))
	x.srv[i] = -1
	x.open--
}

// unclosed is the server's error when it stopped before every
// connection closed (nil without an exit phase).
func (x *serverExits) unclosed() error {
	if x == nil || x.open == 0 {
		return nil
	}
	return fmt.Errorf("server: %d of %d connections were still open at its end", x.open, len(x.srv))
}

// clients is the floor's client on one OS thread: user 0 of each room
// speaks first, and a user speaks when (its sent + received) mod users is
// its index, until every user has sent count and received everything.
// With an exit phase (sc not nil), the users then leave as Mark's do (see
// script) and it ends when every connection is closed. It fails when
// nothing arrives for stall, and when done is set before its end
// (interrupted, or the server failed).
func clients(cli []int32, count int, sc *script, stall time.Duration, done *atomic.Bool) sideResult {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	ep, err := newEpoll(cli)
	if err != nil {
		return sideResult{err: err}
	}
	defer unix.Close(ep)
	users := sc.users
	exits := sc.exitReq != nil
	n := len(cli)
	buf := make([]byte, readBuf)
	chat := make([]byte, MessageBytes)
	for i := range chat {
		chat[i] = 'x'
	}
	seen, sent, part := make([]int64, n), make([]int64, n), make([]int64, n)
	var in []int64 // bytes received, with an exit phase
	if exits {
		in = make([]int64, n)
	}
	want := int64(n) * int64(count) * int64(users-1)
	var recvd int64
	open := n
	ev := make([]unix.EpollEvent, 256)
	fail := func(err error) sideResult { return sideResult{err: fmt.Errorf("client: %w", err)} }
	// leave sends user i's ExitRoom and RoomList, two sends as Mark's.
	leave := func(i int) error {
		for _, b := range [][]byte{sc.exitReq[i], sc.roomList} {
			if e := rawSend(cli[i], b, unix.MSG_NOSIGNAL); e < 0 {
				return fmt.Errorf("send: %w", unix.Errno(-e))
			}
		}
		return nil
	}
	c0, t0 := threadCPU(), time.Now()
	for r := 0; r < n/users; r++ {
		if e := rawSend(cli[r*users], chat, unix.MSG_NOSIGNAL); e < 0 {
			return fail(fmt.Errorf("send: %w", unix.Errno(-e)))
		}
		sent[r*users]++
	}
	idle := time.Duration(0)
	for (!exits && recvd < want) || (exits && open > 0) {
		k, err := epollWait(ep, ev, 1000)
		if err != nil {
			return fail(fmt.Errorf("epoll_wait: %w", err))
		}
		if done.Load() {
			return sideResult{err: ErrInterrupted}
		}
		if k == 0 {
			if idle += time.Second; idle >= stall {
				return fail(fmt.Errorf("no message for %s (%d of %d received, %d of %d connections open)", stall, recvd, want, open, n))
			}
			continue
		}
		idle = 0
		for e := 0; e < k; e++ {
			i := int(ev[e].Fd)
			u := int64(i % users)
			got := rawRead(cli[i], buf)
			switch {
			case got == 0:
				return fail(fmt.Errorf("connection %d closed by the server", i))
			case got < 0:
				continue
			}
			chats := int64(got)
			if exits {
				chats = min(in[i]+int64(got), sc.chatIn) - min(in[i], sc.chatIn)
				in[i] += int64(got)
			}
			msgs := (part[i] + chats) / MessageBytes
			part[i] = (part[i] + chats) % MessageBytes
			for m := int64(0); m < msgs; m++ {
				seen[i]++
				recvd++
				if (sent[i]+seen[i])%int64(users) != u {
					continue
				}
				switch {
				case sent[i] < int64(count):
					if e := rawSend(cli[i], chat, unix.MSG_NOSIGNAL); e < 0 {
						return fail(fmt.Errorf("send: %w", unix.Errno(-e)))
					}
					sent[i]++
				case exits && u == 0:
					// the room's last chat: its user 0 leaves first
					if err := leave(i); err != nil {
						return fail(err)
					}
				}
			}
			if !exits || in[i] <= sc.chatIn {
				continue
			}
			// After the chats: the ExitRoom indications of the users
			// before this one, then (once it has left) its RoomList
			// confirm.
			past := in[i] - sc.chatIn
			switch at := sc.exitAt[i]; {
			case u > 0 && past == at && past-int64(got) < at:
				if err := leave(i); err != nil {
					return fail(err)
				}
			case past == at+int64(len(sc.listConf)):
				_ = unix.Close(int(cli[i]))
				cli[i] = -1
				open--
			case past > at+int64(len(sc.listConf)):
				return fail(fmt.Errorf("connection %d: %d bytes more than its exit's", i, past-at-int64(len(sc.listConf))))
			}
		}
	}
	return sideResult{cpu: threadCPU() - c0, elapsed: time.Since(t0).Seconds()}
}
