package campaign

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/volanogo/volanogo/internal/broker"
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
	// version is the version the server said (volanogo_server_info) and
	// env its machine (volanogo_server_environment_info), when it said.
	version string
	env     *results.Environment
	// reasons counts the server's closes, refusals and accept errors so
	// far, by "what:reason" (see serverAccount).
	reasons map[string]float64
	// gc is the server's GC pause histogram so far (hasGC: it has one).
	gc      []metrics.Bucket
	gcCount float64
	hasGC   bool
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
			out.engine, out.version = e, x.Labels["version"]
			break
		}
	}
	for _, x := range s["volanogo_server_environment_info"] {
		env := results.EnvironmentFromInfo(x.Labels)
		out.env = &env
		break
	}
	out.reasons = map[string]float64{}
	for _, m := range []struct{ name, what, label string }{
		{"volanogo_connections_closed_total", "closed", "reason"},
		{"volanogo_connections_refused_total", "refused", "reason"},
		{"volanogo_requests_refused_total", "request", "reason"},
		{"volanogo_accept_errors_total", "accept", "kind"},
	} {
		for _, x := range s[m.name] {
			out.reasons[m.what+":"+x.Labels[m.label]] += x.Value
		}
	}
	out.gc, out.gcCount, out.hasGC = s.Histogram("volanogo_gc_pause_seconds")
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
	if a.hasGC && b.hasGC {
		d, n := metrics.HistogramDelta(a.gc, b.gc, a.gcCount, b.gcCount)
		u.GCPauses = int64(n)
		if p, ok := metrics.Quantile(d, n, 0.99); ok && !math.IsInf(p, 1) {
			u.GCPauseP99Seconds = p
		}
		if m, ok := metrics.Max(d, n); ok && !math.IsInf(m, 1) {
			u.GCPauseMaxSeconds = m
		}
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
	// confDir holds a broker's configuration file ({conf}), removed when
	// the server is stopped.
	confDir string
}

