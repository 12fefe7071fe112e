//go:build unix

package server

import "syscall"

func openFilesLimit() (soft, hard uint64) {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		return 0, 0
	}
	return uint64(r.Cur), uint64(r.Max)
}
