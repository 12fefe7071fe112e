//go:build linux && !386

package server

import "syscall"

// sysRecv and sysSend are recvfrom(2) and sendto(2), which the raw reads
// and sends call with no address.
const (
	sysRecv = syscall.SYS_RECVFROM
	sysSend = syscall.SYS_SENDTO
)
