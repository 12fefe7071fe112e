package sysinfo

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"
)

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat CPU times: 100 on
// every Linux architecture Go supports (sysconf(_SC_CLK_TCK) needs cgo).
const clockTicks = 100

func readFile(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return string(b)
}

func distribution() string {
	for _, p := range []string{"/etc/os-release", "/usr/lib/os-release"} {
		if s := readFile(p); s != "" {
			return parseOSRelease(s)
		}
	}
	return ""
}

func cpuModel() string { return parseCPUInfo(readFile("/proc/cpuinfo")) }

// parseCPUInfo returns the first "model name" of /proc/cpuinfo, or on
// architectures without one (arm64) "Hardware", "cpu model" or "Processor".
func parseCPUInfo(s string) string {
	fallback := ""
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch k {
		case "model name":
			if v != "" {
				return v
			}
		case "Hardware", "cpu model", "Processor", "cpu":
			if fallback == "" {
				fallback = v
			}
		}
	}
	return fallback
}

func memoryBytes() int64 { return parseMeminfo(readFile("/proc/meminfo"), "MemTotal") }

// parseMeminfo returns the field key of a /proc/meminfo-style text ("Key:
// 123 kB") in bytes, 0 if absent.
func parseMeminfo(s, key string) int64 {
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || k != key {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			return 0
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0
		}
		if len(f) > 1 && strings.EqualFold(f[1], "kB") {
			n *= 1024
		}
		return n
	}
	return 0
}

func ephemeralPorts() string {
	return strings.Join(strings.Fields(readFile("/proc/sys/net/ipv4/ip_local_port_range")), " ")
}

func tcpCongestion() string {
	return strings.TrimSpace(readFile("/proc/sys/net/ipv4/tcp_congestion_control"))
}

// loopbackQuickACK asks the kernel for its IPv4 routes (every table) and
// reports whether the most specific local route of 127.0.0.1 has quickack.
func loopbackQuickACK() bool {
	b, err := syscall.NetlinkRIB(syscall.RTM_GETROUTE, syscall.AF_INET)
	if err != nil {
		return false
	}
	q, err := parseLoopbackQuickACK(b)
	return err == nil && q
}

// parseLoopbackQuickACK reads a route dump (netlink RTM_NEWROUTE messages)
// and reports whether the most specific local route that covers 127.0.0.1
// carries the metric RTAX_QUICKACK with a value other than 0.
func parseLoopbackQuickACK(dump []byte) (bool, error) {
	msgs, err := syscall.ParseNetlinkMessage(dump)
	if err != nil {
		return false, err
	}
	best, quick := -1, false
	for i := range msgs {
		m := &msgs[i]
		if m.Header.Type != syscall.RTM_NEWROUTE || len(m.Data) < syscall.SizeofRtMsg {
			continue
		}
		// struct rtmsg: family, dst_len, src_len, tos, table, protocol,
		// scope, type (one byte each), flags.
		dstLen, typ := int(m.Data[1]), m.Data[7]
		if typ != syscall.RTN_LOCAL || dstLen > 32 || dstLen <= best {
			continue
		}
		attrs, err := syscall.ParseNetlinkRouteAttr(m)
		if err != nil {
			return false, err
		}
		var dst []byte
		q := false
		for _, a := range attrs {
			switch a.Attr.Type {
			case syscall.RTA_DST:
				dst = a.Value
			case syscall.RTA_METRICS:
				q = metricQuickACK(a.Value)
			}
		}
		if (dstLen == 0 || len(dst) == 4) && coversLoopback(dst, dstLen) {
			best, quick = dstLen, q
		}
	}
	return quick, nil
}

// coversLoopback reports whether the prefix dst/bits contains 127.0.0.1.
func coversLoopback(dst []byte, bits int) bool {
	lo := [4]byte{127, 0, 0, 1}
	for i := 0; i < bits; i++ {
		mask := byte(0x80) >> (i % 8)
		if dst[i/8]&mask != lo[i/8]&mask {
			return false
		}
	}
	return true
}

// metricQuickACK finds RTAX_QUICKACK among a route's metrics (nested
// attributes: length, type, a 32-bit value).
func metricQuickACK(b []byte) bool {
	for len(b) >= 4 {
		l := int(binary.NativeEndian.Uint16(b[0:2]))
		t := binary.NativeEndian.Uint16(b[2:4])
		if l < 4 || l > len(b) {
			return false
		}
		if t == unix.RTAX_QUICKACK && l >= 8 {
			return binary.NativeEndian.Uint32(b[4:8]) != 0
		}
		next := (l + 3) &^ 3
		if next > len(b) {
			return false
		}
		b = b[next:]
	}
	return false
}

// ReadProc reads the resource use of process pid from /proc/<pid>
// (stat, statm, fd, limits) through prometheus/procfs.
func ReadProc(pid int) (ProcStat, error) {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return ProcStat{}, fmt.Errorf("read process %d: %w", pid, err)
	}
	return readProc(fs, pid)
}

func readProc(fs procfs.FS, pid int) (ProcStat, error) {
	p, err := fs.Proc(pid)
	if err != nil {
		return ProcStat{}, fmt.Errorf("read process %d: %w", pid, err)
	}
	st, err := p.Stat()
	if err != nil {
		return ProcStat{}, fmt.Errorf("read process %d: %w", pid, err)
	}
	ps := ProcStat{
		UserSeconds:   float64(st.UTime) / clockTicks,
		SystemSeconds: float64(st.STime) / clockTicks,
		Threads:       st.NumThreads,
		RSSBytes:      int64(st.ResidentMemory()),
		FDs:           -1,
	}
	// statm's resident count is the kernel's current one; stat's can lag
	// behind in a process that has just started.
	if m, err := p.Statm(); err == nil && m.Resident > 0 {
		ps.RSSBytes = int64(m.ResidentBytes())
	}
	if n, err := p.FileDescriptorsLen(); err == nil {
		ps.FDs = n
	}
	if l, err := p.Limits(); err == nil {
		ps.MaxFDs = clampLimit(l.OpenFiles)
	}
	return ps, nil
}

// PeakRSS is the current process's peak resident set size in bytes: VmHWM
// of /proc/self/status, or getrusage's ru_maxrss; 0 if neither is known.
func PeakRSS() int64 {
	if n := parseMeminfo(readFile("/proc/self/status"), "VmHWM"); n > 0 {
		return n
	}
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err == nil {
		return int64(ru.Maxrss) * 1024 // kilobytes on Linux
	}
	return 0
}
