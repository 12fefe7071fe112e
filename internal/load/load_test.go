package load

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volanogo/volanogo/internal/results"
	"github.com/volanogo/volanogo/internal/server"
	"github.com/volanogo/volanogo/pkg/protocol"
)

func TestTurnTakingCounts(t *testing.T) {
	checkGoroutines(t)
	s := startServer(t, server.Config{MetricsListen: "127.0.0.1:0"})
	cfg := tcpConfig(t, s.Addr().String())
	cfg.Steps, cfg.Users, cfg.Count = []int{3}, 4, 5
	cfg.ServerMetrics = "http://" + s.MetricsAddr().String() + "/metrics"
	dir := t.TempDir()
	cfg.Output = dir + "/doc.json"
	cfg.File = dir + "/volano-mark.log"
	cfg.CommandLine = []string{"volanogo", "load", "-rooms", "3"}
	var out bytes.Buffer
	res, err := Run(context.Background(), cfg, &out)
	require.NoError(t, err, out.String())
	require.Len(t, res.Steps, 1)
	d := res.Steps[0].Docs[0]
	assert.True(t, d.Passed, "%+v", d.Failures)
	assert.Equal(t, results.Counts{Sent: 60, Received: 180, Total: 240, ExpectedSent: 60, ExpectedTotal: 240, Confirms: 60}, d.Counts)
	assert.Equal(t, results.Connections{Attempted: 12, Established: 12, Peak: 12}, d.Connections)
	assert.Equal(t, int64(180), d.Latency[results.LatencyDelivery].Count)
	assert.Equal(t, int64(57), d.Latency[results.LatencyTurn].Count)
	assert.Equal(t, int64(12), d.Latency[results.LatencyConnect].Count)
	require.NotNil(t, d.Server)
	assert.Equal(t, "metrics", d.Server.Source)
	assert.Equal(t, results.ScenarioTurns, d.Config.Scenario)
	assert.Equal(t, 3, d.Config.Rooms)
	assert.Equal(t, 3, d.Step)
	assert.Equal(t, 1, d.Run)
	assert.NotEmpty(t, d.RunID)
	assert.Equal(t, cfg.CommandLine, d.CommandLine)
	assert.NotEmpty(t, d.Environment.GoVersion)
	assert.NotNil(t, d.Timeline)
	var tlSent, tlRecv int64
	for i := range d.Timeline.Sent {
		tlSent += d.Timeline.Sent[i]
		tlRecv += d.Timeline.Received[i]
	}
	assert.Equal(t, int64(60), tlSent)
	assert.Equal(t, int64(180), tlRecv)
	assert.False(t, d.TimedStart.Before(d.Started))
	assert.False(t, d.TimedEnd.Before(d.TimedStart))

	// The document round-trips through its reader.
	rd, err := results.ReadFile(cfg.Output)
	require.NoError(t, err)
	assert.Equal(t, d.Counts, rd.Counts)
	assert.Equal(t, d.RunID, rd.RunID)
	assert.Equal(t, d.Latency[results.LatencyDelivery].P99, rd.Latency[results.LatencyDelivery].P99)

	// Mark's lines, the elapsed time normalised.
	lines := strings.Split(out.String(), "\n")
	require.GreaterOrEqual(t, len(lines), 6)
	head := strings.Join(lines[:5], "\n")
	head = regexp.MustCompile(`(?m)^Elapsed time .*$`).ReplaceAllString(head, "Elapsed time       <normalised>")
	assert.Equal(t, `VolanoMark version = 2.13.4
Messages sent      = 60
Messages received  = 180
Total messages     = 240
Elapsed time       <normalised>`, head)
	assert.Regexp(t, `(?m)^Delivery latency   = p50 .+, p90 .+, p99 .+, p99\.9 .+, max .+$`, out.String())
	assert.Regexp(t, `(?m)^Server CPU         = .* per message`, out.String())
	if runtime.GOOS == "linux" {
		// Loopback: at least the clients' 60 chats went out as segments
		// during the timed phase (other tests' segments count too).
		require.NotNil(t, d.TCP)
		assert.GreaterOrEqual(t, d.TCP.SegmentsOut, int64(60))
		assert.GreaterOrEqual(t, d.TCP.SegmentsIn, int64(60))
		assert.Regexp(t, `(?m)^TCP \(kernel\)       = \d+ segments out, \d+ retransmitted.*, \d+ delayed ACKs, \d+ loss probes`, out.String())
	}

	// The text log: the environment header, then the same lines.
	log, err := os.ReadFile(cfg.File)
	require.NoError(t, err)
	assert.Contains(t, string(log), "java.vendor = volanogo\n")
	if cc, err := os.ReadFile("/proc/sys/net/ipv4/tcp_congestion_control"); err == nil {
		assert.Contains(t, string(log), "tcp.congestion = "+strings.TrimSpace(string(cc))+"\n")
		assert.Equal(t, strings.TrimSpace(string(cc)), d.Environment.TCPCongestion)
	}
	assert.True(t, strings.HasSuffix(string(log), out.String()))
}

