package campaign

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volanogo/volanogo/internal/handshake"
	"github.com/volanogo/volanogo/internal/results"
	"github.com/volanogo/volanogo/internal/server"
	"github.com/volanogo/volanogo/internal/swarm"
	"github.com/volanogo/volanogo/internal/testutil"
)

func TestRunOne(t *testing.T) {
	checkGoroutines(t)
	s := startServer(t, server.Config{MetricsListen: "127.0.0.1:0"})
	cfg := tcpConfig(t, s.Addr().String())
	cfg.Steps, cfg.Spec.Users, cfg.Spec.Count = []int{3}, 4, 5
	cfg.ServerMetrics = "http://" + s.MetricsAddr().String() + "/metrics"
	cfg.CommandLine = []string{"volanogo", "load", "-rooms", "3"}
	rec := &recorder{}
	res, err := Run(context.Background(), cfg, rec)
	require.NoError(t, err, rec.out())
	require.Len(t, res.Steps, 1)
	require.Len(t, rec.docs, 1)
	d := rec.docs[0]
	assert.Same(t, d, res.Steps[0].Docs[0])
	assert.Equal(t, []RunInfo{{Rooms: 3, Run: 1, Runs: 1}}, rec.runs)
	assert.Positive(t, rec.progress)
	assert.True(t, d.Passed, "%+v", d.Failures)
	assert.Equal(t, results.Counts{Sent: 60, Received: 180, Total: 240, ExpectedSent: 60, ExpectedTotal: 240, Confirms: 60}, d.Counts)
	// What the run was.
	assert.Equal(t, results.SchemaVersion, d.Schema)
	assert.NotEmpty(t, d.RunID)
	assert.Equal(t, s.Addr().String()+" (serve goroutine / load goroutine)", d.Label, "the server and the engines")
	assert.Equal(t, "volanogo", d.Tool.Name)
	assert.Equal(t, cfg.CommandLine, d.CommandLine)
	assert.NotEmpty(t, d.Environment.GoVersion)
	assert.Equal(t, results.Config{Scenario: results.ScenarioTurns, Transport: "tcp", Host: "127.0.0.1", Port: cfg.Port,
		StartRoom: 1, Rooms: 3, Users: 4, Count: 5, ConnectConcurrency: 16, StallTimeoutSeconds: 5, SLOSeconds: 1, ClientEngine: "goroutine"}, d.Config)
	assert.Equal(t, 3, d.Step)
	assert.Equal(t, 1, d.Run)
	// What the campaign read of the server.
	require.NotNil(t, d.Server)
	assert.Equal(t, "metrics", d.Server.Source)
	assert.Equal(t, server.EngineGoroutine, d.Server.Engine, "volanogo_server_info")
	assert.Positive(t, d.Server.RSSBeforeBytes)
	// process_cpu_seconds_total counts in clock ticks (10 ms): a short run
	// may read 0.
	assert.GreaterOrEqual(t, d.Server.CPUSeconds, 0.0)
	assert.InDelta(t, d.Server.CPUSeconds/240*1e6, d.Server.CPUPerMessageMicros, 1e-9)
	assert.Positive(t, d.Server.RSSEndBytes)
	assert.Empty(t, d.Warnings)
	require.NoError(t, d.Validate())
}

// TestServerMetricsUnreadable: a wrong --server-metrics URL is a warning
// in the document and the summary, not silence.
func TestServerMetricsUnreadable(t *testing.T) {
	checkGoroutines(t)
	s := startServer(t, server.Config{})
	cfg := tcpConfig(t, s.Addr().String())
	cfg.Steps, cfg.Spec.Users, cfg.Spec.Count = []int{1}, 2, 2
	cfg.ServerMetrics = "http://" + s.Addr().String() + "/nothing-here"
	rec := &recorder{}
	_, err := Run(context.Background(), cfg, rec)
	require.NoError(t, err, rec.out())
	d := rec.docs[0]
	assert.True(t, d.Passed, "a warning does not fail the run")
	assert.Nil(t, d.Server)
	require.Len(t, d.Warnings, 1)
	assert.Contains(t, d.Warnings[0], "the server's usage is unknown: ")
}

