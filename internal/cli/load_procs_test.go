package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volanogo/volanogo/internal/campaign"
	"github.com/volanogo/volanogo/internal/results"
	"github.com/volanogo/volanogo/internal/server"
	"github.com/volanogo/volanogo/internal/testutil"
)

// TestMain doubles as the volanogo command for the processes that tests
// start (load --procs starts its shards, and --serve its server, from
// os.Executable: this test binary): with VOLANOGO_TEST_MAIN set it runs
// Main with its arguments. VOLANOGO_TEST_BAD_SHARD="I/N:PORT" points shard
// I/N at PORT (a port where nothing listens).
func TestMain(m *testing.M) {
	if os.Getenv("VOLANOGO_TEST_MAIN") != "" {
		if v := os.Getenv("VOLANOGO_TEST_MAIN_NOFILE"); v != "" {
			n, _ := strconv.ParseUint(v, 10, 64)
			if err := setOpenFiles(n); err != nil {
				os.Exit(3)
			}
		}
		args := os.Args[1:]
		var in io.Reader = os.Stdin
		if bad := os.Getenv("VOLANOGO_TEST_BAD_SHARD"); bad != "" && len(args) > 0 && args[0] == "shard" {
			shard, port, _ := strings.Cut(bad, ":")
			in = badShard(os.Stdin, shard, port)
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		go func() {
			// as cmd/volanogo: a second signal ends the process at once
			<-ctx.Done()
			stop()
		}()
		code := Main(ctx, args, in, os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// badShard points shard I/N (its spec is the first line of in) at PORT on
// loopback, where nothing listens.
func badShard(in io.Reader, shard, port string) io.Reader {
	rd := bufio.NewReader(in)
	line, err := rd.ReadBytes('\n')
	if err != nil {
		return io.MultiReader(bytes.NewReader(line), rd)
	}
	var spec campaign.ShardSpec
	if json.Unmarshal(line, &spec) == nil && fmt.Sprintf("%d/%d", spec.Index, spec.Count) == shard {
		spec.Target.Addr = "127.0.0.1:" + port
		if b, err := json.Marshal(spec); err == nil {
			line = append(b, '\n')
		}
	}
	return io.MultiReader(bytes.NewReader(line), rd)
}

func startTestServer(t *testing.T) *server.Server {
	return testutil.StartServer(t, server.Config{MetricsListen: "127.0.0.1:0"})
}

func TestLoadProcs(t *testing.T) {
	t.Setenv("VOLANOGO_TEST_MAIN", "1")
	t.Setenv("GOMAXPROCS", "") // the shards' GOMAXPROCS is load's choice
	s := startTestServer(t)
	host, port, _ := net.SplitHostPort(s.Addr().String())
	doc := filepath.Join(t.TempDir(), "run.json")
	code, out, errOut := run(t, "load", "--procs", "2", "-host", host, "-port", port, "-rooms", "3", "-users", "3", "-count", "4", "--progress",
		"--server-metrics", "http://"+s.MetricsAddr().String()+"/metrics", "-file", "", "-o", doc)
	require.Equal(t, 0, code, "%s\n%s", out, errOut)
	// One summary: Mark's lines with the exact totals of 3 rooms × 3 users × 4.
	assert.Contains(t, out, "VolanoMark version = 2.13.4\nMessages sent      = 36\nMessages received  = 72\nTotal messages     = 108\n")
	assert.Equal(t, 1, strings.Count(out, "VolanoMark version"))
	assert.Contains(t, out, "Shards             = 2 processes, merged\n")
	d, err := results.ReadFile(doc)
	require.NoError(t, err)
	assert.True(t, d.Passed, "%+v", d.Failures)
	assert.Equal(t, 2, d.Shards)
	assert.Nil(t, d.Shard)
	assert.Equal(t, results.Counts{Sent: 36, Received: 72, Total: 108, ExpectedSent: 36, ExpectedTotal: 108, Confirms: 36}, d.Counts)
	assert.Equal(t, int64(9), d.Connections.Established)
	assert.Equal(t, 3, d.Config.Rooms)
	require.NotNil(t, d.Server, "the parent reads the server")
	assert.Equal(t, "metrics", d.Server.Source)
	assert.Contains(t, d.CommandLine, "--procs=2")
	// Each shard schedules onto its share of the processors.
	assert.Equal(t, max(1, runtime.GOMAXPROCS(0)/2), d.Environment.GOMAXPROCS)
}

func TestLoadProcsShardFails(t *testing.T) {
	s := startTestServer(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	_, closed, _ := net.SplitHostPort(ln.Addr().String())
	ln.Close()
	t.Setenv("VOLANOGO_TEST_MAIN", "1")
	t.Setenv("VOLANOGO_TEST_BAD_SHARD", "1/2:"+closed)
	host, port, _ := net.SplitHostPort(s.Addr().String())
	doc := filepath.Join(t.TempDir(), "run.json")
	code, out, errOut := run(t, "load", "--procs", "2", "-host", host, "-port", port, "-rooms", "2", "-users", "2", "-count", "3",
		"--stall-timeout", "5s", "-file", "", "-o", doc)
	require.Equal(t, 1, code, "%s\n%s", out, errOut)
	assert.Contains(t, out, "Failure            = shard (1): shard 1/2 (pid ")
	assert.Contains(t, out, "refused")
	assert.Contains(t, out, "Test failed.")
	d, err := results.ReadFile(doc)
	require.NoError(t, err)
	assert.False(t, d.Passed)
	var kinds []string
	for _, f := range d.Failures {
		kinds = append(kinds, f.Kind)
	}
	assert.Contains(t, kinds, results.FailShard)
	assert.Contains(t, kinds, results.FailRefused, "the shard's own failure")
}

func TestLoadProcsServe(t *testing.T) {
	t.Setenv("VOLANOGO_TEST_MAIN", "1")
	code, out, errOut := run(t, "load", "--serve", "--procs", "2", "-runs", "1", "-rooms", "2", "-users", "2", "-count", "3", "-file", "")
	require.Equal(t, 0, code, "%s\n%s", out, errOut)
	assert.Contains(t, out, "Messages sent      = 12\nMessages received  = 12\n")
	assert.Contains(t, out, "Server CPU         = ")
}

func TestLoadScaleOutFlags(t *testing.T) {
	t.Chdir(t.TempDir()) // the default -file is written in the working directory
	for _, tc := range []struct {
		args []string
		code int
		err  string
		want func(t *testing.T, cfg *loadOptions)
	}{
		{args: []string{"--shard", "2/10", "--run-id", "r1", "--start-at", "2030-01-02T03:04:05Z"}},
		{args: []string{"--shard", "10/10"}, code: 2, err: `--shard: "10/10" is not I/N`},
		{args: []string{"--shard", "x"}, code: 2, err: `--shard: "x" is not I/N`},
		{args: []string{"--start-at", "tomorrow"}, code: 2, err: `--start-at: "tomorrow" is not an RFC 3339 time`},
		{args: []string{"--procs", "auto"}},
		{args: []string{"--procs", "0"}, code: 2, err: `--procs: "0" is not a number of processes or auto`},
		{args: []string{"--scenario", "churn", "--server-cpus", "1,2", "--serve"}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			got := fakeLoad(t, nil)
			code, _, errOut := run(t, append([]string{"load"}, tc.args...)...)
			assert.Equal(t, tc.code, code, errOut)
			if tc.err != "" {
				assert.Contains(t, errOut, tc.err)
				return
			}
			switch tc.args[0] {
			case "--shard":
				assert.Equal(t, 2, got.ShardIndex)
				assert.Equal(t, 10, got.ShardCount)
				assert.Equal(t, "r1", got.RunID)
				assert.Equal(t, time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC), got.StartAt)
			case "--procs":
				assert.Equal(t, -1, got.Procs)
			case "--scenario":
				assert.Equal(t, "churn", got.Spec.Scenario)
				assert.Equal(t, []int{1, 2}, got.ServerCPUs)
			}
		})
	}
}

func TestLoadProcsInterrupted(t *testing.T) {
	t.Setenv("VOLANOGO_TEST_MAIN", "1")
	s := startTestServer(t)
	host, port, _ := net.SplitHostPort(s.Addr().String())
	doc := filepath.Join(t.TempDir(), "run.json")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Interrupt once the shards' timed phase runs (the progress line says
	// so).
	progress := &watchWriter{want: "running: ", seen: make(chan struct{})}
	go func() {
		select {
		case <-progress.seen:
		case <-time.After(20 * time.Second):
		}
		cancel()
	}()
	var out strings.Builder
	start := time.Now()
	code := Main(ctx, []string{"load", "--procs", "2", "-host", host, "-port", port, "-rooms", "2", "-users", "2", "-count", "0",
		"-pause", "50ms", "--duration", "1h", "-file", "", "-o", doc, "--progress"}, nil, &out, progress)
	assert.Equal(t, 130, code, "an interrupted command exits 128 + SIGINT: %s\n%s", out.String(), progress.String())
	assert.Less(t, time.Since(start), 30*time.Second)
	assert.Contains(t, out.String(), "Test interrupted.")
	d, err := results.ReadFile(doc)
	require.NoError(t, err)
	assert.True(t, d.Interrupted)
	assert.Equal(t, 2, d.Shards, "both shards wrote their documents")
	assert.Positive(t, d.Counts.Sent)
}

// watchWriter keeps what is written to it and closes seen once want has
// been written.
type watchWriter struct {
	mu   sync.Mutex
	b    strings.Builder
	want string
	seen chan struct{}
	once sync.Once
}

func (w *watchWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b.Write(p)
	if strings.Contains(w.b.String(), w.want) {
		w.once.Do(func() { close(w.seen) })
	}
	return len(p), nil
}

func (w *watchWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// TestLoadSplitsWhenNeeded: without --procs, a step that one process
// cannot hold within its open-files limit is run as shard processes. The
// client here has 150 open files: 80 connections need two processes of at
// most 50 (150 less the 100 kept in reserve).
func TestLoadSplitsWhenNeeded(t *testing.T) {
	s := startTestServer(t)
	host, port, _ := net.SplitHostPort(s.Addr().String())
	doc := filepath.Join(t.TempDir(), "run.json")
	cmd := exec.Command(os.Args[0], "load", "-host", host, "-port", port, "-rooms", "4", "-users", "20", "-count", "2",
		"-file", "", "-o", doc, "--quiet")
	cmd.Env = append(os.Environ(), "VOLANOGO_TEST_MAIN=1", "VOLANOGO_TEST_MAIN_NOFILE=150")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "Messages sent      = 160\n")
	d, err := results.ReadFile(doc)
	require.NoError(t, err)
	assert.True(t, d.Passed)
	assert.Equal(t, 2, d.Shards)
	assert.Equal(t, int64(160), d.Counts.Sent)
}