func TestMarkLinesGolden(t *testing.T) {
	for _, tc := range []struct {
		sent, received, ms int64
		want               string
	}{
		{100000, 1900000, 40115, `VolanoMark version = 2.13.4
Messages sent      = 100000
Messages received  = 1900000
Total messages     = 2000000
Elapsed time       = 40.115 seconds
Average throughput = 49857 messages per second
`},
		{30000, 570000, 1000, `VolanoMark version = 2.13.4
Messages sent      = 30000
Messages received  = 570000
Total messages     = 600000
Elapsed time       = 1.0 second
Average throughput = 600000 messages per second
`},
		{60, 180, 999, `VolanoMark version = 2.13.4
Messages sent      = 60
Messages received  = 180
Total messages     = 240
Elapsed time       < 1 second
`},
	} {
		var b bytes.Buffer
		WriteMarkLines(&b, tc.sent, tc.received, tc.ms)
		assert.Equal(t, tc.want, b.String())
	}
}

func TestWebSocket(t *testing.T) {
	checkGoroutines(t)
	s := startServer(t, server.Config{WSListen: "127.0.0.1:0"})
	cfg := Config{Transport: TransportWS, URL: "ws://" + s.WSAddr().String() + "/chat",
		Steps: []int{2}, Users: 3, Count: 4, StallTimeout: 5 * time.Second}
	var out bytes.Buffer
	res, err := Run(context.Background(), cfg, &out)
	require.NoError(t, err, out.String())
	d := res.Steps[0].Docs[0]
	assert.Equal(t, int64(24), d.Counts.Sent)
	assert.Equal(t, int64(48), d.Counts.Received)
	assert.Equal(t, "ws", d.Config.Transport)
	assert.Equal(t, cfg.URL, d.Config.URL)
}

func TestPaced(t *testing.T) {
	checkGoroutines(t)
	s := startServer(t, server.Config{})
	cfg := tcpConfig(t, s.Addr().String())
	cfg.Steps, cfg.Users, cfg.Count = []int{3}, 2, 0
	cfg.Pause, cfg.Duration = 100*time.Millisecond, 2*time.Second
	cfg.Output = t.TempDir() + "/paced.json"
	var out, progress bytes.Buffer
	cfg.Progress = &progress
	res, err := Run(context.Background(), cfg, &out)
	require.NoError(t, err, out.String())
	d := res.Steps[0].Docs[0]
	require.NotNil(t, d.Paced)
	assert.False(t, d.Paced.Broken, d.Paced.Reason)
	assert.Equal(t, int64(6), d.Paced.ConcurrentUsers)
	// 6 users, one message every 100 ms for 2 s: about 120 messages.
	assert.InDelta(t, 120, d.Counts.Sent, 15)
	assert.Equal(t, d.Counts.Sent, d.Counts.Received, "two users per room: each message reaches one other")
	assert.Equal(t, d.Counts.Sent, d.Counts.Confirms)
	assert.Equal(t, d.Counts.Received, d.Latency[results.LatencyDelivery].Count)
	assert.Equal(t, d.Counts.Received, d.Latency[results.LatencyDeliveryScheduled].Count)
	assert.Greater(t, d.Paced.InPerSecond, 0.0)
	assert.InDelta(t, 2*d.Paced.InPerSecond, d.Paced.OutPerSecond, 1e-9)
	assert.Equal(t, results.ScenarioPaced, d.Config.Scenario)
	assert.Zero(t, d.Score)
	assert.Contains(t, out.String(), "From schedule      = p50")
	assert.Contains(t, progress.String(), "running: ")
	_, err = results.ReadFile(cfg.Output)
	require.NoError(t, err)
}

func TestPacedCount(t *testing.T) {
	checkGoroutines(t)
	s := startServer(t, server.Config{})
	cfg := tcpConfig(t, s.Addr().String())
	cfg.Steps, cfg.Users, cfg.Count, cfg.Pause = []int{2}, 3, 4, 20*time.Millisecond
	res, err := Run(context.Background(), cfg, &bytes.Buffer{})
	require.NoError(t, err)
	d := res.Steps[0].Docs[0]
	assert.Equal(t, int64(24), d.Counts.Sent)
	assert.Equal(t, int64(48), d.Counts.Received)
	assert.False(t, d.Paced.Broken, d.Paced.Reason)
}

