package sysinfo

import (
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/prometheus/procfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volanogo/volanogo/internal/results"
)

// The counters' lines as Linux 6.18 prints them (trimmed to a few names,
// in the kernel's order).
const (
	snmpSample = `Ip: Forwarding DefaultTTL InReceives
Ip: 1 64 1234
Tcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens PassiveOpens AttemptFails EstabResets CurrEstab InSegs OutSegs RetransSegs InErrs OutRsts InCsumErrors
Tcp: 1 200 120000 -1 52 26 0 1 3 8786839 8838336 22063 0 40 0
Udp: InDatagrams NoPorts
Udp: 7 0
`
	netstatSample = `TcpExt: SyncookiesSent SyncookiesRecv DelayedACKs DelayedACKLocked TCPLossProbes
TcpExt: 0 0 2965978 97 23426
IpExt: InNoRoutes InTruncatedPkts
IpExt: 0 0
`
)

// fakeProc is a /proc with the net/snmp and net/netstat of process 1.
func fakeProc(t *testing.T, snmp, netstat string) procfs.FS {
	t.Helper()
	dir := t.TempDir()
	net := filepath.Join(dir, "1", "net")
	require.NoError(t, os.MkdirAll(net, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(net, "snmp"), []byte(snmp), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(net, "netstat"), []byte(netstat), 0o644))
	fs, err := procfs.NewFS(dir)
	require.NoError(t, err)
	return fs
}

func TestTCPCounters(t *testing.T) {
	c, err := tcpCounters(fakeProc(t, snmpSample, netstatSample), 1)
	require.NoError(t, err)
	assert.Equal(t, results.TCPCounters{SegmentsIn: 8786839, SegmentsOut: 8838336, Retransmitted: 22063,
		DelayedACKs: 2965978, LossProbes: 23426}, c)

	// A counter this kernel lacks is 0.
	c, err = tcpCounters(fakeProc(t, snmpSample, "TcpExt: DelayedACKs\nTcpExt: 5\n"), 1)
	require.NoError(t, err)
	assert.Equal(t, int64(5), c.DelayedACKs)
	assert.Zero(t, c.LossProbes)
}

func TestTCPCountersErrors(t *testing.T) {
	for _, tc := range []struct{ name, snmp, netstat, want string }{
		{"no Tcp group", "Ip: Forwarding\nIp: 1\n", netstatSample, "net/snmp: no Tcp counters"},
		{"no TcpExt group", snmpSample, "IpExt: InNoRoutes\nIpExt: 0\n", "net/netstat: no TcpExt counters"},
		{"short values", "Tcp: InSegs OutSegs\nTcp: 1\n", netstatSample, "net/snmp"},
		{"not a number", "Tcp: InSegs OutSegs\nTcp: 1 x\n", netstatSample, "net/snmp"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tcpCounters(fakeProc(t, tc.snmp, tc.netstat), 1)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	_, err := tcpCounters(fakeProc(t, snmpSample, netstatSample), 2)
	require.Error(t, err, "no such process")
}

func TestTCPDelta(t *testing.T) {
	a := &results.TCPCounters{SegmentsIn: 10, SegmentsOut: 20, Retransmitted: 1, DelayedACKs: 5, LossProbes: 2}
	b := &results.TCPCounters{SegmentsIn: 15, SegmentsOut: 40, Retransmitted: 1, DelayedACKs: 4, LossProbes: 3}
	assert.Equal(t, &results.TCPCounters{SegmentsIn: 5, SegmentsOut: 20, DelayedACKs: 0, LossProbes: 1}, TCPDelta(a, b))
	assert.Nil(t, TCPDelta(nil, b))
	assert.Nil(t, TCPDelta(a, nil))
}

// The machine's own counters parse and count a loopback connection's
// segments (Linux).
func TestReadTCPCounters(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the kernel's TCP counters are read on Linux")
	}
	if _, err := os.Stat("/proc/self/net/snmp"); err != nil {
		t.Skip("no /proc/self/net/snmp")
	}
	c0 := ReadTCPCounters()
	require.NotNil(t, c0)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	c, err := net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
	require.NoError(t, err)
	defer c.Close()
	sc, ok := <-accepted
	require.True(t, ok, "accept failed")
	defer sc.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(5*time.Second)))
	_, err = c.Write([]byte("x"))
	require.NoError(t, err)
	buf := make([]byte, 1)
	require.NoError(t, sc.SetDeadline(time.Now().Add(5*time.Second)))
	_, err = io.ReadFull(sc, buf)
	require.NoError(t, err)

	d := TCPDelta(c0, ReadTCPCounters())
	require.NotNil(t, d)
	// SYN, SYN-ACK, ACK and the byte: four segments out and in at least.
	assert.GreaterOrEqual(t, d.SegmentsOut, int64(4))
	assert.GreaterOrEqual(t, d.SegmentsIn, int64(4))
}
