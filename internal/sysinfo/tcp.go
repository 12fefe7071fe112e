package sysinfo

import (
	"errors"
	"fmt"
	"os"

	"github.com/prometheus/procfs"

	"github.com/volanogo/volanogo/internal/results"
)

// ReadTCPCounters reads the kernel's TCP counters now (Linux:
// /proc/self/net/snmp and /proc/self/net/netstat, the counters of this
// process's network namespace), or nil where there are none.
func ReadTCPCounters() *results.TCPCounters {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return nil
	}
	c, err := tcpCounters(fs, os.Getpid())
	if err != nil {
		return nil
	}
	return &c
}

// tcpCounters reads the counters of results.TCPCounters from the snmp and
// netstat files of process pid in fs. A counter the kernel does not have
// is 0; a group with none of them is an error.
func tcpCounters(fs procfs.FS, pid int) (results.TCPCounters, error) {
	p, err := fs.Proc(pid)
	if err != nil {
		return results.TCPCounters{}, err
	}
	snmp, err := p.Snmp()
	if err != nil {
		return results.TCPCounters{}, fmt.Errorf("net/snmp: %w", err)
	}
	netstat, err := p.Netstat()
	if err != nil {
		return results.TCPCounters{}, fmt.Errorf("net/netstat: %w", err)
	}
	if snmp.InSegs == nil && snmp.OutSegs == nil {
		return results.TCPCounters{}, errors.New("net/snmp: no Tcp counters")
	}
	if netstat.DelayedACKs == nil && netstat.TCPLossProbes == nil {
		return results.TCPCounters{}, errors.New("net/netstat: no TcpExt counters")
	}
	v := func(f *float64) int64 {
		if f == nil {
			return 0
		}
		return int64(*f)
	}
	return results.TCPCounters{
		SegmentsIn:    v(snmp.InSegs),
		SegmentsOut:   v(snmp.OutSegs),
		Retransmitted: v(snmp.RetransSegs),
		DelayedACKs:   v(netstat.DelayedACKs),
		LossProbes:    v(netstat.TCPLossProbes),
	}, nil
}

// TCPDelta is the counters' growth from a to b, nil unless both were read.
// A counter that went down (a namespace's counters do not) is 0.
func TCPDelta(a, b *results.TCPCounters) *results.TCPCounters {
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
