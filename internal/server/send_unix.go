//go:build unix && !linux

package server

import (
	"syscall"
	"unsafe"
)

func rawSend(fd uintptr, p unsafe.Pointer, n int) (int, syscall.Errno) {
	m, _, errno := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(p), uintptr(n))
	return int(m), errno
}
