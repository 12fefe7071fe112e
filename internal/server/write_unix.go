//go:build unix

package server

import (
	"syscall"
	"unsafe"
)

const canRawWrite = true

// useSendto selects send(2) over write(2) for the relay's writes on Linux.
// send goes straight to the socket layer; write passes through the VFS
// first (vfs_write and its checks were about 4% of the server's CPU at
// 19,000 connections). The benchmark's child server can turn it off to
// compare.
var useSendto = true

// writeNonblock writes as much of b as the socket takes now. The socket
// is in non-blocking mode (the Go runtime sets it so), so a full socket
// returns EAGAIN, which is not an error here.
//
// It is a raw system call: a non-blocking write never waits, so the
// scheduler need not be told (entersyscall/exitsyscall cost about 5% of
// the server's CPU at 19,000 connections in a perf profile).
func writeNonblock(fd uintptr, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, errno := rawSend(fd, unsafe.Pointer(&b[n]), len(b)-n)
		switch {
		case errno == syscall.EINTR:
			continue
		case errno == syscall.EAGAIN:
			return n, nil
		case errno != 0:
			return n, errno
		}
		n += m
	}
	return n, nil
}
