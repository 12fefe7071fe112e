package campaign

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/volanogo/volanogo/internal/handshake"
	"github.com/volanogo/volanogo/internal/metrics"
	"github.com/volanogo/volanogo/internal/results"
	"github.com/volanogo/volanogo/internal/sysinfo"
)

// serverSample is the server's state at one moment.
type serverSample struct {
	ok                        bool
	source                    string
	cpu                       float64
	rss                       int64
	open, goroutines, openFDs int64
	gomaxprocs                int
	hasOpen                   bool
	// engine is the engine the server said it uses
	// (volanogo_server_info), "" when it did not say.
	engine string
	// coalesce is the server's coalescing window in seconds
	// (volanogo_server_coalesce_seconds), 0 when it did not say.
	coalesce float64
	// Out of descriptors: connections refused at accept for lack of
	// descriptors, and the limit (0: unknown).
	refusedOpenFiles, maxFDs int64
	// err is why the sample could not be taken (ok is then false).
	err error
}

// serverProbe reads the server's CPU time and memory.
type serverProbe interface {
	sample(ctx context.Context) serverSample
}

// metricsProbe scrapes a Prometheus endpoint.
type metricsProbe struct{ url string }

// scrapeClient reads servers' metrics over at most one connection per
// server, kept open: the server's connections, goroutines and descriptors
// then count the scraper's always the same, and a leak check (churn, storm)
// cannot mistake a second connection of the scraper for a leak (the shared
// pool opens one when a scrape starts before the previous one's connection
// is back in it).
var scrapeClient = &http.Client{
	Timeout:   5 * time.Second,
	Transport: &http.Transport{MaxConnsPerHost: 1, MaxIdleConnsPerHost: 1, IdleConnTimeout: 10 * time.Minute},
}

func (p metricsProbe) sample(ctx context.Context) serverSample {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	s, err := metrics.Scrape(ctx, scrapeClient, p.url)
	if err != nil {
		return serverSample{err: err}
	}
	cpu, ok := s.Get("process_cpu_seconds_total")
	if !ok {
		return serverSample{err: fmt.Errorf("%s has no process_cpu_seconds_total", p.url)}
	}
	out := serverSample{ok: true, source: "metrics", cpu: cpu}
	if v, ok := s.Get("process_resident_memory_bytes"); ok {
		out.rss = int64(v)
	}
	if v, ok := s.Get("volanogo_connections_open"); ok {
		out.open, out.hasOpen = int64(v), true
	}
	if v, ok := s.Get("go_goroutines"); ok {
		out.goroutines = int64(v)
	}
	if v, ok := s.Get("process_open_fds"); ok {
		out.openFDs = int64(v)
	}
	if v, ok := s.Get("go_sched_gomaxprocs_threads"); ok {
		out.gomaxprocs = int(v)
	}
	if v, ok := s.Get("process_max_fds"); ok {
		out.maxFDs = int64(v)
	}
	for _, x := range s["volanogo_server_info"] {
		if e := x.Labels["engine"]; e != "" {
			out.engine = e
			break
		}
	}
	if v, ok := s.Get("volanogo_server_coalesce_seconds"); ok {
		out.coalesce = v
	}
	if v, ok := s.Sum("volanogo_connections_refused_total", "reason", "open_files"); ok {
		out.refusedOpenFiles = int64(v)
	}
	return out
}

// procProbe reads /proc/<pid>.
type procProbe struct{ pid int }

func (p procProbe) sample(context.Context) serverSample {
	st, err := sysinfo.ReadProc(p.pid)
	if err != nil {
		return serverSample{err: err}
	}
	return serverSample{ok: true, source: "proc", cpu: st.CPUSeconds(), rss: st.RSSBytes, openFDs: int64(max(st.FDs, 0)), maxFDs: st.MaxFDs}
}