func TestServeRunRules(t *testing.T) {
	checkGoroutines(t)
	cfg := Config{Serve: true, ServeCommand: serveArgv(t, false), Steps: []int{1, 2}, Runs: 3, Discard: 1,
		Spec: swarm.Spec{Users: 3, Count: 20, StallTimeout: 5 * time.Second, StrictOrder: true}}
	rec := &recorder{}
	res, err := Run(context.Background(), cfg, rec)
	require.NoError(t, err, rec.out())
	require.Len(t, res.Steps, 2)
	require.Len(t, rec.docs, 6)
	for i, st := range res.Steps {
		require.Len(t, st.Docs, 3)
		assert.Equal(t, []int{1, 2}[i], st.Rooms)
		assert.True(t, st.Passed)
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
			assert.Equal(t, cfg.ServeCommand, d.Config.ServerCommand)
			assert.NotEqual(t, 8000, d.Config.Port)
			assert.Equal(t, "goroutine", d.Server.Engine)
			assert.True(t, strings.HasPrefix(d.Label, "volanogo serve goroutine / load goroutine, "), d.Label)
		}
	}
	assert.Equal(t, RunInfo{Rooms: 1, Run: 1, Runs: 3, Discarded: true, Many: true}, rec.runs[0])
}

func TestServerCmd(t *testing.T) {
	checkGoroutines(t)
	t.Setenv("VOLANOGO_TEST_SERVE", "1")
	cfg := Config{ServerCmd: os.Args[0] + " --listen 127.0.0.1:{port}", Steps: []int{1}, Runs: 1,
		Spec: swarm.Spec{Users: 2, Count: 3, StallTimeout: 5 * time.Second}}
	rec := &recorder{}
	_, err := Run(context.Background(), cfg, rec)
	require.NoError(t, err, rec.out())
	d := rec.docs[0]
	assert.Equal(t, int64(6), d.Counts.Sent)
	require.NotNil(t, d.Server)
	assert.Equal(t, "proc", d.Server.Source)
	assert.Empty(t, d.Server.Engine, "/proc does not say")
	assert.Equal(t, filepath.Base(os.Args[0])+" (load goroutine)", filepath.Base(d.Label))
}

// TestServerCmdMetrics: a server command that prints the ready line of a
// `volanogo serve` with a metrics address is read through its metrics,
// which say its engine.
func TestServerCmdMetrics(t *testing.T) {
	checkGoroutines(t)
	t.Setenv("VOLANOGO_TEST_SERVE", "1")
	cfg := Config{ServerCmd: os.Args[0] + " --listen 127.0.0.1:{port} --metrics-listen 127.0.0.1:0", Steps: []int{1}, Runs: 1,
		Spec: swarm.Spec{Users: 2, Count: 3, StallTimeout: 5 * time.Second}}
	rec := &recorder{}
	_, err := Run(context.Background(), cfg, rec)
	require.NoError(t, err, rec.out())
	d := rec.docs[0]
	require.NotNil(t, d.Server)
	assert.Equal(t, "metrics", d.Server.Source)
	assert.Equal(t, server.EngineGoroutine, d.Server.Engine)
	assert.Positive(t, d.Server.RSSBeforeBytes)
	assert.Equal(t, os.Args[0]+" (serve goroutine / load goroutine)", d.Label)
	assert.Equal(t, []string{"/bin/sh", "-c", "exec " + cfg.ServerCmd}, d.Config.ServerCommand, "{port} as given: one server whatever its port")
	assert.Positive(t, d.Config.Port)
}

// TestReadyWatch: the ready line is found whatever the writes' pieces,
// and everything reaches the tail.
func TestReadyWatch(t *testing.T) {
	line := handshake.Serve{Chat: "127.0.0.1:1", Metrics: "127.0.0.1:2"}.Line()
	out := "starting\n" + line + "\nmore\n"
	for _, n := range []int{1, 3, len(out)} {
		r := &readyWatch{tail: &tailBuffer{}, seenC: make(chan struct{})}
		for i := 0; i < len(out); i += n {
			_, err := r.Write([]byte(out[i:min(i+n, len(out))]))
			require.NoError(t, err)
		}
		assert.Equal(t, "127.0.0.1:2", r.metrics(), "pieces of %d", n)
		assert.Equal(t, strings.TrimSpace(out), r.tail.String())
		select {
		case <-r.seenC:
		default:
			t.Errorf("pieces of %d: not signalled", n)
		}
	}
	r := &readyWatch{tail: &tailBuffer{}, seenC: make(chan struct{})}
	_, _ = r.Write([]byte("a java server\n"))
	assert.Empty(t, r.metrics())
}

