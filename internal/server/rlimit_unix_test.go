//go:build unix

package server

import "syscall"

// setOpenFiles sets the process's open-files limit (soft and hard) to n.
func setOpenFiles(n int) error {
	lim := syscall.Rlimit{Cur: uint64(n), Max: uint64(n)}
	return syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
}
