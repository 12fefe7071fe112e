package sysinfo

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"

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

// ReadProc reads the resource use of process pid from /proc/<pid>/stat,
// /proc/<pid>/statm and /proc/<pid>/fd.
func ReadProc(pid int) (ProcStat, error) {
	dir := "/proc/" + strconv.Itoa(pid)
	stat, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return ProcStat{}, fmt.Errorf("read process %d: %w", pid, err)
	}
	p, err := parseStat(stat)
	if err != nil {
		return ProcStat{}, fmt.Errorf("read process %d: %w", pid, err)
	}
	if statm, err := os.ReadFile(dir + "/statm"); err == nil {
		if f := strings.Fields(string(statm)); len(f) > 1 {
			if pages, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				p.RSSBytes = pages * int64(os.Getpagesize())
			}
		}
	}
	p.FDs = countFDs(dir + "/fd")
	return p, nil
}

// parseStat reads /proc/<pid>/stat: utime (14), stime (15), num_threads
// (20) and rss (24, pages), counting fields after the command in parentheses,
// which may itself hold spaces and parentheses.
func parseStat(b []byte) (ProcStat, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return ProcStat{}, fmt.Errorf("malformed stat %q", b)
	}
	f := strings.Fields(string(b[i+1:])) // f[0] is field 3 (state)
	if len(f) < 22 {
		return ProcStat{}, fmt.Errorf("malformed stat: %d fields", len(f)+2)
	}
	field := func(n int) int64 {
		v, _ := strconv.ParseInt(f[n-3], 10, 64)
		return v
	}
	return ProcStat{
		UserSeconds:   float64(field(14)) / clockTicks,
		SystemSeconds: float64(field(15)) / clockTicks,
		Threads:       int(field(20)),
		RSSBytes:      field(24) * int64(os.Getpagesize()),
		FDs:           -1,
	}, nil
}

func countFDs(dir string) int {
	f, err := os.Open(dir)
	if err != nil {
		return -1
	}
	defer f.Close()
	n := 0
	for {
		names, err := f.Readdirnames(1024)
		n += len(names)
		if err != nil || len(names) == 0 {
			break
		}
	}
	return n
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
