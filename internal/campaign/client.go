package campaign

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/volanogo/volanogo/internal/results"
	"github.com/volanogo/volanogo/internal/swarm"
	"github.com/volanogo/volanogo/internal/sysinfo"
)

// DefaultClientTimeout bounds one run of an external client (Config.ClientCmd):
// the original Mark never gives up on a server that stops answering.
const DefaultClientTimeout = 10 * time.Minute

// markLines is what the campaign reads of a VolanoMark client's output:
// its result lines (protocol sheet §10.5), whether it said the test
// failed, and its last lines for a failure's example.
type markLines struct {
	mu                  sync.Mutex
	sent, received      int64
	hasSent, hasRecv    bool
	elapsedMs           int64
	hasElapsed          bool
	failed              bool
	running             chan struct{} // closed at "Running the test"
	runningAt           time.Time
	onceRunning         sync.Once
	tail                []string
	disconnectedExample string
}

// read reads the client's output line by line until it ends.
func (m *markLines) read(r io.Reader, onRunning func()) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), 1<<20)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		m.mu.Lock()
		m.tail = append(m.tail, line)
		if len(m.tail) > 5 {
			m.tail = m.tail[1:]
		}
		m.mu.Unlock()
		if strings.HasPrefix(line, "Running the test") {
			m.onceRunning.Do(func() {
				m.runningAt = time.Now()
				onRunning()
				close(m.running)
			})
			continue
		}
		m.parse(line)
	}
}

// parse reads one of Mark's result lines.
func (m *markLines) parse(line string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	key, val, ok := strings.Cut(line, "=")
	key, val = strings.TrimSpace(key), strings.TrimSpace(val)
	switch {
	case line == "Test failed.":
		m.failed = true
	case strings.HasSuffix(line, "disconnected from server.") && m.disconnectedExample == "":
		m.disconnectedExample = line
	case !ok:
		if strings.HasPrefix(line, "Elapsed time") && strings.Contains(line, "< 1 second") {
			m.elapsedMs, m.hasElapsed = 0, true
		}
	case key == "Messages sent":
		m.sent, _ = strconv.ParseInt(val, 10, 64)
		m.hasSent = true
	case key == "Messages received":
		m.received, _ = strconv.ParseInt(val, 10, 64)
		m.hasRecv = true
	case key == "Elapsed time":
		secs, err := strconv.ParseFloat(strings.Fields(val + " x")[0], 64)
		if err == nil {
			m.elapsedMs, m.hasElapsed = int64(secs*1000+0.5), true
		}
	}
}