func serverUsage(a, b serverSample, elapsed float64, total int64) *results.ServerUsage {
	u := &results.ServerUsage{
		Source:        a.source,
		CPUSeconds:    max(0, b.cpu-a.cpu),
		RSSStartBytes: a.rss,
		RSSEndBytes:   b.rss,
		Goroutines:    b.goroutines,
		OpenFDs:       b.openFDs,
		GOMAXPROCS:    b.gomaxprocs,
		Engine:        cmp.Or(b.engine, a.engine),
		// (One server, one value: the later sample's, or the earlier's.)
		CoalesceSeconds: cmp.Or(b.coalesce, a.coalesce),
	}
	if b.hasOpen {
		u.OpenConnections = b.open
	}
	if elapsed > 0 {
		u.CPUPercent = u.CPUSeconds / elapsed * 100
	}
	u.CPUPerMessageMicros = results.CPUPerMessage(u.CPUSeconds, total)
	return u
}

// spawned is a server the client started for one run.
type spawned struct {
	cmd  *exec.Cmd
	argv []string
	// recorded is the command the documents record: argv, but a server
	// command's with {port} unreplaced (Config.Port says the port), so
	// that the runs of one command are one server (report --by server).
	recorded []string
	chat     string // host:port
	ws       string
	metrics  string
	stderr   *tailBuffer
	exited   chan struct{}
	// ready watches the standard output of a server command for the
	// ready line of a `volanogo serve` (nil for --serve, read at start).
	ready *readyWatch
}

// readyWatch passes a server command's output to its tail, watching it
// for the ready line `volanogo serve` prints, whose metrics address the
// campaign then scrapes.
type readyWatch struct {
	tail *tailBuffer
	mu   sync.Mutex
	line []byte // the current line, while no ready line was seen
	hs   handshake.Serve
	seen bool
	// seenC is closed when the ready line is seen.
	seenC chan struct{}
}

func (r *readyWatch) Write(p []byte) (int, error) {
	r.mu.Lock()
	for rest := p; !r.seen && len(rest) > 0; {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			if len(r.line) < 4096 {
				r.line = append(r.line, rest...)
			}
			break
		}
		r.line = append(r.line, rest[:i]...)
		r.hs, r.seen = handshake.ParseServe(string(r.line))
		if r.seen {
			close(r.seenC)
		}
		r.line, rest = r.line[:0], rest[i+1:]
	}
	r.mu.Unlock()
	return r.tail.Write(p)
}

// metrics is the metrics address of the ready line, "" before one or
// without one.
func (r *readyWatch) metrics() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.hs.Metrics
}

// lateProbe reads a spawned server command: through its metrics when it
// printed the ready line of a `volanogo serve` with a metrics address by
// the first sample (it prints it once listening, before any run starts),
// from /proc otherwise. The choice is made once, so that every sample of
// a run comes from one source.
type lateProbe struct {
	srv    *spawned
	once   sync.Once
	chosen serverProbe
}

func (p *lateProbe) sample(ctx context.Context) serverSample {
	p.once.Do(func() {
		p.chosen = procProbe{pid: p.srv.pid()}
		if m := p.srv.ready.metrics(); m != "" {
			p.chosen = metricsProbe{url: "http://" + m + "/metrics"}
		}
	})
	return p.chosen.sample(ctx)
}

// tailBuffer keeps the last bytes written to it (a server's stderr, for
// error messages).
type tailBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > 4096 {
		t.b = append(t.b[:0], t.b[len(t.b)-4096:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.b))
}

// startServe starts `volanogo serve` (argv) and waits for its ready line.
// With cpus > 0 it runs on that many processors with GOMAXPROCS=cpus.
func startServe(ctx context.Context, argv []string, cpus int) (*spawned, error) {
	s := &spawned{argv: argv, stderr: &tailBuffer{}, exited: make(chan struct{})}
	s.cmd = exec.Command(argv[0], argv[1:]...)
	s.cmd.SysProcAttr = childAttr()
	s.cmd.Stderr = s.stderr
	if cpus > 0 {
		s.cmd.Env = append(os.Environ(), "GOMAXPROCS="+strconv.Itoa(cpus))
	}
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := startPinned(s.cmd, cpus); err != nil {
		return nil, fmt.Errorf("start server %q: %w", argv[0], err)
	}
	ready := make(chan handshake.Serve, 1)
	go func() {
		sc := bufio.NewScanner(out)
		sent := false
		for sc.Scan() {
			if hs, ok := handshake.ParseServe(sc.Text()); ok && !sent {
				ready <- hs
				sent = true
			}
		}
		_, _ = io.Copy(io.Discard, out)
		if !sent {
			close(ready)
		}
	}()
	go func() { _ = s.cmd.Wait(); close(s.exited) }()
	timer := time.NewTimer(15 * time.Second)
	defer timer.Stop()
	select {
	case hs, ok := <-ready:
		if !ok {
			<-s.exited
			return nil, fmt.Errorf("server %q exited before it was ready: %s", argv[0], s.stderr)
		}
		s.chat, s.ws, s.metrics = hs.Chat, hs.WS, hs.Metrics
		return s, nil
	case <-timer.C:
		s.stop()
		return nil, fmt.Errorf("server %q not ready after 15s: %s", argv[0], s.stderr)
	case <-ctx.Done():
		s.stop()
		return nil, ctx.Err()
	}
}