func TestServeFailsToStart(t *testing.T) {
	cfg := Config{Serve: true, ServeCommand: []string{"/nonexistent/volanogo", "serve"}, Steps: []int{1, 2}, Runs: 2,
		Spec: swarm.Spec{Users: 2, Count: 1}}
	rec := &recorder{}
	res, err := Run(context.Background(), cfg, rec)
	require.True(t, errors.Is(err, ErrFailed), "%v", err)
	require.Len(t, rec.docs, 1, "the campaign stops at a server that does not start")
	assert.Equal(t, []string{results.FailServerStart}, failureKinds(rec.docs[0]))
	assert.Len(t, res.Steps, 1)
	require.NoError(t, rec.docs[0].Validate())
}

func TestConfigErrors(t *testing.T) {
	one := swarm.Spec{Count: 1}
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Spec: swarm.Spec{Users: 1}}, "-users: value must be at least 2 (1)"},
		{Config{Steps: []int{1}, Spec: swarm.Spec{Users: 2}}, "-count 0 runs forever: give --duration"},
		{Config{Transport: "udp", Spec: one}, `--transport: "udp" is not tcp, ws, nats, redis or mqtt`},
		{Config{Transport: "ws", Spec: one}, "--transport ws needs --url"},
		{Config{ServerCmd: "java Main", Spec: one}, "{port}"},
		{Config{Spec: swarm.Spec{Count: 1, Bind: []string{"nope"}}}, `--bind: "nope" is not an address`},
		{Config{Steps: []int{0}, Spec: one}, "-rooms: value must be at least 1 (0)"},
		{Config{Steps: []int{2}, ShardIndex: 0, ShardCount: 3, Spec: one}, "2 rooms cannot be split into 3 shards"},
		{Config{ShardIndex: 3, ShardCount: 3, Spec: one}, "--shard: 3/3"},
		{Config{ShardCount: 2, Procs: 2, Spec: one}, "exclude each other"},
		{Config{ShardCount: 2, Serve: true, Spec: one}, "not with --serve"},
		{Config{ServerCPUs: []int{1}, Spec: one}, "--server-cpus needs --serve"},
		{Config{Serve: true, ServerCPUs: []int{0}, Spec: one}, "--server-cpus: 0"},
		{Config{Spec: swarm.Spec{Duration: time.Second, Scenario: results.ScenarioChurn}}, "-count must be at least 1"},
		{Config{Spec: swarm.Spec{Count: 1, Scenario: "chaos"}}, `--scenario: "chaos"`},
		{Config{StartAt: time.Now().Add(-time.Minute), Spec: one}, "--start-at"},
		{Config{Transport: "nats", Serve: true, Spec: one}, "--serve nats-server"},
		{Config{Prefix: "chat.", Spec: one}, "--room-prefix and --qos are for a broker target"},
		{Config{Transport: "redis", QoS: 1, Spec: one}, "only MQTT"},
	} {
		_, err := Run(context.Background(), tc.cfg, &recorder{})
		require.Error(t, err, tc.want)
		assert.True(t, IsUsage(err), "%v", err)
		assert.Contains(t, err.Error(), tc.want)
	}
}

func TestServeWebSocket(t *testing.T) {
	checkGoroutines(t)
	cfg := Config{Serve: true, ServeCommand: serveArgv(t, true), Transport: swarm.TransportWS, Steps: []int{1}, Runs: 1,
		Spec: swarm.Spec{Users: 3, Count: 3, StallTimeout: 5 * time.Second}}
	rec := &recorder{}
	_, err := Run(context.Background(), cfg, rec)
	require.NoError(t, err, rec.out())
	d := rec.docs[0]
	assert.Equal(t, int64(9), d.Counts.Sent)
	assert.Equal(t, "ws", d.Config.Transport)
	assert.Regexp(t, `^ws://127\.0\.0\.1:\d+/chat$`, d.Config.URL)
}

