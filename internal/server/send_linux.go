//go:build linux

package server

import (
	"syscall"
	"unsafe"
)

func rawSend(fd uintptr, p unsafe.Pointer, n int) (int, syscall.Errno) {
	if useSendto {
		m, _, errno := syscall.RawSyscall6(sysSend, fd, uintptr(p), uintptr(n),
			syscall.MSG_DONTWAIT|syscall.MSG_NOSIGNAL, 0, 0)
		return int(m), errno
	}
	m, _, errno := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(p), uintptr(n))
	return int(m), errno
}

// relayChat sends ind to every connection of conns but c, then conf to
// c, as send would, and returns the receivers. The send system call is
// made here, not four calls down (send, tryWrite, writeNonblock,
// rawSend): the kernel's path of a loopback send is deeper than the
// processor's return stack, so every return after it was mispredicted,
// and the returns up that chain were about a quarter of the server's
// user-space time at 15 rooms in a perf profile. What the socket does not
// take at once goes through sendLocked, under the same hold of the lock.
func relayChat(c *conn, conns []*conn, ind, conf []byte) int {
	n := 0
	for i := 0; i <= len(conns); i++ {
		o, b := c, conf
		if i < len(conns) {
			if o = conns[i]; o == c {
				continue
			}
			b = ind
			n++
		}
		o.mu.Lock()
		if o.fd >= 0 && !o.flushing && !o.closed && o.lingering == "" && useSendto {
			m, _, errno := syscall.RawSyscall6(sysSend, uintptr(o.fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)),
				syscall.MSG_DONTWAIT|syscall.MSG_NOSIGNAL, 0, 0)
			if errno == 0 {
				o.taken += int64(m)
				b = b[m:]
			}
		}
		if len(b) > 0 {
			o.sendLocked(b) // the rest, or an error, as send would
		}
		o.mu.Unlock()
	}
	return n
}
