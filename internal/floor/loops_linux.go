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
	err          error
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
// until done. ready is closed (or sent an error) once it waits.
func serveEpoll(srv []int32, users int, done *atomic.Bool, ready chan<- error) sideResult {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	ep, err := newEpoll(srv)
	if err != nil {
		ready <- err
		return sideResult{err: err}
	}
	defer unix.Close(ep)
	buf := make([]byte, readBuf)
	ev := make([]unix.EpollEvent, 256)
	c0 := threadCPU()
	close(ready)
	for !done.Load() {
		n, err := epollWait(ep, ev, 100)
		if err != nil {
			return sideResult{cpu: threadCPU() - c0, err: fmt.Errorf("server: epoll_wait: %w", err)}
		}
		for k := 0; k < n; k++ {
			i := int(ev[k].Fd)
			r := i / users
			got := rawRead(srv[i], buf)
			if got <= 0 {
				continue
			}
			for j := 0; j < users; j++ {
				if j != i%users {
					rawSend(srv[r*users+j], buf[:got], unix.MSG_DONTWAIT)
				}
			}
		}
	}
	return sideResult{cpu: threadCPU() - c0}
}

// clients is the floor's client on one OS thread: user 0 of each room
// speaks first, and a user speaks when (its sent + received) mod users is
// its index, until every user has sent count and received everything.
// It sets done when it ends. It fails when nothing arrives for stall, and
// when done is set before its end (interrupted, or the server failed).
func clients(cli []int32, users, count int, stall time.Duration, done *atomic.Bool) sideResult {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer done.Store(true)
	ep, err := newEpoll(cli)
	if err != nil {
		return sideResult{err: err}
	}
	defer unix.Close(ep)
	n := len(cli)
	buf := make([]byte, readBuf)
	chat := make([]byte, MessageBytes)
	for i := range chat {
		chat[i] = 'x'
	}
	seen, sent, part := make([]int64, n), make([]int64, n), make([]int64, n)
	want := int64(n) * int64(count) * int64(users-1)
	var recvd int64
	ev := make([]unix.EpollEvent, 256)
	c0, t0 := threadCPU(), time.Now()
	for r := 0; r < n/users; r++ {
		if e := rawSend(cli[r*users], chat, 0); e < 0 {
			return sideResult{err: fmt.Errorf("client: send: %w", unix.Errno(-e))}
		}
		sent[r*users]++
	}
	idle := time.Duration(0)
	for recvd < want {
		k, err := epollWait(ep, ev, 1000)
		if err != nil {
			return sideResult{err: fmt.Errorf("client: epoll_wait: %w", err)}
		}
		if done.Load() {
			return sideResult{err: ErrInterrupted}
		}
		if k == 0 {
			if idle += time.Second; idle >= stall {
				return sideResult{err: fmt.Errorf("client: no message for %s (%d of %d received)", stall, recvd, want)}
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
				return sideResult{err: fmt.Errorf("client: connection %d closed by the server", i)}
			case got < 0:
				continue
			}
			msgs := (part[i] + int64(got)) / MessageBytes
			part[i] = (part[i] + int64(got)) % MessageBytes
			for m := int64(0); m < msgs; m++ {
				seen[i]++
				recvd++
				if (sent[i]+seen[i])%int64(users) == u && sent[i] < int64(count) {
					if e := rawSend(cli[i], chat, 0); e < 0 {
						return sideResult{err: fmt.Errorf("client: send: %w", unix.Errno(-e))}
					}
					sent[i]++
				}
			}
		}
	}
	return sideResult{cpu: threadCPU() - c0, elapsed: time.Since(t0).Seconds()}
}
