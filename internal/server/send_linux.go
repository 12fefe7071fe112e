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

// sendRaw sends b (not empty) on the socket fd without blocking and
// returns what it took: 0 or less when it took nothing or failed (the
// caller's sendLocked then tries again and reports the error). Small
// enough to be inlined, so that its callers make the system call
// themselves (relayChat).
func sendRaw(fd int, b []byte) int {
	n, _, _ := syscall.RawSyscall6(sysSend, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)),
		syscall.MSG_DONTWAIT|syscall.MSG_NOSIGNAL, 0, 0)
	return int(n) // -1 on an error
}
