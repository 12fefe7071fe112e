//go:build unix

package sysinfo

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// maxOpenFiles caps the soft limit RaiseOpenFilesLimit sets (0: no cap).
var maxOpenFiles = func() uint64 { return 0 }

func capOpenFiles(hard uint64) uint64 {
	if m := maxOpenFiles(); m > 0 && hard > m {
		return m
	}
	return hard
}

func kernelRelease() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return ""
	}
	return unix.ByteSliceToString(u.Release[:])
}

func openFilesLimit() (soft, hard uint64, err error) {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		return 0, 0, err
	}
	return uint64(rl.Cur), uint64(rl.Max), nil
}

// RaiseOpenFilesLimit raises the soft open-files limit to the hard one and
// returns both as they are afterwards. Go (1.19 and later) already raises it
// at start-up on Unix, to the hard limit less one (Go 1.22 and later, which
// use the difference to detect a later prlimit), and restores the original
// soft limit in the processes it starts. After RaiseOpenFilesLimit the soft
// limit is the hard one, and child processes (a server started by the
// client, say) inherit it instead of the original. On macOS the soft limit
// is capped at the kernel's per-process maximum.
func RaiseOpenFilesLimit() (soft, hard uint64, err error) {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		return 0, 0, fmt.Errorf("getrlimit(RLIMIT_NOFILE): %w", err)
	}
	if rl.Cur < rl.Max {
		want := rl
		setLimit(&want.Cur, capOpenFiles(uint64(rl.Max)))
		if want.Cur > rl.Cur {
			if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &want); err != nil {
				return uint64(rl.Cur), uint64(rl.Max), fmt.Errorf("setrlimit(RLIMIT_NOFILE, %d): %w", want.Cur, err)
			}
			if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
				return 0, 0, fmt.Errorf("getrlimit(RLIMIT_NOFILE): %w", err)
			}
		}
	}
	return uint64(rl.Cur), uint64(rl.Max), nil
}

// setLimit stores v in a limit field, which is int64 on some systems.
func setLimit[T ~int64 | ~uint64](p *T, v uint64) { *p = T(v) }