func TestBrokenReason(t *testing.T) {
	h := results.NewHistogram()
	for i := 0; i < 100; i++ {
		_ = h.RecordValue(int64(2 * time.Second))
	}
	enc, err := results.EncodeHistogram(h)
	require.NoError(t, err)
	d := &results.Document{Latency: map[string]*results.Histogram{results.LatencyDeliveryScheduled: enc}}
	broken, reason := brokenReason(d, 0, time.Second)
	assert.True(t, broken)
	assert.Contains(t, reason, "over the SLO of 1s")
	broken, _ = brokenReason(d, 0, 3*time.Second)
	assert.False(t, broken)

	d = &results.Document{Failures: []results.Failure{{Kind: results.FailRefused, Count: 3, Example: "Mark1 in Room9: connect: refused"}}}
	broken, reason = brokenReason(d, 0, time.Second)
	assert.True(t, broken)
	assert.Contains(t, reason, "connections refused")
	d = &results.Document{Failures: []results.Failure{{Kind: results.FailClosed, Count: 1}, {Kind: results.FailLost, Count: 7}}}
	broken, reason = brokenReason(d, 7, time.Second)
	assert.True(t, broken)
	assert.Contains(t, reason, "connections dropped")
	assert.Contains(t, reason, "7 messages lost")
	d = &results.Document{Failures: []results.Failure{{Kind: results.FailDuplicated, Count: 2, Example: "Mark2 in Room1: chat 3 of Mark1 arrived twice"}}}
	broken, reason = brokenReason(d, 0, time.Second)
	assert.True(t, broken)
	assert.Equal(t, "messages duplicated: Mark2 in Room1: chat 3 of Mark1 arrived twice", reason)
}

func TestDurationTurnTaking(t *testing.T) {
	checkGoroutines(t)
	s := startServer(t, server.Config{})
	cfg := tcpConfig(t, s.Addr().String())
	cfg.Steps, cfg.Users, cfg.Count, cfg.Duration = []int{2}, 3, 0, 300*time.Millisecond
	res, err := Run(context.Background(), cfg, &bytes.Buffer{})
	require.NoError(t, err)
	d := res.Steps[0].Docs[0]
	assert.True(t, d.Passed)
	assert.Greater(t, d.Counts.Sent, int64(6))
	assert.Zero(t, d.Counts.Sent%3, "each room ends at user 1's turn")
	assert.Equal(t, 2*d.Counts.Sent, d.Counts.Received)
}

func TestRefused(t *testing.T) {
	checkGoroutines(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	cfg := tcpConfig(t, addr)
	cfg.Steps, cfg.Users, cfg.Count = []int{2}, 3, 2
	d, out := runExpectFailure(t, cfg)
	f := failure(d, results.FailRefused)
	require.NotNil(t, f, "%v", failureKinds(d))
	assert.Contains(t, f.Example, "Mark1 in Room")
	assert.Zero(t, d.Connections.Established)
	assert.Positive(t, d.Connections.Attempted)
	assert.Contains(t, out, "Failure            = refused")
}

func TestServerClosesMidRun(t *testing.T) {
	checkGoroutines(t)
	s := startServer(t, server.Config{})
	var chats atomic.Int64
	var p *proxy
	p = newProxy(t, s.Addr().String(), func(conn int, f protocol.Frame) [][]byte {
		if isChatIndication(f) && chats.Add(1) == 10 {
			go p.closeAll()
			return nil
		}
		return [][]byte{copyRaw(f)}
	})
	cfg := tcpConfig(t, p.addr())
	cfg.Steps, cfg.Users, cfg.Count = []int{2}, 3, 20
	d, _ := runExpectFailure(t, cfg)
	kinds := failureKinds(d)
	require.NotEmpty(t, kinds)
	assert.Contains(t, []string{results.FailClosed, results.FailReset}, kinds[0], "%+v", d.Failures)
	assert.Regexp(t, "disconnected from server|connection reset by peer", d.Failures[0].Example)
	assert.Less(t, d.Counts.Sent, int64(120))
}

func TestStall(t *testing.T) {
	checkGoroutines(t)
	s := startServer(t, server.Config{})
	var chats atomic.Int64
	p := newProxy(t, s.Addr().String(), func(conn int, f protocol.Frame) [][]byte {
		if isChatIndication(f) && chats.Add(1) > 5 {
			return nil // the server stops answering
		}
		return [][]byte{copyRaw(f)}
	})
	cfg := tcpConfig(t, p.addr())
	cfg.Steps, cfg.Users, cfg.Count = []int{1}, 3, 10
	cfg.StallTimeout = 300 * time.Millisecond
	start := time.Now()
	d, _ := runExpectFailure(t, cfg)
	assert.Less(t, time.Since(start), 10*time.Second)
	f := failure(d, results.FailStall)
	require.NotNil(t, f, "%+v", d.Failures)
	assert.Regexp(t, `^Room1 made no progress for .*: waiting for Mark\d, whose last packet was (Chat|EnterRoom) (indication|confirm)$`, f.Example)
}

func TestSetupTimeout(t *testing.T) {
	checkGoroutines(t)
	// A server that accepts and never answers: the set-up must not hang.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		for _, c := range conns {
			c.Close()
		}
	})
	cfg := tcpConfig(t, ln.Addr().String())
	cfg.Steps, cfg.Users, cfg.Count = []int{1}, 2, 1
	cfg.StallTimeout = 200 * time.Millisecond
	d, _ := runExpectFailure(t, cfg)
	f := failure(d, results.FailTimeout)
	require.NotNil(t, f, "%+v", d.Failures)
	assert.Contains(t, f.Example, "Mark1 in Room1: waiting for Access confirm")
}

