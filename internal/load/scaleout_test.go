package load

import (
	"bytes"
	"context"
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

	"github.com/volanogo/volanogo/internal/results"
	"github.com/volanogo/volanogo/internal/server"
)

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

// TestShardsMerge runs one run as three shards in this process against one
// server, started together with StartAt, and checks that their merged
// document counts what a single-process run counts.
func TestShardsMerge(t *testing.T) {
	checkGoroutines(t)
	s := startServer(t, server.Config{})
	base := tcpConfig(t, s.Addr().String())
	base.Steps, base.Users, base.Count = []int{5}, 3, 4

	single, err := Run(context.Background(), base, &bytes.Buffer{})
	require.NoError(t, err)
	want := single.Steps[0].Docs[0]

	startAt := time.Now().Add(time.Second)
	docs := make([]*results.Document, 3)
	var wg sync.WaitGroup
	for i := range docs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cfg := base
			cfg.ShardIndex, cfg.ShardCount, cfg.RunID, cfg.StartAt = i, 3, "run-42", startAt
			var out bytes.Buffer
			res, err := Run(context.Background(), cfg, &out)
			if assert.NoError(t, err, out.String()) {
				docs[i] = res.Steps[0].Docs[0]
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
		assert.InDelta(t, 0, d.Shard.ClockOffsetSeconds, 0.25)
		assert.InDelta(t, 0, d.TimedStart.Sub(startAt).Seconds(), 0.25)
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

func TestStartAt(t *testing.T) {
	checkGoroutines(t)
	s := startServer(t, server.Config{})
	cfg := tcpConfig(t, s.Addr().String())
	cfg.Steps, cfg.Users, cfg.Count = []int{1}, 2, 2

	// Far in the past: a usage error.
	cfg.StartAt = time.Now().Add(-time.Minute)
	_, err := Run(context.Background(), cfg, &bytes.Buffer{})
	require.Error(t, err)
	assert.True(t, IsUsage(err))
	assert.Contains(t, err.Error(), "--start-at")

	// Just past (set-up late, or clocks apart): start at once and record
	// the lateness.
	cfg.StartAt = time.Now().Add(-2 * time.Second)
	res, err := Run(context.Background(), cfg, &bytes.Buffer{})
	require.NoError(t, err)
	d := res.Steps[0].Docs[0]
	require.NotNil(t, d.Shard)
	assert.GreaterOrEqual(t, d.Shard.ClockOffsetSeconds, 2.0)
	assert.Less(t, d.Shard.ClockOffsetSeconds, 4.0)
}

func TestShardConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Count: 1, Steps: []int{2}, ShardIndex: 0, ShardCount: 3}, "2 rooms cannot be split into 3 shards"},
		{Config{Count: 1, ShardIndex: 3, ShardCount: 3}, "--shard: 3/3"},
		{Config{Count: 1, ShardCount: 2, Procs: 2}, "exclude each other"},
		{Config{Count: 1, ShardCount: 2, Serve: true}, "not with --serve"},
		{Config{Count: 1, ServerCPUs: []int{1}}, "--server-cpus needs --serve"},
		{Config{Count: 1, Serve: true, ServerCPUs: []int{0}}, "--server-cpus: 0"},
		{Config{Count: 0, Duration: time.Second, Scenario: results.ScenarioChurn}, "-count must be at least 1"},
		{Config{Count: 1, Scenario: "chaos"}, `--scenario: "chaos"`},
	} {
		_, err := Run(context.Background(), tc.cfg, &bytes.Buffer{})
		require.Error(t, err, tc.want)
		assert.True(t, IsUsage(err), "%v", err)
		assert.Contains(t, err.Error(), tc.want)
	}
}

func TestChurn(t *testing.T) {
	checkGoroutines(t)
	s := startServer(t, server.Config{MetricsListen: "127.0.0.1:0"})
	cfg := tcpConfig(t, s.Addr().String())
	cfg.Scenario = results.ScenarioChurn
	cfg.Steps, cfg.Users, cfg.Count, cfg.ConnectConcurrency = []int{2}, 3, 4, 4
	cfg.ServerMetrics = "http://" + s.MetricsAddr().String() + "/metrics"
	cfg.Output = t.TempDir() + "/churn.json"
	var out bytes.Buffer
	res, err := Run(context.Background(), cfg, &out)
	require.NoError(t, err, out.String())
	d := res.Steps[0].Docs[0]
	assert.True(t, d.Passed, "%+v", d.Failures)
	assert.Equal(t, results.ScenarioChurn, d.Config.Scenario)
	require.NotNil(t, d.Churn)
	assert.Equal(t, int64(24), d.Churn.Sequences, "rooms × users × count")
	assert.Equal(t, int64(24), d.Counts.Sent, "one chat per sequence")
	assert.Equal(t, int64(24), d.Counts.Confirms)
	assert.Equal(t, int64(24), d.Connections.Established)
	assert.LessOrEqual(t, d.Connections.Peak, int64(4), "at most --connect-concurrency sequences at once")
	require.NotNil(t, d.Churn.First)
	assert.Equal(t, int64(6), d.Churn.First.Count, "each user's first sequence apart")
	assert.Equal(t, int64(18), d.Latency[results.LatencySequence].Count)
	assert.Positive(t, d.Churn.SequencesPerSecond)
	require.NotNil(t, d.Server, "the server's metrics were read")
	assert.Zero(t, d.Churn.LeakedConnections)
	assert.Zero(t, d.Churn.LeakedGoroutines)
	assert.Zero(t, d.Churn.LeakedFDs)
	assert.Contains(t, out.String(), "Sequences          = 24 (connect, Access, EnterRoom, chat, ExitRoom, close)\n")
	assert.Contains(t, out.String(), "First sequence     = p50 ")
	assert.Contains(t, out.String(), "(no leak)")
	rd, err := results.ReadFile(cfg.Output)
	require.NoError(t, err)
	assert.Equal(t, d.Churn.Sequences, rd.Churn.Sequences)
}

