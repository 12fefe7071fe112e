//go:build unix

package server

import "syscall"

const canRawWrite = true

// writeNonblock writes as much of b as the socket takes now. The socket
// is in non-blocking mode (the Go runtime sets it so), so a full socket
// returns EAGAIN, which is not an error here.
func writeNonblock(fd uintptr, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := syscall.Write(int(fd), b[n:])
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			return n, nil
		case err != nil:
			return n, err
		}
		n += m
	}
	return n, nil
}