func TestPacedSweepStopsWhenBroken(t *testing.T) {
	checkGoroutines(t)
	s := startServer(t, server.Config{})
	cfg := tcpConfig(t, s.Addr().String())
	cfg.Steps, cfg.Spec.Users, cfg.Spec.Count, cfg.Spec.Pause = []int{1, 2}, 2, 3, 10*time.Millisecond
	cfg.Spec.SLO = time.Nanosecond
	rec := &recorder{}
	res, err := Run(context.Background(), cfg, rec)
	require.ErrorIs(t, err, ErrFailed)
	require.Len(t, res.Steps, 1, "the sweep stops at the broken step")
	d := res.Steps[0].Docs[0]
	assert.True(t, d.Passed, "an SLO break is not a failure")
	assert.True(t, d.Paced.Broken)
	assert.Contains(t, d.Paced.Reason, "over the SLO of 1ns")
	require.Len(t, rec.stopped, 1)
	assert.Equal(t, 1, rec.stopped[0].Rooms)

	cfg.KeepGoing = true
	res, err = Run(context.Background(), cfg, &recorder{})
	require.ErrorIs(t, err, ErrFailed)
	assert.Len(t, res.Steps, 2)
}

func TestShardRooms(t *testing.T) {
	assert.Equal(t, []int{1, 2, 3, 4, 5}, ShardRooms(1, 5, 0, 0))
	var all []int
	for i := 0; i < 3; i++ {
		s := ShardRooms(7, 10, i, 3)
		assert.InDelta(t, 10.0/3, len(s), 1, "sizes differ by at most one room")
		all = append(all, s...)
	}
	assert.Equal(t, []int{7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, all, "every room once, in contiguous blocks")
	assert.Equal(t, []int{7, 8, 9}, ShardRooms(7, 10, 0, 3))
}

// TestShardsMerge runs one run as three shards (--shard, as on three
// machines) in this process against one server, started together with
// StartAt, and checks that their merged document counts what a
// single-process run counts.
func TestShardsMerge(t *testing.T) {
	checkGoroutines(t)
	s := startServer(t, server.Config{})
	base := tcpConfig(t, s.Addr().String())
	base.Steps, base.Spec.Users, base.Spec.Count = []int{5}, 3, 4

	single := &recorder{}
	_, err := Run(context.Background(), base, single)
	require.NoError(t, err)
	want := single.docs[0]

	startAt := time.Now().Add(testutil.Slack(time.Second))
	docs := make([]*results.Document, 3)
	var wg sync.WaitGroup
	for i := range docs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cfg := base
			cfg.ShardIndex, cfg.ShardCount, cfg.RunID, cfg.StartAt = i, 3, "run-42", startAt
			rec := &recorder{}
			if _, err := Run(context.Background(), cfg, rec); assert.NoError(t, err, rec.out()) {
				docs[i] = rec.docs[0]
			}
		}()
	}
	wg.Wait()
	var rooms []int
	for i, d := range docs {
		require.NotNil(t, d)
		assert.Equal(t, "run-42", d.RunID)
		require.NotNil(t, d.Shard)
		assert.Equal(t, i, d.Shard.Index)
		assert.Equal(t, 3, d.Shard.Count)
		assert.Equal(t, 5, d.Config.Rooms, "the whole run in Config")
		assert.True(t, d.Shard.StartAt.Equal(startAt))
		// The timed phase begins at the agreed time (the set-up of five
		// small rooms takes far less than the second allowed).
		within := testutil.Slack(250 * time.Millisecond).Seconds()
		assert.InDelta(t, 0, d.Shard.ClockOffsetSeconds, within)
		assert.InDelta(t, 0, d.TimedStart.Sub(startAt).Seconds(), within)
		rooms = append(rooms, d.Shard.Rooms...)
	}
	assert.Equal(t, []int{1, 2, 3, 4, 5}, rooms)

	merged, errs := results.MergeAll(docs)
	require.Empty(t, errs)
	require.Len(t, merged, 1)
	m := merged[0]
	assert.Equal(t, 3, m.Shards)
	assert.True(t, m.Passed, "%+v", m.Failures)
	assert.Equal(t, want.Counts, m.Counts)
	assert.Equal(t, want.Connections.Established, m.Connections.Established)
	assert.Equal(t, want.Latency[results.LatencyDelivery].Count, m.Latency[results.LatencyDelivery].Count)
	assert.Positive(t, m.Throughput)
}

