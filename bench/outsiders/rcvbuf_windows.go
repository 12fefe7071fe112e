package main

import "syscall"

// setReceiveBuffer sets a socket's receive buffer before it connects (so
// that the window it offers is small from the start).
func setReceiveBuffer(fd uintptr, n int) {
	_ = syscall.SetsockoptInt(syscall.Handle(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, n)
}