func TestIntegrityDrop(t *testing.T) {
	checkGoroutines(t)
	s := startServer(t, server.Config{})
	var dropped atomic.Bool
	// Connection 2 is Mark3 of Room1: it loses chat 1 (from Mark1). Its
	// count stops short of its turn, as Mark's would: the room stalls,
	// and the ledger names the lost chat.
	p := newProxy(t, s.Addr().String(), func(conn int, f protocol.Frame) [][]byte {
		if conn == 2 && isChatIndication(f) && dropped.CompareAndSwap(false, true) {
			return nil
		}
		return [][]byte{copyRaw(f)}
	})
	cfg := tcpConfig(t, p.addr())
	cfg.Steps, cfg.Users, cfg.Count = []int{1}, 4, 3
	cfg.StallTimeout = 300 * time.Millisecond
	d, out := runExpectFailure(t, cfg)
	assert.Equal(t, []string{results.FailStall, results.FailLost}, failureKinds(d), "%+v", d.Failures)
	assert.Contains(t, failure(d, results.FailStall).Example, "Room1 made no progress for ")
	assert.Contains(t, failure(d, results.FailStall).Example, "waiting for Mark3")
	f := failure(d, results.FailLost)
	require.NotNil(t, f)
	assert.Equal(t, "1 chats lost: Mark3 in Room1 never received chat 1 of Mark1 (chat 1 of the room)", f.Example)
	assert.Equal(t, int64(1), f.Count)
	require.NotNil(t, d.Integrity)
	assert.Equal(t, results.Integrity{Lost: 1, Receivers: 4, StrictOrder: true}, *d.Integrity)
	assert.Contains(t, out, "Integrity          = 1 lost, 0 duplicated, 0 corrupted")
}

func TestIntegrityDuplicate(t *testing.T) {
	checkGoroutines(t)
	s := startServer(t, server.Config{})
	var duplicated atomic.Bool
	p := newProxy(t, s.Addr().String(), func(conn int, f protocol.Frame) [][]byte {
		if conn == 2 && isChatIndication(f) && duplicated.CompareAndSwap(false, true) {
			return [][]byte{copyRaw(f), copyRaw(f)}
		}
		return [][]byte{copyRaw(f)}
	})
	cfg := tcpConfig(t, p.addr())
	cfg.Steps, cfg.Users, cfg.Count = []int{1}, 4, 3
	d, _ := runExpectFailure(t, cfg)
	assert.Equal(t, []string{results.FailDuplicated}, failureKinds(d), "%+v", d.Failures)
	f := failure(d, results.FailDuplicated)
	require.NotNil(t, f)
	assert.Equal(t, "Mark3 in Room1: chat 1 of Mark1 arrived twice", f.Example)
	assert.Equal(t, int64(12*3+1), d.Counts.Received)
	require.NotNil(t, d.Integrity)
	assert.Equal(t, results.Integrity{Duplicated: 1, Receivers: 4, StrictOrder: true}, *d.Integrity)
}

