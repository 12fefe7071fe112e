package server

import "syscall"

// sysRecv and sysSend are read(2) and write(2) on 386, where the socket
// calls go through socketcall(2) and have no numbers of their own. On a
// non-blocking socket they are a recv and a send without flags; the
// runtime turns the SIGPIPE of a write to a reset socket into EPIPE.
const (
	sysRecv = syscall.SYS_READ
	sysSend = syscall.SYS_WRITE
)
