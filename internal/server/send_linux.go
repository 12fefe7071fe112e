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
