package load

import (
	"bytes"
	"fmt"
	"os"
	"strconv"

	"github.com/volanogo/volanogo/internal/results"
)

// The kernel's TCP counters (Linux): /proc/net/snmp has the "Tcp:" group,
// /proc/net/netstat the "TcpExt:" group, each as a line of names and a
// line of values.
const (
	procSNMP    = "/proc/net/snmp"
	procNetstat = "/proc/net/netstat"
)

// readTCPCounters reads the kernel's TCP counters now, or nil where there
// are none (not Linux, /proc not mounted).
func readTCPCounters() *results.TCPCounters {
	snmp, err := os.ReadFile(procSNMP)
	if err != nil {
		return nil
	}
	netstat, err := os.ReadFile(procNetstat)
	if err != nil {
		return nil
	}
	c, err := parseTCPCounters(snmp, netstat)
	if err != nil {
		return nil
	}
	return &c
}

// parseTCPCounters picks the counters of results.TCPCounters out of the
// contents of /proc/net/snmp and /proc/net/netstat. A counter the kernel
// does not have is 0; a group missing altogether, or a value that is not
// a number, is an error.
func parseTCPCounters(snmp, netstat []byte) (results.TCPCounters, error) {
	tcp, err := procGroup(snmp, "Tcp:")
	if err != nil {
		return results.TCPCounters{}, fmt.Errorf("%s: %w", procSNMP, err)
	}
	ext, err := procGroup(netstat, "TcpExt:")
	if err != nil {
		return results.TCPCounters{}, fmt.Errorf("%s: %w", procNetstat, err)
	}
	return results.TCPCounters{
		SegmentsIn:    tcp["InSegs"],
		SegmentsOut:   tcp["OutSegs"],
		Retransmitted: tcp["RetransSegs"],
		DelayedACKs:   ext["DelayedACKs"],
		LossProbes:    ext["TCPLossProbes"],
	}, nil
}

// procGroup reads the group of counters whose two lines (names, values)
// start with prefix.
func procGroup(data []byte, prefix string) (map[string]int64, error) {
	var names [][]byte
	for line := range bytes.Lines(data) {
		rest, ok := bytes.CutPrefix(line, []byte(prefix))
		if !ok {
			continue
		}
		fields := bytes.Fields(rest)
		if names == nil {
			names = fields
			continue
		}
		if len(fields) != len(names) {
			return nil, fmt.Errorf("%s %d names but %d values", prefix, len(names), len(fields))
		}
		m := make(map[string]int64, len(names))
		for i, f := range fields {
			v, err := strconv.ParseInt(string(f), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%s %s: %q is not a number", prefix, names[i], f)
			}
			m[string(names[i])] = v
		}
		return m, nil
	}
	return nil, fmt.Errorf("no %s counters", prefix)
}

// tcpDelta is the counters' growth from a to b, nil unless both were read.
// A counter that went down (a namespace's counters do not) is 0.
func tcpDelta(a, b *results.TCPCounters) *results.TCPCounters {
	if a == nil || b == nil {
		return nil
	}
	return &results.TCPCounters{
		SegmentsIn:    max(0, b.SegmentsIn-a.SegmentsIn),
		SegmentsOut:   max(0, b.SegmentsOut-a.SegmentsOut),
		Retransmitted: max(0, b.Retransmitted-a.Retransmitted),
		DelayedACKs:   max(0, b.DelayedACKs-a.DelayedACKs),
		LossProbes:    max(0, b.LossProbes-a.LossProbes),
	}
}