// TestStartAtLate: a start just past (set-up late, or clocks apart)
// starts at once and records the lateness.
func TestStartAtLate(t *testing.T) {
	checkGoroutines(t)
	s := startServer(t, server.Config{})
	cfg := tcpConfig(t, s.Addr().String())
	cfg.Steps, cfg.Spec.Users, cfg.Spec.Count = []int{1}, 2, 2
	cfg.ShardIndex, cfg.ShardCount = 0, 1
	cfg.StartAt = time.Now().Add(-2 * time.Second)
	rec := &recorder{}
	_, err := Run(context.Background(), cfg, rec)
	require.NoError(t, err)
	d := rec.docs[0]
	require.NotNil(t, d.Shard)
	assert.GreaterOrEqual(t, d.Shard.ClockOffsetSeconds, 2.0)
	assert.Less(t, d.Shard.ClockOffsetSeconds, 4.0)
}

func TestChurnLeaks(t *testing.T) {
	checkGoroutines(t)
	s := startServer(t, server.Config{MetricsListen: "127.0.0.1:0"})
	cfg := tcpConfig(t, s.Addr().String())
	cfg.Spec.Scenario = results.ScenarioChurn
	cfg.Steps, cfg.Spec.Users, cfg.Spec.Count, cfg.Spec.ConnectConcurrency = []int{2}, 3, 4, 4
	cfg.ServerMetrics = "http://" + s.MetricsAddr().String() + "/metrics"
	rec := &recorder{}
	_, err := Run(context.Background(), cfg, rec)
	require.NoError(t, err, rec.out())
	d := rec.docs[0]
	assert.True(t, d.Passed, "%+v", d.Failures)
	assert.Equal(t, results.ScenarioChurn, d.Config.Scenario)
	require.NotNil(t, d.Churn)
	assert.Equal(t, int64(24), d.Churn.Sequences, "rooms × users × count")
	assert.LessOrEqual(t, d.Connections.Peak, int64(4), "at most --connect-concurrency sequences at once")
	require.NotNil(t, d.Server, "the server's metrics were read")
	assert.Positive(t, d.Server.Goroutines)
	assert.Zero(t, d.Churn.LeakedConnections)
	assert.Zero(t, d.Churn.LeakedGoroutines)
	assert.Zero(t, d.Churn.LeakedFDs)
}

func TestChurnLeakFails(t *testing.T) {
	var l results.Leaks
	leaks(&l, serverSample{ok: true, hasOpen: true, open: 0, goroutines: 10, openFDs: 20},
		serverSample{ok: true, hasOpen: true, open: 2, goroutines: 14, openFDs: 22})
	assert.Equal(t, results.Leaks{LeakedConnections: 2, LeakedGoroutines: 4, LeakedFDs: 2}, l)
	assert.Equal(t, "after 10 sequences the server still has 2 more connections open, 4 more goroutines and 2 more descriptors than before the run",
		leakFailure("10 sequences", l))
	assert.Empty(t, leakFailure("10 sequences", results.Leaks{}))
}