func TestIntegrityCorrupt(t *testing.T) {
	checkGoroutines(t)
	s := startServer(t, server.Config{})
	var corrupted atomic.Int32
	// The proxy changes one character of a chat's text for Mark3 (the
	// room still goes on: the chat is identified by its number), and then
	// garbles the number of another, which cannot then be identified.
	p := newProxy(t, s.Addr().String(), func(conn int, f protocol.Frame) [][]byte {
		if conn != 2 || !isChatIndication(f) {
			return [][]byte{copyRaw(f)}
		}
		b := copyRaw(f)
		switch corrupted.Add(1) {
		case 1:
			b[len(b)-1] = 'X' // the tail
		case 4:
			b[len(b)-59] = 'X' // the sender's number
		}
		return [][]byte{b}
	})
	cfg := tcpConfig(t, p.addr())
	cfg.Steps, cfg.Users, cfg.Count = []int{1}, 4, 3
	d, _ := runExpectFailure(t, cfg)
	assert.Equal(t, []string{results.FailCorrupted}, failureKinds(d), "%+v", d.Failures)
	f := failure(d, results.FailCorrupted)
	require.NotNil(t, f)
	assert.Equal(t, int64(2), f.Count)
	assert.Contains(t, f.Example, "Mark3 in Room1: chat 1 of Mark1: its text is not what was sent")
	require.NotNil(t, d.Integrity)
	// The unreadable one is not also counted lost.
	assert.Equal(t, results.Integrity{Corrupted: 2, Receivers: 4, StrictOrder: true}, *d.Integrity)
	assert.Equal(t, int64(36), d.Counts.Received)
}

// reorderProxy holds one chat indication for connection conn (user Mark3
// of Room1) until the next one has gone through: the receiver sees chat
// k+1 before chat k, as with a server that relays a room's chats from
// several threads.
func reorderProxy(t *testing.T, target string, conn int) *proxy {
	var held []byte
	var done atomic.Bool
	return newProxy(t, target, func(c int, f protocol.Frame) [][]byte {
		if c != conn || !isChatIndication(f) || done.Load() {
			return [][]byte{copyRaw(f)}
		}
		if held == nil {
			held = copyRaw(f)
			return nil
		}
		done.Store(true)
		return [][]byte{copyRaw(f), held}
	})
}

func TestReorderedPasses(t *testing.T) {
	checkGoroutines(t)
	s := startServer(t, server.Config{})
	// Mark4 (connection 3) gets chat 2 (Mark2's) before chat 1 (Mark1's).
	p := reorderProxy(t, s.Addr().String(), 3)
	cfg := tcpConfig(t, p.addr())
	cfg.Steps, cfg.Users, cfg.Count = []int{1}, 4, 3
	cfg.StrictOrder = false
	var out bytes.Buffer
	res, err := Run(context.Background(), cfg, &out)
	require.NoError(t, err, out.String())
	d := res.Steps[0].Docs[0]
	assert.True(t, d.Passed, "%+v", d.Failures)
	assert.Equal(t, int64(36), d.Counts.Received)
	require.NotNil(t, d.Integrity)
	assert.Equal(t, results.Integrity{Reordered: 1, MaxDisplacement: 1, ReceiversReordered: 1, Receivers: 4,
		FirstReordered: "Mark4 in Room1: chat 1 of the room (Mark1's) arrived after chat 2 (1 later)"}, *d.Integrity)
	assert.Contains(t, out.String(), "Integrity          = 0 lost, 0 duplicated, 0 corrupted; 1 reordered (1 of 4 receivers, 25%; at most 1 chat late), 0 out of sender order\n")
	assert.Contains(t, out.String(), "First reordered    = Mark4 in Room1: chat 1 of the room (Mark1's) arrived after chat 2 (1 later)\n")
}

func TestReorderedStrictFails(t *testing.T) {
	checkGoroutines(t)
	s := startServer(t, server.Config{})
	p := reorderProxy(t, s.Addr().String(), 3)
	cfg := tcpConfig(t, p.addr())
	cfg.Steps, cfg.Users, cfg.Count = []int{1}, 4, 3
	d, _ := runExpectFailure(t, cfg)
	assert.Equal(t, []string{results.FailReordered}, failureKinds(d), "%+v", d.Failures)
	assert.Equal(t, "Mark4 in Room1: chat 1 of the room (Mark1's) arrived after chat 2 (1 later)", failure(d, results.FailReordered).Example)
	assert.True(t, d.Integrity.StrictOrder)
}

