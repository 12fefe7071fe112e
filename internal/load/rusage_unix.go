//go:build unix

package load

import "golang.org/x/sys/unix"

// cpuTimes returns the process's user and system CPU seconds so far.
func cpuTimes() (user, sys float64) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0, 0
	}
	return float64(ru.Utime.Sec) + float64(ru.Utime.Usec)/1e6, float64(ru.Stime.Sec) + float64(ru.Stime.Usec)/1e6
}

// openFilesLimit is the soft RLIMIT_NOFILE now (-1 unknown).
func openFilesLimit() int64 {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return -1
	}
	return int64(lim.Cur)
}
