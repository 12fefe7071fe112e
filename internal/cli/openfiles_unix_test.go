//go:build unix

package cli

import "syscall"

func setOpenFiles(n uint64) error {
	return syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: n, Max: n})
}