func TestDenied(t *testing.T) {
	checkGoroutines(t)
	s := startServer(t, server.Config{AcceptVersions: []string{"9.9"}})
	cfg := tcpConfig(t, s.Addr().String())
	cfg.Steps, cfg.Users, cfg.Count = []int{1}, 2, 1
	d, _ := runExpectFailure(t, cfg)
	f := failure(d, results.FailDenied)
	require.NotNil(t, f, "%+v", d.Failures)
	assert.Contains(t, f.Example, "Mark1 in Room1: Access denied (result 4)")
}

func TestInterrupted(t *testing.T) {
	checkGoroutines(t)
	s := startServer(t, server.Config{})
	cfg := tcpConfig(t, s.Addr().String())
	cfg.Steps, cfg.Users, cfg.Count, cfg.Duration = []int{2}, 3, 0, time.Hour
	cfg.Output = t.TempDir() + "/run.json"
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(300 * time.Millisecond); cancel() }()
	var out bytes.Buffer
	_, err := Run(ctx, cfg, &out)
	require.ErrorIs(t, err, ErrInterrupted)
	d, err := results.ReadFile(cfg.Output)
	require.NoError(t, err)
	assert.True(t, d.Interrupted)
	assert.False(t, d.Passed)
	assert.Positive(t, d.Counts.Sent)
	assert.Contains(t, out.String(), "Test interrupted.")
}

func TestServeRunRules(t *testing.T) {
	checkGoroutines(t)
	cfg := Config{Serve: true, ServeCommand: helperServeArgv(t), Steps: []int{1, 2}, Users: 3, Count: 20,
		StallTimeout: 5 * time.Second, Runs: 3, Discard: 1}
	dir := t.TempDir()
	cfg.Output = filepath.Join(dir, "out")
	var out bytes.Buffer
	res, err := Run(context.Background(), cfg, &out)
	require.NoError(t, err, out.String())
	require.Len(t, res.Steps, 2)
	require.Len(t, res.Files, 6)
	for i, st := range res.Steps {
		require.Len(t, st.Docs, 3)
		assert.Equal(t, []int{1, 2}[i], st.Rooms)
		for j, d := range st.Docs {
			assert.Equal(t, j == 0, d.Discarded)
			assert.Equal(t, j+1, d.Run)
			assert.True(t, d.Passed, "%+v", d.Failures)
			require.NotNil(t, d.Server, "server usage from its metrics")
			assert.Equal(t, "metrics", d.Server.Source)
			assert.Positive(t, d.Server.GOMAXPROCS)
			if runtime.GOOS == "linux" {
				assert.Positive(t, d.Server.CPUs)
			}
			assert.NotEmpty(t, d.Config.ServerCommand)
			assert.NotEqual(t, 8000, d.Config.Port)
		}
	}
	docs, errs := results.ReadPaths([]string{filepath.Join(dir, "out")}, nil)
	require.Empty(t, errs)
	assert.Len(t, docs, 6)
	assert.Contains(t, out.String(), "Rooms 1, run 1 of 3 (discarded)\nVolanoMark version = 2.13.4\n")
	assert.Contains(t, out.String(), "\nSummary\n")
}

func TestServerCmd(t *testing.T) {
	checkGoroutines(t)
	t.Setenv("VOLANOGO_TEST_SERVE", "1")
	cfg := Config{ServerCmd: os.Args[0] + " --listen 127.0.0.1:{port}", Steps: []int{1}, Users: 2, Count: 3,
		StallTimeout: 5 * time.Second, Runs: 1}
	res, err := Run(context.Background(), cfg, &bytes.Buffer{})
	require.NoError(t, err)
	d := res.Steps[0].Docs[0]
	assert.Equal(t, int64(6), d.Counts.Sent)
	require.NotNil(t, d.Server)
	assert.Equal(t, "proc", d.Server.Source)
}

func TestServeFailsToStart(t *testing.T) {
	cfg := Config{Serve: true, ServeCommand: []string{"/nonexistent/volanogo", "serve"}, Steps: []int{1}, Users: 2, Count: 1, Runs: 2}
	cfg.Output = t.TempDir() + "/"
	_, err := Run(context.Background(), cfg, &bytes.Buffer{})
	require.True(t, errors.Is(err, ErrFailed), "%v", err)
}

