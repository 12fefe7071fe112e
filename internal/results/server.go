package results

import (
	"cmp"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// ServerInfo is the server a run measured: what it is and, when it said,
// the machine it ran on. A run records it whether it passed or failed,
// so that every run of one server is one platform of a report.
type ServerInfo struct {
	// Product is what the server is: "volanogo serve", or the program a
	// server command ran ("java", "nats-server"), or what --server-label
	// product= says.
	Product string `json:"product,omitempty"`
	// Version is the server's version as it said it (volanogo_server_info)
	// or as --server-label version= says.
	Version string `json:"version,omitempty"`
	// Engine is how the server serves its connections, as it said it
	// (volanogo serve's --engine: "goroutine", "epoll", "uring").
	Engine string `json:"engine,omitempty"`
	// Flags are the options the server was started with, its addresses
	// left out (they change from run to run): "--max-connections 150".
	Flags []string `json:"flags,omitempty"`
	// Labels are the --server-label key=value pairs of the run.
	Labels map[string]string `json:"labels,omitempty"`
	// Environment is the server's machine and runtime as the server said
	// it (volanogo_server_environment_info), nil when it did not.
	Environment *Environment `json:"environment,omitempty"`
}

// Name is the server's identity as one line, for a report's row: the
// product, version and engine, the flags and the labels, e.g.
// "volanogo serve v1.2.0 (epoll) --max-connections 150 site=lab"; ""
// when nothing is known.
func (s *ServerInfo) Name() string {
	if s == nil {
		return ""
	}
	var parts []string
	if s.Product != "" {
		parts = append(parts, s.Product)
	}
	if s.Version != "" {
		parts = append(parts, s.Version)
	}
	if s.Engine != "" {
		parts = append(parts, "("+s.Engine+")")
	}
	parts = append(parts, s.Flags...)
	for _, k := range slices.Sorted(maps.Keys(s.Labels)) {
		if identityLabel(k) {
			continue
		}
		parts = append(parts, k+"="+s.Labels[k])
	}
	return strings.Join(parts, " ")
}

// identityLabel reports whether a --server-label key sets a field of
// ServerInfo itself rather than being a label of its own.
func identityLabel(k string) bool { return k == "product" || k == "version" || k == "engine" }

// ApplyLabels records labels in s and lets the keys product, version and
// engine set those fields (a server that cannot say them itself).
func (s *ServerInfo) ApplyLabels(labels map[string]string) {
	if len(labels) == 0 {
		return
	}
	s.Labels = maps.Clone(labels)
	if v := labels["product"]; v != "" {
		s.Product = v
	}
	if v := labels["version"]; v != "" {
		s.Version = v
	}
	if v := labels["engine"]; v != "" {
		s.Engine = v
	}
}

// EnvironmentInfoLabels are the label names of a server's environment as
// an info metric (volanogo_server_environment_info), in order.
var EnvironmentInfoLabels = []string{"hostname", "os", "arch", "kernel", "distribution", "cpu_model", "cpus",
	"memory_bytes", "go_version", "gomaxprocs", "open_files_soft", "open_files_hard", "tcp_congestion"}

// InfoLabelValues are e's values for EnvironmentInfoLabels.
func (e Environment) InfoLabelValues() []string {
	i := strconv.Itoa
	n := func(v int64) string { return strconv.FormatInt(v, 10) }
	return []string{e.Hostname, e.OS, e.Arch, e.Kernel, e.Distribution, e.CPUModel, i(e.CPUs),
		n(e.MemoryBytes), e.GoVersion, i(e.GOMAXPROCS), n(e.OpenFilesSoft), n(e.OpenFilesHard), e.TCPCongestion}
}

// EnvironmentFromInfo reads an environment from the labels of an info
// metric (EnvironmentInfoLabels); a label missing or unreadable leaves its
// field at zero.
func EnvironmentFromInfo(labels map[string]string) Environment {
	atoi := func(k string) int { v, _ := strconv.Atoi(labels[k]); return v }
	atoi64 := func(k string) int64 { v, _ := strconv.ParseInt(labels[k], 10, 64); return v }
	return Environment{
		Hostname: labels["hostname"], OS: labels["os"], Arch: labels["arch"], Kernel: labels["kernel"],
		Distribution: labels["distribution"], CPUModel: labels["cpu_model"], CPUs: atoi("cpus"),
		MemoryBytes: atoi64("memory_bytes"), GoVersion: labels["go_version"], GOMAXPROCS: atoi("gomaxprocs"),
		OpenFilesSoft: atoi64("open_files_soft"), OpenFilesHard: atoi64("open_files_hard"),
		TCPCongestion: labels["tcp_congestion"],
	}
}

// Network is the path between the client and the server, measured just
// before the run.
type Network struct {
	// RTTSeconds is the median round trip of RTTSamples probes, and
	// RTTMinSeconds the fastest: a protocol Ping (Method "ping") where the
	// server answers one, else a TCP connect (Method "connect", the
	// kernel's handshake: SYN to SYN-ACK).
	RTTSeconds    float64 `json:"rtt_seconds"`
	RTTMinSeconds float64 `json:"rtt_min_seconds"`
	RTTSamples    int     `json:"rtt_samples"`
	Method        string  `json:"method"`
	// Interface is the client's network interface toward the server
	// ("lo", "eth0", "veth1"), and LinkMbps its device's speed in Mbit/s
	// as the kernel reports it (0: unknown, as for loopback). It is the
	// device's, not what tc shapes it to: a veth says 10,000.
	Interface string `json:"interface,omitempty"`
	LinkMbps  int64  `json:"link_mbps,omitempty"`
	// Loopback is true when the server's address is a loopback address.
	Loopback bool `json:"loopback,omitempty"`
}

// Retry places a run among the tries of load --retry: a failed run is
// made again, on a fresh server when the client starts it.
type Retry struct {
	// Attempt is this document's try, 1-based; Of the tries allowed.
	Attempt int `json:"attempt"`
	Of      int `json:"of"`
	// Superseded is set on a failed try that a later try replaced: a
	// report counts the later one in its place.
	Superseded bool `json:"superseded,omitempty"`
	// Earlier are the causes of the earlier tries' failures, in order
	// (each try's first failure).
	Earlier []Failure `json:"earlier,omitempty"`
}

// Search places a run in a load --find-limit search for the largest step
// that holds.
type Search struct {
	// Lo and Hi are the range searched, in rooms; Users the users per
	// room.
	Lo    int `json:"lo"`
	Hi    int `json:"hi"`
	Users int `json:"users"`
	// Probe is the step's place in the search (1-based) and MaxProbes the
	// most the search may make.
	Probe     int `json:"probe"`
	MaxProbes int `json:"max_probes"`
	// SLOSeconds is the p99 delivery latency past which a step broke
	// (0: none asked, the run rules alone decide).
	SLOSeconds float64 `json:"slo_seconds,omitempty"`
}

// Explained is the failure's example followed by the server's account of
// it, when there is one: "Mark14 in Room1: ...: connection reset by peer;
// the server: 52 connections refused (max_connections)".
func (f Failure) Explained() string {
	if f.Server == "" {
		return f.Example
	}
	return f.Example + "; the server: " + f.Server
}

// FirstFailure is the failure a failed run is cited for: its earliest
// (failures with a time before those without), else its most frequent;
// false when it has none.
func (d *Document) FirstFailure() (Failure, bool) {
	if len(d.Failures) == 0 {
		return Failure{}, false
	}
	fs := slices.Clone(d.Failures)
	slices.SortFunc(fs, func(a, c Failure) int {
		az, cz := a.At.IsZero(), c.At.IsZero()
		switch {
		case az && !cz:
			return 1
		case cz && !az:
			return -1
		}
		return cmp.Or(a.At.Compare(c.At), -cmp.Compare(a.Count, c.Count),
			cmp.Compare(a.Kind, c.Kind), cmp.Compare(a.Example, c.Example))
	})
	return fs[0], true
}