// runClient runs one run with an external VolanoMark client (ClientCmd)
// against the server at target: it reads the client's result lines, the
// client's CPU (from /proc when its timed phase starts, from its resource
// usage when it exits) and the server's around the client's timed phase,
// which begins at Mark's "Running the test" and ends with its results.
func runClient(ctx context.Context, cfg *Config, spec runSpec, target swarm.Target, probe serverProbe) (*results.Document, error) {
	host, port, err := net.SplitHostPort(target.Addr)
	if err != nil {
		return nil, fmt.Errorf("--client-cmd: %w", err)
	}
	s := &cfg.Spec
	line := cfg.ClientCmd
	for _, r := range [][2]string{{"{host}", host}, {"{port}", port}, {"{rooms}", strconv.Itoa(spec.rooms)},
		{"{users}", strconv.Itoa(s.Users)}, {"{count}", strconv.Itoa(s.Count)}, {"{start}", strconv.Itoa(cfg.Start)}} {
		line = strings.ReplaceAll(line, r[0], r[1])
	}
	argv := []string{"/bin/sh", "-c", "exec " + line}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = childAttr()
	stderr := &tailBuffer{}
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	doc := &results.Document{Started: time.Now()}
	var before serverSample
	if probe != nil {
		before = probe.sample(ctx)
	}
	var w timedWindow
	var clientAtStart float64
	m := &markLines{running: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("--client-cmd: start %q: %w", line, err)
	}
	pid := cmd.Process.Pid
	read := make(chan struct{})
	go func() {
		defer close(read)
		m.read(out, func() {
			w.startAt = time.Now()
			if st, err := sysinfo.ReadProc(pid); err == nil {
				clientAtStart = st.CPUSeconds()
			}
			if probe != nil {
				w.start = probe.sample(ctx)
			}
		})
	}()
	waited := make(chan error, 1)
	go func() {
		<-read
		waited <- cmd.Wait()
	}()
	timeout := cfg.ClientTimeout
	if timeout <= 0 {
		timeout = DefaultClientTimeout
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var waitErr error
	interrupted, timedOut := false, false
	select {
	case waitErr = <-waited:
	case <-ctx.Done():
		interrupted = true
		_ = cmd.Process.Signal(syscall.SIGTERM)
		waitErr = <-waited
	case <-timer.C:
		timedOut = true
		_ = cmd.Process.Kill()
		waitErr = <-waited
	}
	end := time.Now()
	w.endAt = end
	if probe != nil {
		w.end = probe.sample(context.WithoutCancel(ctx))
	}
	doc.Ended = end
	doc.Interrupted = interrupted
	doc.SetupSeconds = 0
	doc.TimedStart, doc.TimedEnd = end, end
	if !m.runningAt.IsZero() {
		doc.TimedStart = m.runningAt
		doc.SetupSeconds = m.runningAt.Sub(doc.Started).Seconds()
	}
	m.mu.Lock()
	doc.Counts = results.Counts{Sent: m.sent, Received: m.received}
	if s.Count > 0 {
		doc.Counts.ExpectedSent = int64(spec.rooms) * int64(s.Users) * int64(s.Count)
		doc.Counts.ExpectedTotal = doc.Counts.ExpectedSent * int64(s.Users)
	}
	doc.ElapsedSeconds = float64(m.elapsedMs) / 1000
	var fs results.FailureSet
	switch {
	case timedOut:
		fs.Add(results.FailTimeout, fmt.Sprintf("the client %q did not end within %s", line, timeout), end)
	case interrupted:
	case m.failed || waitErr != nil:
		example := fmt.Sprintf("the client %q failed", line)
		if waitErr != nil {
			example += " (" + waitErr.Error() + ")"
		}
		if m.disconnectedExample != "" {
			example += ": " + m.disconnectedExample
		} else if t := strings.Join(m.tail, " / "); t != "" {
			example += ": " + t
		}
		if s := stderr.String(); s != "" {
			example += "; stderr: " + lastLines(s, 2)
		}
		fs.Add(results.FailOther, example, end)
	case !m.hasSent || !m.hasRecv || !m.hasElapsed:
		fs.Add(results.FailProtocol, fmt.Sprintf("the client %q printed no VolanoMark result lines: %s", line, strings.Join(m.tail, " / ")), end)
	case doc.Counts.ExpectedSent > 0 && (doc.Counts.Sent != doc.Counts.ExpectedSent || doc.Counts.Received != doc.Counts.ExpectedSent*int64(s.Users-1)):
		fs.Add(results.FailIntegrity, fmt.Sprintf("totals: sent %d (expected %d), received %d (expected %d)",
			doc.Counts.Sent, doc.Counts.ExpectedSent, doc.Counts.Received, doc.Counts.ExpectedSent*int64(s.Users-1)), end)
	}
	m.mu.Unlock()
	if st := cmd.ProcessState; st != nil {
		// /proc gave the client's CPU when its timed phase began, not how
		// it was split between user and system time: the split is the
		// whole run's, applied to the timed phase.
		user, sys := st.UserTime().Seconds(), st.SystemTime().Seconds()
		if total := user + sys; total > 0 {
			timed := max(0, total-clientAtStart)
			doc.Client = results.Usage{CPUUserSeconds: timed * user / total, CPUSystemSeconds: timed * sys / total,
				PeakRSSBytes: peakRSS(st)}
		}
	}
	doc.Failures = fs.List()
	doc.Connections = results.Connections{}
	cfg.identify(doc, spec, target)
	doc.Config.ClientCommand = argv
	doc.Config.ClientEngine = "" // not volanogo's swarm
	cfg.finish(ctx, doc, probe, before, w)
	return doc, nil
}
