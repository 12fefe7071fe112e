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

// sendRaw sends b on the socket fd without blocking and returns what it
// took (0 or less when nothing or on failure), as send_linux.go's.
func sendRaw(fd int, b []byte) int {
	n, _, errno := syscall.RawSyscall(syscall.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	if errno != 0 {
		return 0
	}
	return int(n)
}
