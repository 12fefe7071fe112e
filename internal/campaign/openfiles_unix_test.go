//go:build unix

package campaign

import (
	"strconv"
	"syscall"
)

// setOpenFiles sets this process's open-files limit (soft and hard).
func setOpenFiles(v string) error {
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return err
	}
	return syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: n, Max: n})
}
