//go:build unix

package swarm

import (
	"io"
	"os"
	"syscall"
	"unsafe"

	"github.com/volanogo/volanogo/pkg/protocol"
)

func (l *link) initRaw() {
	if sc, ok := l.nc.(syscall.Conn); ok {
		if rc, err := sc.SyscallConn(); err == nil {
			l.rc = rc
		}
	}
}

// rawIO is read(2) or write(2) on a non-blocking socket without telling
// the scheduler (the call does not block): cheaper than syscall.Read.
func rawIO(trap uintptr, fd int, b []byte) (int, error) {
	r, _, e := syscall.RawSyscall(trap, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	if e != 0 {
		return -1, e
	}
	return int(r), nil
}

func (l *link) rawRead(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if l.rbuf == nil {
		return l.sysRead(p)
	}
	if l.rpos == l.rend {
		n, err := l.sysRead(l.rbuf)
		if err != nil {
			return 0, err
		}
		l.rpos, l.rend = 0, n
	}
	n := copy(p, l.rbuf[l.rpos:l.rend])
	l.rpos += n
	return n, nil
}

// sysRead is one read(2) of the socket, unless an earlier one drained it.
func (l *link) sysRead(p []byte) (int, error) {
	if !l.mayRead {
		return 0, errWouldBlock
	}
	for {
		n, err := rawIO(syscall.SYS_READ, l.fd, p)
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			l.mayRead = false
			return 0, errWouldBlock
		case err != nil:
			return 0, os.NewSyscallError("read", err)
		case n == 0:
			return 0, io.EOF
		}
		// A read that filled p may have left bytes behind, which no new
		// readiness event would announce; nor would one announce an end
		// of stream already reported (the event loop's edge-triggered
		// readiness), so then reads go on until it comes.
		l.mayRead = n == len(p) || l.ended
		return n, nil
	}
}

// rawWrite writes in raw mode: the read callback holds a reference to the
// descriptor, and a non-blocking write of one small packet normally
// completes; if not, the rest goes through the poller.
func (l *link) rawWrite(pkt []byte) error {
	n, err := rawIO(syscall.SYS_WRITE, l.fd, pkt)
	if err == nil && n == len(pkt) {
		return nil
	}
	if err != nil && err != syscall.EAGAIN && err != syscall.EINTR {
		return os.NewSyscallError("write", err)
	}
	if l.onLoop {
		return l.loopWrite(pkt[max(n, 0):])
	}
	_, err = l.nc.Write(pkt[max(n, 0):])
	return err
}

// loop calls handle with every packet until it says the user is done or
// fails, or the stream ends. Over TCP it runs in raw mode (see link).
func (u *user) loop(handle func(protocol.Frame) (bool, error)) error {
	l := u.l
	if l.rc == nil {
		return u.plainLoop(handle)
	}
	var result error
	if u.batch && l.rbuf == nil {
		l.rbuf = make([]byte, 2048)
	}
	err := l.rc.Read(func(fd uintptr) bool {
		l.fd, l.raw, l.mayRead = int(fd), true, true
		stop, err := u.pump(handle)
		if stop {
			result = err
		}
		return stop
	})
	l.raw = false
	if result == nil && err != nil {
		result = u.failIO("read", err)
	}
	return result
}

// pump reads and handles packets in raw mode until the socket is drained
// (false: wait for readiness), or until handle says the user is done or
// fails, or the stream ends (true, with the user's outcome).
func (u *user) pump(handle func(protocol.Frame) (bool, error)) (bool, error) {
	l := u.l
	for {
		if !l.mayRead && u.rd.Buffered() == 0 && l.rpos == l.rend && l.buffered() == 0 {
			// Drained: wait for readiness (no read, no error), for the
			// bytes up to this user's turn when reads are batched.
			u.setLowat()
			return false, nil
		}
		f, err := u.rd.Next()
		if err == errWouldBlock {
			u.setLowat()
			return false, nil
		}
		if err != nil {
			return true, u.failIO("read", err)
		}
		if done, err := handle(f); done || err != nil {
			return true, err
		}
	}
}

// setLowat sets the socket's receive low-water mark (SO_RCVLOWAT) to the
// bytes this user waits for, so that the kernel wakes it once per turn
// rather than once per message (batched reads; see Config.BatchReads).
func (u *user) setLowat() {
	if !u.batch {
		return
	}
	want := u.wantBytes()
	if want == u.lowat {
		return
	}
	u.lowat = want
	_ = syscall.SetsockoptInt(u.l.fd, syscall.SOL_SOCKET, syscall.SO_RCVLOWAT, want)
	if want > 1 && u.batchOff.Load() {
		u.lowat = 1
		_ = syscall.SetsockoptInt(u.l.fd, syscall.SOL_SOCKET, syscall.SO_RCVLOWAT, 1)
	}
}

// unbatch turns batched reads off for every user of the room (the stall
// watchdog's rescue when the bytes a user waits for never come: a server
// whose packets are not the sizes expected, or a lost message). Setting
// the low-water mark wakes a waiting reader.
func (r *room) unbatch() {
	for _, u := range r.users {
		if !(u.batch || u.confirmLowat) || u.l == nil || u.l.rc == nil {
			continue
		}
		u.batchOff.Store(true)
		if u.l.evControl(func(fd int) { _ = syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_RCVLOWAT, 1) }) {
			continue
		}
		_ = u.l.rc.Control(func(fd uintptr) {
			_ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVLOWAT, 1)
		})
	}
}

// setRcvLowat sets the socket's receive low-water mark (raw mode: the
// descriptor is the link's).
func (l *link) setRcvLowat(n int) {
	_ = syscall.SetsockoptInt(l.fd, syscall.SOL_SOCKET, syscall.SO_RCVLOWAT, n)
}
