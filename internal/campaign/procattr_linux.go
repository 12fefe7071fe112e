package campaign

import (
	"os"
	"syscall"
)

// childAttr are the attributes of every process the campaign starts (a
// server, a shard): its own process group, so that the terminal's SIGINT
// reaches the campaign alone (which then stops its children in order and
// keeps their results), and SIGKILL when the campaign dies, so that no
// child outlives it (a kill -9 included). The parent-death signal follows
// the thread that forked, and Go keeps that thread alive (none of the
// campaign's goroutines that start processes exits while locked to its
// thread).
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// peakRSS is an exited child's peak resident memory in bytes (ru_maxrss is
// in kilobytes on Linux).
func peakRSS(st *os.ProcessState) int64 {
	if ru, ok := st.SysUsage().(*syscall.Rusage); ok && ru != nil {
		return int64(ru.Maxrss) * 1024 // int32 on 32-bit platforms
	}
	return 0
}