// startServerCmd runs a shell command with {port} replaced by a free
// loopback port, and waits until the port accepts connections.
// With cpus > 0 it runs on that many processors.
func startServerCmd(ctx context.Context, command string, cpus int) (*spawned, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	line := strings.ReplaceAll(command, "{port}", strconv.Itoa(port))
	s := &spawned{argv: []string{"/bin/sh", "-c", "exec " + line}, stderr: &tailBuffer{}, exited: make(chan struct{}),
		recorded: []string{"/bin/sh", "-c", "exec " + command}}
	s.cmd = exec.Command(s.argv[0], s.argv[1:]...)
	s.cmd.SysProcAttr = childAttr()
	s.ready = &readyWatch{tail: s.stderr, seenC: make(chan struct{})}
	s.cmd.Stdout = s.ready
	s.cmd.Stderr = s.stderr
	if err := startPinned(s.cmd, cpus); err != nil {
		return nil, fmt.Errorf("start server: %w", err)
	}
	go func() { _ = s.cmd.Wait(); close(s.exited) }()
	s.chat = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", s.chat, time.Second)
		if err == nil {
			c.Close()
			// A `volanogo serve` prints its ready line (its metrics
			// address) as soon as all its listeners are open, just
			// after the chat port: give it a moment, so that the run
			// reads its metrics. Other servers print none.
			select {
			case <-s.ready.seenC:
			case <-time.After(readyGrace):
			}
			return s, nil
		}
		select {
		case <-s.exited:
			return nil, fmt.Errorf("server command %q exited before listening on %d: %s", line, port, s.stderr)
		case <-ctx.Done():
			s.stop()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("server command %q not listening on port %d after 30s", line, port)
		}
	}
}

// readyGrace is how long a server command whose chat port accepts is
// given to print the ready line of a `volanogo serve`.
const readyGrace = 200 * time.Millisecond

// startPinned starts cmd on the first cpus processors (0: anywhere).
func startPinned(cmd *exec.Cmd, cpus int) error {
	return sysinfo.StartPinned(cpus, func() (int, error) {
		if err := cmd.Start(); err != nil {
			return 0, err
		}
		return cmd.Process.Pid, nil
	})
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// stop sends SIGTERM, and SIGKILL after five seconds, and waits.
func (s *spawned) stop() {
	if s == nil || s.cmd.Process == nil {
		return
	}
	select {
	case <-s.exited:
		return
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(5 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
}

func (s *spawned) pid() int { return s.cmd.Process.Pid }

// outOfFiles says whether the server ran out of descriptors between two
// samples, and how: "" when it did not or it is unknown.
func outOfFiles(a, b serverSample) string {
	if !b.ok {
		return ""
	}
	refused := b.refusedOpenFiles
	if a.ok {
		refused -= a.refusedOpenFiles
	}
	full := b.maxFDs > 0 && b.openFDs >= b.maxFDs-2
	if refused <= 0 && !full {
		return ""
	}
	msg := "the server ran out of open files (accept: too many open files"
	if refused > 0 {
		msg += fmt.Sprintf("; %d connections refused", refused)
	}
	if b.maxFDs > 0 {
		msg += fmt.Sprintf("; its open-files limit is %d", b.maxFDs)
	}
	return msg + ")"
}
