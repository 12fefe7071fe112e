package swarm

import (
	"bytes"
	"encoding/binary"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volanogo/volanogo/internal/results"
	"github.com/volanogo/volanogo/internal/sysinfo"
	"github.com/volanogo/volanogo/pkg/protocol"
)

// partialPacket is the beginning, size bytes, of an Access confirm that
// lists room names of 60,000 bytes, one more than fit: a packet that never
// ends, whose count alone does not give it away.
func partialPacket(size int) []byte {
	name := bytes.Repeat([]byte{'x'}, 60000)
	b := protocol.AppendHeader(nil, protocol.IDAccess, protocol.Confirm)
	b = binary.BigEndian.AppendUint32(b, uint32(protocol.AccessOK))
	b = binary.BigEndian.AppendUint32(b, uint32(size/len(name)+1))
	for len(b) < size {
		b = binary.BigEndian.AppendUint16(b, uint16(len(name)))
		b = append(b, name...)
	}
	return b[:size]
}

// hostileRun runs rooms of 20 users against a server that sends each user
// a 4 MiB partial packet in the timed phase, with the given bound (0: the
// default). It returns the document and the bytes the run allocated.
func hostileRun(t *testing.T, rooms, bound int) (*results.Document, uint64) {
	t.Helper()
	s := newFakeServer(t, func() time.Duration { return 0 })
	s.partial = partialPacket(4 << 20)
	cfg := tcpConfig(s.addr())
	cfg.Rooms, cfg.Users, cfg.Count, cfg.MaxPacket = rooms, 20, 10, bound
	cfg.StallTimeout = 10 * time.Second
	cfg.StrictOrder = false
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	d := run(t, cfg)
	runtime.ReadMemStats(&after)
	return d, after.TotalAlloc - before.TotalAlloc
}

// TestHostileServer: a server that sends every user a packet that never
// ends (4 MiB of an endless room list) fails the run at once, naming the
// client's bound as the cause, and each user holds at most that bound: the
// run allocates a few hundred KB a user, where the 4 MiB bound before let
// it hold 6.4 MB a user until the stall timeout.
func TestHostileServer(t *testing.T) {
	checkGoroutines(t)
	start := time.Now()
	d, alloc := hostileRun(t, 5, 0)
	assert.Less(t, time.Since(start), 8*time.Second, "failed at the bound, not at the stall timeout")
	require.False(t, d.Passed)
	f := failure(d, results.FailProtocol)
	require.NotNil(t, f, "%+v", d.Failures)
	assert.Regexp(t, `^Mark\d+ in Room\d: read: a packet from the server passed the client's bound of 131072 bytes \(.*--max-packet raises it\): protocol: Access confirm: .*packet too large$`, f.Example)
	assert.Less(t, alloc, uint64(100*(1<<20)), "at most 1 MiB allocated a user (100 users)")
}

// TestHostileServerRSS measures the peak RSS of a run against that server
// with HOSTILE_USERS users (a multiple of 20), with the default bound and
// with the 4 MiB one it replaced: a measurement for the README, not run by
// default.
func TestHostileServerRSS(t *testing.T) {
	users, _ := strconv.Atoi(os.Getenv("HOSTILE_USERS"))
	if users < 20 {
		t.Skip("set HOSTILE_USERS (500: the issue's acceptance) to measure")
	}
	for _, bound := range []int{0, 4 << 20} {
		runtime.GC()
		// Reset the process's peak RSS (Linux 4.0).
		require.NoError(t, os.WriteFile("/proc/self/clear_refs", []byte("5"), 0))
		base := sysinfo.PeakRSS()
		d, alloc := hostileRun(t, users/20, bound)
		require.False(t, d.Passed)
		t.Logf("bound %d: %d users, peak RSS %.0f MiB (%.0f MiB before the run), %.0f MiB allocated; %s",
			bound, users, float64(sysinfo.PeakRSS())/(1<<20), float64(base)/(1<<20), float64(alloc)/(1<<20), d.Failures[0].Example)
	}
}