func TestServerCPUs(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("CPU affinity: Linux only")
	}
	checkGoroutines(t)
	var allowed []string
	testHookServerStarted = func(pid int) {
		tasks, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "task"))
		if !assert.NoError(t, err) {
			return
		}
		for _, task := range tasks {
			b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "task", task.Name(), "status"))
			if err != nil {
				continue
			}
			for _, line := range strings.Split(string(b), "\n") {
				if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
					allowed = append(allowed, strings.TrimSpace(v))
				}
			}
		}
	}
	t.Cleanup(func() { testHookServerStarted = nil })
	cfg := Config{Serve: true, ServeCommand: serveArgv(t, false), ServerCPUs: []int{1}, Steps: []int{1}, Runs: 1,
		Spec: swarm.Spec{Users: 2, Count: 5, StallTimeout: 5 * time.Second}}
	rec := &recorder{}
	res, err := Run(context.Background(), cfg, rec)
	require.NoError(t, err, rec.out())
	require.Len(t, res.Steps, 1)
	assert.Equal(t, 1, res.Steps[0].CPUs)
	d := res.Steps[0].Docs[0]
	assert.Equal(t, 1, d.Config.ServerCPUs)
	require.NotNil(t, d.Server)
	assert.Equal(t, 1, d.Server.CPUs)
	assert.Equal(t, 1, d.Server.GOMAXPROCS, "GOMAXPROCS=1 in the server's environment")
	require.NotEmpty(t, allowed)
	for _, a := range allowed {
		assert.NotContains(t, a, ",", "every thread on one processor: %v", allowed)
		assert.NotContains(t, a, "-", "every thread on one processor: %v", allowed)
	}
}

// TestPacedSweepServerOutOfFiles sweeps a server whose open-files limit is
// 200: 20 rooms of 2 hold, 200 rooms of 2 break with the server's cause,
// and the sweep stops there.
func TestPacedSweepServerOutOfFiles(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("open-files limit of a child: Linux")
	}
	checkGoroutines(t)
	t.Setenv("VOLANOGO_TEST_NOFILE", "200")
	cfg := Config{Serve: true, ServeCommand: serveArgv(t, false), Steps: []int{20, 200, 20}, Runs: 1,
		Spec: swarm.Spec{Users: 2, Pause: 200 * time.Millisecond, Duration: 2 * time.Second, StallTimeout: 3 * time.Second, ConnectConcurrency: 8}}
	rec := &recorder{}
	res, err := Run(context.Background(), cfg, rec)
	require.ErrorIs(t, err, ErrFailed, rec.out())
	require.Len(t, res.Steps, 2, "the sweep stops at the broken step:\n%s", rec.out())
	ok := res.Steps[0].Docs[0]
	require.NotNil(t, ok.Paced)
	assert.False(t, ok.Paced.Broken, ok.Paced.Reason)
	assert.Equal(t, int64(40), ok.Paced.ConcurrentUsers)
	assert.NotNil(t, ok.Server, "server CPU per step")

	broken := res.Steps[1].Docs[0]
	require.NotNil(t, broken.Paced)
	assert.True(t, broken.Paced.Broken)
	kinds := failureKinds(broken)
	require.NotEmpty(t, kinds)
	assert.Subset(t, []string{results.FailOpenFiles, results.FailRefused, results.FailClosed, results.FailReset, results.FailTimeout}, kinds[:1])
	assert.Contains(t, broken.Paced.Reason, "the server: ")
	assert.Contains(t, broken.Paced.Reason, "(open_files)", "the server's own reason")
	assert.Contains(t, broken.Failures[0].Server, "open-files limit is 200")
	require.Len(t, rec.stopped, 1)
	assert.Equal(t, 200, rec.stopped[0].Rooms)
}

// TestProcs runs a run as two shard processes (this test binary as the
// shard command): exact totals, one merged document, the server read by
// the parent, and the shards' progress summed.
func TestProcs(t *testing.T) {
	checkGoroutines(t)
	s := startServer(t, server.Config{MetricsListen: "127.0.0.1:0"})
	cfg := tcpConfig(t, s.Addr().String())
	cfg.Steps, cfg.Spec.Users, cfg.Spec.Count = []int{3}, 3, 4
	cfg.Procs, cfg.ShardCommand = 2, shardArgv(t)
	cfg.ServerMetrics = "http://" + s.MetricsAddr().String() + "/metrics"
	rec := &recorder{}
	_, err := Run(context.Background(), cfg, rec)
	require.NoError(t, err, rec.out())
	d := rec.docs[0]
	assert.True(t, d.Passed, "%+v", d.Failures)
	assert.Equal(t, 2, d.Shards)
	assert.Nil(t, d.Shard)
	assert.Equal(t, results.Counts{Sent: 36, Received: 72, Total: 108, ExpectedSent: 36, ExpectedTotal: 108, Confirms: 36}, d.Counts)
	assert.Equal(t, int64(9), d.Connections.Established)
	assert.Equal(t, 3, d.Config.Rooms)
	require.NotNil(t, d.Integrity)
	assert.Equal(t, int64(9), d.Integrity.Receivers)
	require.NotNil(t, d.Server, "the parent reads the server")
	assert.Equal(t, "metrics", d.Server.Source)
	require.NoError(t, d.Validate())
}

