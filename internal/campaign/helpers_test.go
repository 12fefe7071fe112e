package campaign

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/volanogo/volanogo/internal/handshake"
	"github.com/volanogo/volanogo/internal/results"
	"github.com/volanogo/volanogo/internal/server"
	"github.com/volanogo/volanogo/internal/swarm"
	"github.com/volanogo/volanogo/internal/testutil"
)

// TestMain doubles as the processes the campaign starts: with
// VOLANOGO_TEST_SERVE set, the test binary is a chat server that prints
// its ready line as `volanogo serve` does and serves until SIGTERM; with
// VOLANOGO_TEST_SHARD set, it is a shard process (RunShard); with the
// argument stand-in-mark, it stands in for the original Mark (helperMark).
func TestMain(m *testing.M) {
	switch {
	case len(os.Args) > 1 && os.Args[1] == "stand-in-mark":
		os.Exit(helperMark(os.Args[2:]))
	case os.Getenv("VOLANOGO_TEST_SERVE") != "":
		os.Exit(helperServe(os.Args[1:]))
	case os.Getenv("VOLANOGO_TEST_SHARD") != "":
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err := RunShard(ctx, os.Stdin, os.Stdout)
		stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func helperServe(args []string) int {
	if v := os.Getenv("VOLANOGO_TEST_NOFILE"); v != "" {
		if err := setOpenFiles(v); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	cfg := server.Config{Listen: "127.0.0.1:0"}
	for i := 0; i+1 < len(args); i++ {
		switch args[i] {
		case "--listen":
			cfg.Listen = args[i+1]
		case "--metrics-listen":
			cfg.MetricsListen = args[i+1]
		case "--ws-listen":
			cfg.WSListen = args[i+1]
		case "--max-connections":
			cfg.MaxConnections, _ = strconv.Atoi(args[i+1])
		case "--fail-once":
			// The first start fails (a server that works on the second
			// try): it leaves the file behind for the next.
			if _, err := os.Stat(args[i+1]); err != nil {
				_ = os.WriteFile(args[i+1], nil, 0o644)
				fmt.Fprintln(os.Stderr, "java.net.SocketException: Too many open files")
				return 1
			}
		}
	}
	s, err := server.New(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := s.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	addr := func(a net.Addr, on bool) string {
		if !on || a == nil {
			return ""
		}
		return a.String()
	}
	fmt.Println(handshake.Serve{Chat: addr(s.Addr(), true), WS: addr(s.WSAddr(), cfg.WSListen != ""),
		Metrics: addr(s.MetricsAddr(), cfg.MetricsListen != "")}.Line())
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.Shutdown(sctx)
	return 0
}

// helperMark stands in for the original Mark: "HOST PORT ROOMS USERS
// COUNT" runs the swarm and prints what Mark prints around its timed phase
// ("Running the test ..." and its result lines); "fail" prints Mark's
// failure and exits 1.
func helperMark(args []string) int {
	if len(args) == 1 && args[0] == "fail" {
		fmt.Println("Mark3 in Room1 disconnected from server.")
		fmt.Println("Test failed.")
		return 1
	}
	if len(args) != 5 {
		fmt.Fprintln(os.Stderr, "usage: HOST PORT ROOMS USERS COUNT")
		return 2
	}
	n := make([]int, 3)
	for i := range n {
		n[i], _ = strconv.Atoi(args[2+i])
	}
	spec := swarm.Spec{Users: n[1], Count: n[2], StallTimeout: 10 * time.Second}
	for r := 1; r <= n[0]; r++ {
		spec.Rooms = append(spec.Rooms, r)
	}
	d, err := swarm.Run(context.Background(), spec, swarm.Target{Transport: swarm.TransportTCP, Addr: net.JoinHostPort(args[0], args[1])}, markObserver{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	fmt.Printf("VolanoMark version = 2.13.4\nMessages sent      = %d\nMessages received  = %d\nTotal messages     = %d\n",
		d.Counts.Sent, d.Counts.Received, d.Counts.Total)
	fmt.Printf("Elapsed time       = %s seconds\n", results.FormatMarkSeconds(d.ElapsedMillis()))
	if !d.Passed {
		fmt.Println("Test failed.")
		return 1
	}
	return 0
}

// markObserver prints Mark's line at the start of the timed phase.
type markObserver struct{}

func (markObserver) Phase(ph swarm.Phase, _ swarm.Progress) {
	if ph == swarm.PhaseTimed {
		fmt.Println("Running the test ...")
	}
}

func (markObserver) Start(context.Context) (time.Time, error) { return time.Time{}, nil }

// serveArgv is a ServeCommand that runs this test binary as a server.
func serveArgv(t *testing.T, ws bool) []string {
	t.Setenv("VOLANOGO_TEST_SERVE", "1")
	argv := []string{os.Args[0], "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0"}
	if ws {
		argv = append(argv, "--ws-listen", "127.0.0.1:0")
	}
	return argv
}

// shardArgv is a ShardCommand that runs this test binary as a shard.
func shardArgv(t *testing.T) []string {
	t.Setenv("VOLANOGO_TEST_SHARD", "1")
	return []string{os.Args[0]}
}

func startServer(t testing.TB, cfg server.Config) *server.Server { return testutil.StartServer(t, cfg) }

func tcpConfig(t testing.TB, addr string) Config {
	host, p, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	port, err := strconv.Atoi(p)
	require.NoError(t, err)
	// volanogo serve keeps each room's order: the project's own tests hold
	// it to that.
	return Config{Host: host, Port: port, Spec: swarm.Spec{StallTimeout: 5 * time.Second, StrictOrder: true}}
}

// recorder is a Sink that keeps what it is given, and the runs' failures
// for the messages of failed assertions.
type recorder struct {
	mu       sync.Mutex
	text     bytes.Buffer
	runs     []RunInfo
	docs     []*results.Document
	stopped  []Step
	progress int
}

func (r *recorder) RunStarting(RunInfo) {}

func (r *recorder) Progress(p func() Progress) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.progress++
	_ = p() // a live view: it can be read
}

func (r *recorder) RunDone(ri RunInfo, d *results.Document) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.runs = append(r.runs, ri)
	r.docs = append(r.docs, d)
	fmt.Fprintf(&r.text, "run %d of %d rooms: passed %v, failures %+v\n", ri.Run, ri.Rooms, d.Passed, d.Failures)
	return nil
}

func (r *recorder) SweepStopped(s Step) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopped = append(r.stopped, s)
}

func (r *recorder) out() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.text.String()
}

func checkGoroutines(t *testing.T) { testutil.CheckGoroutines(t) }

func failureKinds(d *results.Document) []string {
	var k []string
	for _, f := range d.Failures {
		k = append(k, f.Kind)
	}
	return k
}