func TestSummarize(t *testing.T) {
	mk := func(run int, score int64, passed bool) *results.Document {
		return &results.Document{Run: run, Score: score, Passed: passed, Discarded: run == 1}
	}
	s := summarize(15, []*results.Document{mk(1, 999, true), mk(2, 100, true), mk(3, 300, true), mk(4, 200, true)})
	assert.Equal(t, int64(250), s.Tally.Score)
	assert.Equal(t, 200.0, s.Tally.Median)
	assert.True(t, s.Passed)
	s = summarize(15, []*results.Document{mk(1, 999, true), mk(2, 100, true), mk(3, 0, false), mk(4, 201, true)})
	assert.Equal(t, int64(151), s.Tally.Score)
	assert.Equal(t, 150.5, s.Tally.Median)
	assert.False(t, s.Passed)
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Users: 1}, "-users: value must be at least 2 (1)"},
		{Config{Count: 0, Steps: []int{1}, Users: 2}, "-count 0 runs forever: give --duration"},
		{Config{Transport: "udp", Count: 1}, `--transport: "udp" is not tcp or ws`},
		{Config{Transport: "ws", Count: 1}, "--transport ws needs --url"},
		{Config{ServerCmd: "java Main", Count: 1}, "{port}"},
		{Config{Bind: []string{"nope"}, Count: 1}, `--bind: "nope" is not an address`},
		{Config{Steps: []int{0}, Count: 1}, "-rooms: value must be at least 1 (0)"},
	} {
		_, err := Run(context.Background(), tc.cfg, &bytes.Buffer{})
		require.Error(t, err)
		assert.True(t, IsUsage(err), "%v", err)
		assert.Contains(t, err.Error(), tc.want)
	}
}

func TestParseBind(t *testing.T) {
	a, err := ParseBind([]string{"127.0.0.1,127.0.0.5-127.0.0.7", "127.0.1.0/30", "::1"})
	require.NoError(t, err)
	var got []string
	for _, x := range a {
		got = append(got, x.String())
	}
	assert.Equal(t, []string{"127.0.0.1", "127.0.0.5", "127.0.0.6", "127.0.0.7", "127.0.1.1", "127.0.1.2", "::1"}, got)
	_, err = ParseBind([]string{"127.0.0.9-127.0.0.1"})
	assert.Error(t, err)
	_, err = ParseBind([]string{"10.0.0.0/8"})
	assert.Error(t, err, "too many addresses")
}

func TestBindRun(t *testing.T) {
	checkGoroutines(t)
	s := startServer(t, server.Config{})
	cfg := tcpConfig(t, s.Addr().String())
	cfg.Steps, cfg.Users, cfg.Count = []int{2}, 2, 2
	cfg.Bind = []string{"127.0.0.2-127.0.0.3"}
	cfg.ConnectRate = 1000
	res, err := Run(context.Background(), cfg, &bytes.Buffer{})
	require.NoError(t, err)
	assert.True(t, res.Steps[0].Docs[0].Passed)
}

func TestMarkNumber(t *testing.T) {
	assert.Equal(t, int64(1), markNumber([]byte("Mark1")))
	assert.Equal(t, int64(20), markNumber([]byte("Mark20")))
	assert.Zero(t, markNumber([]byte("Mark")))
	assert.Zero(t, markNumber([]byte("mark1")))
	assert.Zero(t, markNumber([]byte("Mark1x")))
}

func TestHotPathAllocs(t *testing.T) {
	// A user receiving indications in turn allocates nothing.
	rs := &runState{cfg: &Config{Count: 100000}, shards: []*histShard{{}}}
	rs.timeline = results.NewTimelineRecorder(time.Now())
	r, err := newRoom(rs, 0, 1, 20)
	require.NoError(t, err)
	u := r.users[2]
	names := make([][]byte, 20)
	texts := make([][]byte, 20)
	for i := range names {
		names[i] = []byte(r.users[i].name)
		texts[i] = []byte(numberedText(i+1, 0)[:59])
	}
	var k int64
	next := func() {
		k++
		s := (k-1)%20 + 1
		if s == 3 {
			u.sent++
			return
		}
		putNumber(texts[s-1][numberDigits+1:], (k-1)/20+1)
		require.True(t, u.acceptTurn(names[s-1], texts[s-1], s, 20))
	}
	next() // warm up: the shard's histogram
	allocs := testing.AllocsPerRun(1000, next)
	assert.Zero(t, allocs)
	assert.Nil(t, rs.failures.List())
	assert.Zero(t, u.ledger.reordered)
}

func TestServeWebSocket(t *testing.T) {
	checkGoroutines(t)
	cfg := Config{Serve: true, ServeCommand: helperServeArgv(t), Transport: TransportWS, Steps: []int{1}, Users: 3, Count: 3,
		StallTimeout: 5 * time.Second, Runs: 1}
	res, err := Run(context.Background(), cfg, &bytes.Buffer{})
	require.NoError(t, err)
	d := res.Steps[0].Docs[0]
	assert.Equal(t, int64(9), d.Counts.Sent)
	assert.Regexp(t, `^ws://127\.0\.0\.1:\d+/chat$`, d.Config.URL)
	assert.Contains(t, d.Config.ServerCommand, "--ws-listen")
}