func TestAutoProcs(t *testing.T) {
	Environment()
	old := environment.OpenFilesSoft
	t.Cleanup(func() { environment.OpenFilesSoft = old })
	environment.OpenFilesSoft = 20000
	assert.Equal(t, 1, autoProcs(950, 20), "19,000 connections fit under 19,900")
	assert.Equal(t, 2, autoProcs(1000, 20), "20,000 do not")
	assert.Equal(t, 1, autoProcs(9950, 2))
	assert.Equal(t, 2, autoProcs(9951, 2), "past 19,900 connections")
	environment.OpenFilesSoft = -1
	assert.Equal(t, 1, autoProcs(100000, 20), "unlimited")
}

func TestShardEnv(t *testing.T) {
	t.Setenv("GOMAXPROCS", "")
	env := shardEnv(2)
	require.NotEmpty(t, env)
	assert.Equal(t, "GOMAXPROCS="+strconv.Itoa(max(1, runtime.GOMAXPROCS(0)/2)), env[len(env)-1])
	env = shardEnv(1000)
	assert.Equal(t, "GOMAXPROCS=1", env[len(env)-1], "at least one each")

	t.Setenv("GOMAXPROCS", "3")
	assert.Nil(t, shardEnv(2), "the user's GOMAXPROCS is inherited")
}

// TestClientCmd runs an external VolanoMark client per run (a stand-in for
// the original Mark) under the run rules, against a fresh server per run:
// Mark's counts, both sides' CPU over its timed phase, the client recorded.
func TestClientCmd(t *testing.T) {
	checkGoroutines(t)
	cfg := Config{Serve: true, ServeCommand: serveArgv(t, false), Steps: []int{2}, Runs: 2, Discard: 1,
		ClientCmd: os.Args[0] + " stand-in-mark {host} {port} {rooms} {users} {count}", ClientTimeout: 30 * time.Second,
		Spec: swarm.Spec{Users: 3, Count: 30}}
	rec := &recorder{}
	res, err := Run(context.Background(), cfg, rec)
	require.NoError(t, err, rec.out())
	require.Len(t, rec.docs, 2)
	for _, d := range rec.docs {
		assert.True(t, d.Passed, "%+v", d.Failures)
		assert.Equal(t, results.Counts{Sent: 180, Received: 360, Total: 540, ExpectedSent: 180, ExpectedTotal: 540}, d.Counts)
		assert.Positive(t, d.ElapsedSeconds)
		assert.Positive(t, d.Client.CPUUserSeconds+d.Client.CPUSystemSeconds, "the client's CPU over its timed phase")
		assert.Positive(t, d.Client.PeakRSSBytes)
		require.NotNil(t, d.Server, "the server's CPU over the client's timed phase")
		assert.Equal(t, "metrics", d.Server.Source)
		assert.Equal(t, []string{"/bin/sh", "-c", "exec " + os.Args[0] + " stand-in-mark 127.0.0.1 " + strconv.Itoa(d.Config.Port) + " 2 3 30"}, d.Config.ClientCommand)
		assert.False(t, d.TimedStart.Before(d.Started))
		require.NoError(t, d.Validate())
	}
	assert.True(t, rec.docs[0].Discarded)
	assert.Len(t, res.Steps, 1)
}

