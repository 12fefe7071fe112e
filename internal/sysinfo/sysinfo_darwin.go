package sysinfo

import (
	"strconv"

	"golang.org/x/sys/unix"
)

func init() {
	maxOpenFiles = func() uint64 {
		n, err := unix.SysctlUint32("kern.maxfilesperproc")
		if err != nil {
			return 10240 // OPEN_MAX
		}
		return uint64(n)
	}
}

func distribution() string {
	v, err := unix.Sysctl("kern.osproductversion")
	if err != nil || v == "" {
		return "macOS"
	}
	return "macOS " + v
}

func cpuModel() string {
	s, _ := unix.Sysctl("machdep.cpu.brand_string")
	return s
}

func memoryBytes() int64 {
	n, err := unix.SysctlUint64("hw.memsize")
	if err != nil {
		return 0
	}
	return int64(n)
}

func tcpCongestion() string { return "" }

func loopbackQuickACK() bool { return false }

func ephemeralPorts() string {
	first, err1 := unix.SysctlUint32("net.inet.ip.portrange.first")
	last, err2 := unix.SysctlUint32("net.inet.ip.portrange.last")
	if err1 != nil || err2 != nil {
		return ""
	}
	return strconv.FormatUint(uint64(first), 10) + " " + strconv.FormatUint(uint64(last), 10)
}

// ReadProc is not supported outside Linux: it returns ErrUnsupported.
func ReadProc(pid int) (ProcStat, error) { return ProcStat{}, ErrUnsupported }

// PeakRSS is the current process's peak resident set size in bytes
// (getrusage's ru_maxrss), 0 if unknown.
func PeakRSS() int64 {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return int64(ru.Maxrss) // bytes on macOS
}