func TestPacedSweepStopsWhenBroken(t *testing.T) {
	checkGoroutines(t)
	s := startServer(t, server.Config{})
	cfg := tcpConfig(t, s.Addr().String())
	cfg.Steps, cfg.Users, cfg.Count, cfg.Pause = []int{1, 2}, 2, 3, 10*time.Millisecond
	cfg.SLO = time.Nanosecond
	var out bytes.Buffer
	res, err := Run(context.Background(), cfg, &out)
	require.ErrorIs(t, err, ErrFailed)
	require.Len(t, res.Steps, 1, "the sweep stops at the broken step")
	d := res.Steps[0].Docs[0]
	assert.True(t, d.Passed, "an SLO break is not a failure")
	assert.True(t, d.Paced.Broken)
	assert.Contains(t, d.Paced.Reason, "over the SLO of 1ns")
	assert.Contains(t, out.String(), "The sweep stops at 1 rooms")

	cfg.KeepGoing = true
	res, err = Run(context.Background(), cfg, &bytes.Buffer{})
	require.ErrorIs(t, err, ErrFailed)
	assert.Len(t, res.Steps, 2)
}

func TestBatchReads(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("SO_RCVLOWAT batching is Linux only")
	}
	checkGoroutines(t)
	s := startServer(t, server.Config{})
	cfg := tcpConfig(t, s.Addr().String())
	cfg.Steps, cfg.Users, cfg.Count, cfg.BatchReads = []int{3}, 12, 20, true
	var out bytes.Buffer
	res, err := Run(context.Background(), cfg, &out)
	require.NoError(t, err, out.String())
	d := res.Steps[0].Docs[0]
	assert.Equal(t, int64(720), d.Counts.Sent)
	assert.Equal(t, int64(720*11), d.Counts.Received)
	assert.Equal(t, int64(720), d.Latency[results.LatencyDelivery].Count, "one turn-giving delivery per message")
}

func TestBatchReadsIntegrityDrop(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("SO_RCVLOWAT batching is Linux only")
	}
	checkGoroutines(t)
	s := startServer(t, server.Config{})
	var dropped atomic.Bool
	p := newProxy(t, s.Addr().String(), func(conn int, f protocol.Frame) [][]byte {
		if conn == 2 && isChatIndication(f) && dropped.CompareAndSwap(false, true) {
			return nil
		}
		return [][]byte{copyRaw(f)}
	})
	cfg := tcpConfig(t, p.addr())
	cfg.Steps, cfg.Users, cfg.Count, cfg.BatchReads = []int{1}, 4, 3, true
	cfg.StallTimeout = 800 * time.Millisecond
	d, _ := runExpectFailure(t, cfg)
	// The watchdog turns batching off first (a waiting reader then reads
	// what it has); the loss still stalls the room, and is named.
	f := failure(d, results.FailLost)
	require.NotNil(t, f, "%+v", d.Failures)
	assert.Equal(t, int64(1), f.Count)
	assert.Equal(t, "1 chats lost: Mark3 in Room1 never received chat 1 of Mark1 (chat 1 of the room)", f.Example)
}

func TestPacedLoss(t *testing.T) {
	checkGoroutines(t)
	s := startServer(t, server.Config{})
	var dropped atomic.Bool
	p := newProxy(t, s.Addr().String(), func(conn int, f protocol.Frame) [][]byte {
		if conn == 1 && isChatIndication(f) && dropped.CompareAndSwap(false, true) {
			return nil
		}
		return [][]byte{copyRaw(f)}
	})
	cfg := tcpConfig(t, p.addr())
	cfg.Steps, cfg.Users, cfg.Count, cfg.Pause = []int{1}, 3, 5, 10*time.Millisecond
	cfg.StallTimeout = 400 * time.Millisecond
	d, out := runExpectFailure(t, cfg)
	require.NotNil(t, d.Paced)
	assert.True(t, d.Paced.Broken)
	assert.Contains(t, d.Paced.Reason, "1 messages lost")
	f := failure(d, results.FailLost)
	require.NotNil(t, f, "%+v", d.Failures)
	assert.Regexp(t, `^1 chats lost: Mark2 in Room1 never received chat 1 of Mark[13]$`, f.Example)
	assert.Equal(t, int64(15), d.Counts.Sent)
	assert.Equal(t, int64(29), d.Counts.Received)
	assert.Contains(t, out, "Step broken        = ")
}