// brokerConf writes the configuration of the broker program that line
// runs, when line has {conf}, and puts the file's name in its place.
func brokerConf(line string, port int) (string, string, error) {
	f := strings.Fields(line)
	if !strings.Contains(line, "{conf}") || len(f) == 0 {
		return line, "", nil
	}
	b, ok := broker.LookupServer(filepath.Base(f[0]))
	if !ok || b.Conf == "" {
		return "", "", fmt.Errorf("server command %q: {conf} is the configuration of a broker program volanogo knows (%s)", line, strings.Join(broker.ServerNames(), ", "))
	}
	dir, err := os.MkdirTemp("", "volanogo-"+b.Name+"-")
	if err != nil {
		return "", "", err
	}
	conf, err := b.WriteConf(dir, port)
	if err != nil {
		os.RemoveAll(dir)
		return "", "", err
	}
	return strings.ReplaceAll(line, "{conf}", conf), dir, nil
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
	line, confDir, err := brokerConf(line, port)
	if err != nil {
		return nil, err
	}
	s := &spawned{argv: []string{"/bin/sh", "-c", "exec " + line}, stderr: &tailBuffer{}, exited: make(chan struct{}),
		recorded: []string{"/bin/sh", "-c", "exec " + command}}
	s.confDir = confDir
	s.cmd = exec.Command(s.argv[0], s.argv[1:]...)
	s.cmd.SysProcAttr = childAttr()
	s.ready = &readyWatch{tail: s.stderr, seenC: make(chan struct{})}
	s.cmd.Stdout = s.ready
	s.cmd.Stderr = s.stderr
	if err := startPinned(s.cmd, cpus); err != nil {
		os.RemoveAll(confDir)
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
			s.stop()
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
	if s.confDir != "" {
		defer os.RemoveAll(s.confDir)
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

// serverAccount is the server's own account of a run, from two samples:
// the connections it refused and closed, the accepts that failed and the
// requests it refused in between, by reason as it counts them (its
// clients' own closes and the resets that follow them left out), and
// whether it ran out of descriptors; "" when it says nothing.
func serverAccount(a, b serverSample) string {
	if !b.ok {
		return ""
	}
	var parts []string
	for _, w := range []struct{ what, one, many string }{
		{"refused", "connection refused", "connections refused"},
		{"accept", "accept failed", "accepts failed"},
		{"closed", "connection closed", "connections closed"},
		{"request", "request refused", "requests refused"},
	} {
		type rc struct {
			reason string
			n      int64
		}
		var rcs []rc
		for k, v := range b.reasons {
			what, reason, _ := strings.Cut(k, ":")
			if what != w.what || quietClose[k] {
				continue
			}
			if n := int64(v - a.reasons[k]); n > 0 {
				rcs = append(rcs, rc{reason, n})
			}
		}
		slices.SortFunc(rcs, func(x, y rc) int { return cmp.Or(cmp.Compare(y.n, x.n), cmp.Compare(x.reason, y.reason)) })
		for _, r := range rcs {
			text := w.many
			if r.n == 1 {
				text = w.one
			}
			parts = append(parts, fmt.Sprintf("%d %s (%s)", r.n, text, r.reason))
		}
	}
	if b.maxFDs > 0 && b.openFDs >= b.maxFDs-2 {
		parts = append(parts, fmt.Sprintf("out of open files: %d open, its open-files limit is %d", b.openFDs, b.maxFDs))
	} else if b.maxFDs > 0 && b.refusedOpenFiles > a.refusedOpenFiles {
		parts = append(parts, fmt.Sprintf("its open-files limit is %d", b.maxFDs))
	}
	return strings.Join(parts, "; ")
}

// quietClose are the closes that follow from what the client did (it
// closed, or it reset its connections when it gave up) rather than say
// why a run failed.
var quietClose = map[string]bool{"closed:eof": true, "closed:read_error": true, "closed:write_error": true}

// serverCaused reports whether a failure of kind may have its cause in
// the server (the client's own limits and bookkeeping may not).
func serverCaused(kind string) bool {
	switch kind {
	case results.FailOpenFiles, results.FailNoSourcePort, results.FailShard, results.FailServerStart, results.FailLeak:
		return false
	}
	return true
}

// explainFailures gives every failure the server may have caused the
// server's account of it, when it has none yet.
func explainFailures(fs []results.Failure, account string) {
	if account == "" {
		return
	}
	for i := range fs {
		if fs[i].Server == "" && serverCaused(fs[i].Kind) {
			fs[i].Server = account
		}
	}
}

// maxErrorLines and maxErrorLine bound what a footnote quotes of a
// spawned server's output.
const maxErrorLines, maxErrorLine = 3, 200

// errorLines are the last lines of a spawned server's output that look
// like errors (an exception, "error", "fatal", a refusal, a level above
// info), each clipped and escaped so that a footnote can quote them: ""
// when there are none.
func errorLines(out string) string {
	var keep []string
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || !errorLine.MatchString(line) {
			continue
		}
		keep = append(keep, clipLine(line))
		if len(keep) > maxErrorLines {
			keep = keep[1:]
		}
	}
	return strings.Join(keep, " / ")
}

var errorLine = regexp.MustCompile(`(?i)(error|exception|fatal|panic|refus|too many|denied|cannot|failed|level=warn|killed|out of memory)`)

// clipLine escapes what a terminal or a page would interpret (control
// characters, escape sequences) and clips the line to maxErrorLine
// runes.
func clipLine(s string) string {
	var b strings.Builder
	n := 0
	for _, r := range s {
		if n >= maxErrorLine {
			b.WriteString("…")
			break
		}
		switch {
		case r == utf8.RuneError || unicode.IsControl(r):
			fmt.Fprintf(&b, "\\x%02x", r)
		default:
			b.WriteRune(r)
		}
		n++
	}
	return b.String()
}

// account is what a spawned server says of a failed run: the error lines
// of its output, and its exit status if it exited; "" when nothing.
func (s *spawned) account() string {
	if s == nil {
		return ""
	}
	text := errorLines(s.stderr.String())
	select {
	case <-s.exited:
		st := "it exited"
		if ps := s.cmd.ProcessState; ps != nil {
			st += " (" + ps.String() + ")"
		}
		if text != "" {
			st += ": " + text
		}
		return st
	default:
	}
	return text
}

// identityOf completes si (nil: a new one) with what the samples say of
// the server: a server with volanogo_server_info is `volanogo serve` of
// that version and engine, and its environment is its own machine's.
// It returns nil when nothing is known.
func identityOf(si *results.ServerInfo, samples ...serverSample) *results.ServerInfo {
	out := &results.ServerInfo{}
	if si != nil {
		c := *si
		out = &c
	}
	for _, s := range samples {
		if !s.ok {
			continue
		}
		if s.engine != "" {
			// The server says it is volanogo serve, whatever the
			// command that started it is called, unless a label says.
			if out.Labels["product"] == "" {
				out.Product = productServe
			}
			out.Engine = cmp.Or(out.Labels["engine"], s.engine)
			out.Version = cmp.Or(out.Labels["version"], s.version)
		}
		if out.Environment == nil && s.env != nil {
			env := *s.env
			out.Environment = &env
		}
	}
	if out.Name() == "" && out.Environment == nil {
		return nil
	}
	return out
}

// productServe is ServerInfo.Product of `volanogo serve`.
const productServe = "volanogo serve"

// commandIdentity is what a server's command line says of it: the
// program ("volanogo serve", "java COM.volano.Main", "nats-server") and
// its flags, less those that name its addresses (they change from run to
// run). argv is the command as the user gave it, {port} unreplaced.
func commandIdentity(argv []string) *results.ServerInfo {
	if len(argv) == 0 {
		return nil
	}
	prog := filepath.Base(argv[0])
	rest := argv[1:]
	switch {
	case strings.HasPrefix(prog, "volanogo") && len(rest) > 0 && rest[0] == "serve":
		prog, rest = productServe, rest[1:]
	case prog == "java":
		// The class (or -jar file) names the server; the options before
		// it are the JVM's, which matter as much as the server's.
		for i := 0; i < len(rest); i++ {
			a := rest[i]
			if (a == "-cp" || a == "-classpath" || a == "--class-path") && i+1 < len(rest) {
				i++
				continue
			}
			if a == "-jar" && i+1 < len(rest) {
				prog += " -jar " + filepath.Base(rest[i+1])
				rest = append(slices.Clone(rest[:i]), rest[i+2:]...)
				break
			}
			if !strings.HasPrefix(a, "-") {
				prog += " " + a
				rest = append(slices.Clone(rest[:i]), rest[i+1:]...)
				break
			}
		}
	}
	si := &results.ServerInfo{Product: prog}
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if strings.Contains(a, "{port}") {
			continue
		}
		if addressFlag(a) {
			if !strings.Contains(a, "=") && i+1 < len(rest) && !strings.HasPrefix(rest[i+1], "-") {
				i++
			}
			continue
		}
		si.Flags = append(si.Flags, a)
	}
	return si
}

// addressFlag reports whether a names an address or port option
// (--listen, -p, --port, --bind, --metrics-listen, ...).
func addressFlag(a string) bool {
	if !strings.HasPrefix(a, "-") {
		return false
	}
	name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
	name = strings.ToLower(name)
	return name == "p" || strings.Contains(name, "listen") || strings.Contains(name, "port") ||
		strings.Contains(name, "bind") || strings.Contains(name, "addr") || name == "host"
}
