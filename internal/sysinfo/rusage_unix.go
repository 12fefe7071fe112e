//go:build unix

package sysinfo

import "golang.org/x/sys/unix"

// CPUTimes is this process's user and system CPU seconds so far (0 when
// unknown).
func CPUTimes() (user, sys float64) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0, 0
	}
	return float64(ru.Utime.Sec) + float64(ru.Utime.Usec)/1e6, float64(ru.Stime.Sec) + float64(ru.Stime.Usec)/1e6
}
