// Package sysinfo describes the machine a run happens on and the resource
// use of processes, for the result document (see package results).
//
// Collect fills a results.Environment: Go version, OS and kernel,
// distribution, CPU model and count, memory, GOMAXPROCS, the open-files
// limit and the ephemeral port range. On Linux everything comes from
// uname(2), getrlimit(2), /proc and /etc/os-release; elsewhere what cannot
// be known is left empty, never an error.
//
// It is also where volanogo reads the operating system, one way each:
// ReadProc and Self read a process's CPU time, resident memory, threads,
// open descriptors and open-files limit from /proc (Linux, through
// prometheus/procfs; ErrUnsupported elsewhere); CPUTimes is this process's
// own CPU time (getrusage), PeakRSS its peak resident memory;
// OpenFilesLimit is its open-files limit and RaiseOpenFilesLimit makes the
// soft limit the hard one; ReadTCPCounters reads the kernel's TCP counters
// of the network namespace; ProcessCPUs, AvailableCPUs and StartPinned
// read and set CPU affinity.
package sysinfo

import (
	"bufio"
	"errors"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/volanogo/volanogo/internal/results"
)

// ErrUnsupported is returned where the platform does not offer the
// information (for example /proc outside Linux).
var ErrUnsupported = errors.New("sysinfo: not supported on " + runtime.GOOS)

// Collect describes this machine and process. Fields that cannot be read
// are left at their zero value.
func Collect() results.Environment {
	env := results.Environment{
		OS:         runtime.GOOS,
		Arch:       runtime.GOARCH,
		CPUs:       runtime.NumCPU(),
		GoVersion:  runtime.Version(),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
	}
	env.Hostname, _ = os.Hostname()
	env.Kernel = kernelRelease()
	env.Distribution = distribution()
	env.CPUModel = cpuModel()
	env.MemoryBytes = memoryBytes()
	env.OpenFilesSoft, env.OpenFilesHard = OpenFilesLimit()
	env.EphemeralPorts = ephemeralPorts()
	env.TCPCongestion = tcpCongestion()
	env.LoopbackQuickACK = loopbackQuickACK()
	return env
}

// clampLimit maps RLIM_INFINITY (and anything past int64) to -1.
func clampLimit(v uint64) int64 {
	if v > 1<<62 {
		return -1
	}
	return int64(v)
}

// parseOSRelease returns PRETTY_NAME (or NAME VERSION) of an os-release file.
func parseOSRelease(data string) string {
	vals := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(data))
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), "=")
		if !ok || strings.HasPrefix(k, "#") {
			continue
		}
		if uq, err := strconv.Unquote(v); err == nil {
			v = uq
		} else {
			v = strings.Trim(v, `"'`)
		}
		vals[k] = v
	}
	if p := vals["PRETTY_NAME"]; p != "" {
		return p
	}
	return strings.TrimSpace(vals["NAME"] + " " + vals["VERSION"])
}

// ProcStat is a process's resource use.
type ProcStat struct {
	// UserSeconds and SystemSeconds are the CPU time used so far.
	UserSeconds, SystemSeconds float64
	// RSSBytes is the resident set size now.
	RSSBytes int64
	// Threads is the number of OS threads.
	Threads int
	// FDs is the number of open file descriptors, -1 when they cannot be
	// counted (another user's process).
	FDs int
	// MaxFDs is the process's soft open-files limit (-1 unlimited, 0
	// unknown).
	MaxFDs int64
}

// CPUSeconds is user + system time.
func (p ProcStat) CPUSeconds() float64 { return p.UserSeconds + p.SystemSeconds }

// Self is ReadProc of the current process.
func Self() (ProcStat, error) { return ReadProc(os.Getpid()) }