func TestChurnLeakFails(t *testing.T) {
	c := &results.Churn{Sequences: 10}
	leaks(c, serverSample{ok: true, hasOpen: true, open: 0, goroutines: 10, openFDs: 20},
		serverSample{ok: true, hasOpen: true, open: 2, goroutines: 14, openFDs: 22})
	assert.Equal(t, results.Churn{Sequences: 10, LeakedConnections: 2, LeakedGoroutines: 4, LeakedFDs: 2}, *c)
	assert.Contains(t, leakFailure(c), "2 more connections open, 4 more goroutines and 2 more descriptors")
	assert.Empty(t, leakFailure(&results.Churn{Sequences: 10}))
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
	cfg := Config{Serve: true, ServeCommand: helperServeArgv(t), ServerCPUs: []int{1}, Steps: []int{1}, Users: 2, Count: 5,
		StallTimeout: 5 * time.Second, Runs: 1}
	var out bytes.Buffer
	res, err := Run(context.Background(), cfg, &out)
	require.NoError(t, err, out.String())
	require.Len(t, res.Steps, 1)
	assert.Equal(t, 1, res.Steps[0].ServerCPUs)
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
	cfg := Config{Serve: true, ServeCommand: helperServeArgv(t), Steps: []int{20, 200, 20}, Users: 2, Count: 0,
		Pause: 200 * time.Millisecond, Duration: 2 * time.Second, StallTimeout: 3 * time.Second, Runs: 1, ConnectConcurrency: 8}
	var out bytes.Buffer
	res, err := Run(context.Background(), cfg, &out)
	require.ErrorIs(t, err, ErrFailed, out.String())
	require.Len(t, res.Steps, 2, "the sweep stops at the broken step:\n%s", out.String())
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
	assert.Contains(t, broken.Paced.Reason, "the server ran out of open files")
	assert.Contains(t, broken.Failures[0].Example, "its open-files limit is 200")
	assert.Contains(t, out.String(), "The sweep stops at 200 rooms")
}

func TestStdioGate(t *testing.T) {
	at := time.Date(2030, 1, 2, 3, 4, 5, 600, time.UTC)
	var out bytes.Buffer
	g := StdioGate(strings.NewReader("start "+at.Format(time.RFC3339Nano)+"\nrest"), &out)
	got, err := g.Ready(context.Background())
	require.NoError(t, err)
	assert.True(t, got.Equal(at))
	g.Ended()
	assert.Equal(t, ShardReadyLine+"\n"+ShardEndedLine+"\n", out.String())

	// No start line: the run was called off.
	_, err = StdioGate(strings.NewReader(""), &out).Ready(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "another shard failed")
	_, err = StdioGate(strings.NewReader("go\n"), &out).Ready(context.Background())
	assert.ErrorContains(t, err, `bad start signal "go"`)
}

func TestAutoProcs(t *testing.T) {
	initPlatform()
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

func TestShardArgs(t *testing.T) {
	cfg := Config{Start: 3, Users: 2, Count: 0, Pause: time.Second, Duration: 30 * time.Second, ConnectRate: 1000,
		ConnectConcurrency: 16, StallTimeout: 30 * time.Second, SLO: time.Second, Scenario: "", Seed: 7}
	d := &dialer{transport: TransportTCP, addr: "127.0.0.1:8001"}
	a := strings.Join(shardArgs(&cfg, runSpec{rooms: 500, runID: "r"}, 1, 2, "L", d, "/tmp/s1.json"), " ")
	for _, want := range []string{"--shard 1/2", "--run-id r", "--start-barrier", "--host 127.0.0.1 --port 8001", "--start 3", "--rooms 500",
		"--users 2", "--count 0", "--pause 1s", "--duration 30s", "--connect-rate 500", "--seed 8", "--label L", "-o /tmp/s1.json", "--file="} {
		assert.Contains(t, a, want)
	}
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