func TestClientCmdFails(t *testing.T) {
	checkGoroutines(t)
	s := startServer(t, server.Config{})
	cfg := tcpConfig(t, s.Addr().String())
	cfg.Steps, cfg.Spec.Users, cfg.Spec.Count = []int{1}, 3, 2
	cfg.ClientCmd, cfg.ClientTimeout = os.Args[0]+" stand-in-mark fail # {port}", 30*time.Second
	rec := &recorder{}
	_, err := Run(context.Background(), cfg, rec)
	require.ErrorIs(t, err, ErrFailed)
	d := rec.docs[0]
	require.Len(t, d.Failures, 1)
	assert.Equal(t, results.FailOther, d.Failures[0].Kind)
	assert.Contains(t, d.Failures[0].Example, "exit status 1): Mark3 in Room1 disconnected from server.")

	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{ClientCmd: "mark", Spec: swarm.Spec{Count: 1}}, "--client-cmd: the command must contain {port}"},
		{Config{ClientCmd: "mark {port}", Spec: swarm.Spec{Count: 1, Pause: time.Second}}, "must end"},
		{Config{ClientCmd: "mark {port}", Procs: 2, Spec: swarm.Spec{Count: 1}}, "not with --procs"},
	} {
		_, err := Run(context.Background(), tc.cfg, &recorder{})
		require.Error(t, err)
		assert.True(t, IsUsage(err), "%v", err)
		assert.Contains(t, err.Error(), tc.want)
	}
}

func TestMarkLines(t *testing.T) {
	m := &markLines{running: make(chan struct{})}
	ran := false
	m.read(strings.NewReader("Creating room number 1 ...\n20 connections so far.\nRunning the test ...\n"+
		"VolanoMark version = 2.13.4\nMessages sent      = 30000\nMessages received  = 570000\n"+
		"Total messages     = 600000\nElapsed time       = 7.5 seconds\nAverage throughput = 80000 messages per second\n"), func() { ran = true })
	assert.True(t, ran)
	assert.Equal(t, int64(30000), m.sent)
	assert.Equal(t, int64(570000), m.received)
	assert.Equal(t, int64(7500), m.elapsedMs)
	assert.False(t, m.failed)

	m = &markLines{running: make(chan struct{})}
	m.read(strings.NewReader("Elapsed time       < 1 second\nMark1 in Room2 disconnected from server.\nTest failed.\n"), func() {})
	assert.True(t, m.hasElapsed)
	assert.Zero(t, m.elapsedMs)
	assert.True(t, m.failed)
	assert.Equal(t, "Mark1 in Room2 disconnected from server.", m.disconnectedExample)
}

// TestStormLeaks: a reconnect storm against a fresh server, then the
// server's state checked: nothing left behind.
func TestStormLeaks(t *testing.T) {
	checkGoroutines(t)
	cfg := Config{Serve: true, ServeCommand: serveArgv(t, false), Steps: []int{3},
		Spec: swarm.Spec{Scenario: results.ScenarioStorm, Users: 4, Pause: 50 * time.Millisecond, Duration: 2 * time.Second,
			StormAt: 700 * time.Millisecond, StallTimeout: 5 * time.Second}}
	rec := &recorder{}
	_, err := Run(context.Background(), cfg, rec)
	require.NoError(t, err, rec.out())
	require.Len(t, rec.docs, 1, "one run by default: a storm has no Mark score")
	d := rec.docs[0]
	require.NotNil(t, d.Storm)
	assert.Equal(t, int64(12), d.Storm.Reconnected)
	assert.Equal(t, results.Leaks{}, d.Storm.Leaks)
	require.NotNil(t, d.Server)
	assert.Positive(t, d.Server.Goroutines)
	assert.Equal(t, results.ScenarioStorm, d.Config.Scenario)
	require.NoError(t, d.Validate())
}

// TestProbeCoalesce: a server's coalescing window (serve --coalesce) is
// read from its metrics and recorded with its usage, so that runs with
// and without one are told apart.
func TestProbeCoalesce(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the epoll engine is Linux's")
	}
	checkGoroutines(t)
	s := startServer(t, server.Config{MetricsListen: "127.0.0.1:0", Engine: server.EngineEpoll, Coalesce: 300 * time.Microsecond})
	probe := metricsProbe{url: "http://" + s.MetricsAddr().String() + "/metrics"}
	a := probe.sample(context.Background())
	require.True(t, a.ok, "%v", a.err)
	assert.InDelta(t, 0.0003, a.coalesce, 1e-12)
	u := serverUsage(a, a, 1, 1)
	assert.InDelta(t, 0.0003, u.CoalesceSeconds, 1e-12)
	assert.Equal(t, server.EngineEpoll, u.Engine)
}
