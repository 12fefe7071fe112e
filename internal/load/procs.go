package load

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/volanogo/volanogo/internal/results"
)

// The start barrier between a shard process and the process that started
// it (--procs): the shard writes ShardReadyLine on its standard output
// when its set-up is done and waits for a line "start <RFC 3339 time>" on
// its standard input; it starts its timed phase at that time and writes
// ShardEndedLine when the phase is over. End of input before the start
// line fails the shard (another shard failed).
const (
	ShardReadyLine = "volanogo load shard: ready"
	ShardEndedLine = "volanogo load shard: ended"
)

// StdioGate is the Gate of a shard process started by --procs (the
// hidden flag --start-barrier): see ShardReadyLine.
func StdioGate(in io.Reader, out io.Writer) Gate {
	return &stdioGate{in: in, out: out}
}

type stdioGate struct {
	in  io.Reader
	out io.Writer
}

func (g *stdioGate) Ready(ctx context.Context) (time.Time, error) {
	if _, err := fmt.Fprintln(g.out, ShardReadyLine); err != nil {
		return time.Time{}, err
	}
	type answer struct {
		line string
		err  error
	}
	ch := make(chan answer, 1)
	go func() {
		// One line, byte by byte: nothing is read past it.
		var b []byte
		var one [1]byte
		for {
			n, err := g.in.Read(one[:])
			if n == 1 {
				if one[0] == '\n' {
					ch <- answer{line: string(b)}
					return
				}
				b = append(b, one[0])
			}
			if err != nil {
				ch <- answer{err: err}
				return
			}
		}
	}()
	select {
	case a := <-ch:
		if a.err != nil {
			if a.err == io.EOF {
				return time.Time{}, errors.New("no start signal (the run was called off: another shard failed)")
			}
			return time.Time{}, a.err
		}
		v, ok := strings.CutPrefix(strings.TrimSpace(a.line), "start ")
		if !ok {
			return time.Time{}, fmt.Errorf("bad start signal %q", a.line)
		}
		return time.Parse(time.RFC3339Nano, v)
	case <-ctx.Done():
		return time.Time{}, ctx.Err()
	}
}

func (g *stdioGate) Ended() { fmt.Fprintln(g.out, ShardEndedLine) }

// autoProcs is the number of shard processes for rooms rooms of users
// users such that none holds more connections than its open-files limit
// less OpenFilesReserve, in whole rooms.
func autoProcs(rooms, users int) int {
	soft := environment.OpenFilesSoft
	if soft <= 0 || soft-OpenFilesReserve < int64(users) {
		return 1
	}
	per := int((soft - OpenFilesReserve) / int64(users))
	return max(1, (rooms+per-1)/per)
}

// shardProc is one shard process of a run.
type shardProc struct {
	index  int
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	out    *tailBuffer // stdout lines other than the barrier's
	stderr *tailBuffer
	path   string // its result document
	err    error  // how it exited
	ready  bool
	ended  bool
	exited bool
}

type shardEvent struct {
	i    int
	kind int // evReady, evEnded, evExited
	err  error
}

const (
	evReady = iota
	evEnded
	evExited
)

// testHookShardArgv, when set, may change the argv of shard i.
var testHookShardArgv func(i int, argv []string) []string

// runProcs runs one run as Procs shard processes of this program against
// the server at d, reading the server with probe, and merges their
// documents (results.Merge). The shards run with the start barrier
// (StdioGate): when every shard is ready, the start is set a little
// ahead and sent to all. Only this process reads the server: its CPU
// over the timed phase (from the start to the last shard's end, which for
// paced shards is when they have drained, before their users leave) and,
// for churn, the leaks after the run.
func runProcs(ctx context.Context, cfg *Config, spec runSpec, d *dialer, probe serverProbe, progress *progressLine) (*results.Document, error) {
	n := cfg.Procs
	if n == ProcsAuto {
		n = autoProcs(spec.rooms, cfg.Users)
	}
	n = max(1, min(n, spec.rooms))
	if spec.runID == "" {
		spec.runID = newRunID()
	}
	dir, err := os.MkdirTemp("", "volanogo-shards-")
	if err != nil {
		return nil, fmt.Errorf("--procs: %w", err)
	}
	defer os.RemoveAll(dir)
	base := cfg.ShardCommand
	if len(base) == 0 {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("--procs: find this executable: %w", err)
		}
		base = []string{exe, "load"}
	}
	label := cfg.Label
	if label == "" {
		label = defaultLabel(cfg)
	}
	var before serverSample
	if probe != nil {
		before = probe.sample(ctx)
	}
	started := time.Now()

	events := make(chan shardEvent, 3*n)
	procs := make([]*shardProc, n)
	for i := range procs {
		procs[i] = &shardProc{index: i, out: &tailBuffer{}, stderr: &tailBuffer{}, path: filepath.Join(dir, fmt.Sprintf("shard-%d.json", i))}
	}
	env := shardEnv(n)
	var wg sync.WaitGroup
	var startErr error
	for i, p := range procs {
		if startErr != nil {
			p.exited, p.err = true, errors.New("not started")
			continue
		}
		argv := append(append([]string(nil), base...), shardArgs(cfg, spec, i, n, label, d, p.path)...)
		if testHookShardArgv != nil {
			argv = testHookShardArgv(i, argv)
		}
		if startErr = p.start(argv, env, events, &wg); startErr != nil {
			p.exited, p.err = true, startErr
		}
	}
	if startErr != nil {
		for _, p := range procs {
			if p.stdin != nil {
				_ = p.stdin.Close()
			}
		}
	}

	var nReady, nEnded, nExited atomic.Int64
	if progress != nil {
		progress.run(func() string {
			return fmt.Sprintf("%d shard processes: %d set up, %d ended, %d exited", n, nReady.Load(), nEnded.Load(), nExited.Load())
		})
		defer progress.end()
	}
	var (
		srvStart, srvEnd  serverSample
		startAt, srvEndAt time.Time
		startedPhase      bool
		sampledEnd        bool
		calledOff         = startErr != nil
		firstExit         time.Time
		grace             <-chan time.Time
		kill              <-chan time.Time
		done              = ctx.Done()
	)
	live := func() int {
		c := 0
		for _, p := range procs {
			if p.cmd != nil && p.cmd.Process != nil && !p.exited {
				c++
			}
		}
		return c
	}
	signalAll := func(sig os.Signal) {
		for _, p := range procs {
			if p.cmd != nil && p.cmd.Process != nil && !p.exited {
				_ = p.cmd.Process.Signal(sig)
			}
		}
	}
	callOff := func() {
		if calledOff || startedPhase {
			return
		}
		calledOff = true
		for _, p := range procs {
			if p.stdin != nil {
				_ = p.stdin.Close()
			}
		}
	}
	for live() > 0 {
		select {
		case ev := <-events:
			p := procs[ev.i]
			switch ev.kind {
			case evReady:
				p.ready = true
				nReady.Add(1)
				all := true
				for _, q := range procs {
					all = all && q.ready
				}
				if all && !calledOff && !startedPhase {
					startedPhase = true
					startAt = time.Now().Add(100*time.Millisecond + time.Duration(n)*10*time.Millisecond)
					if probe != nil {
						srvStart = probe.sample(ctx)
					}
					line := "start " + startAt.UTC().Format(time.RFC3339Nano) + "\n"
					for _, q := range procs {
						_, _ = io.WriteString(q.stdin, line)
					}
				}
			case evEnded:
				p.ended = true
				nEnded.Add(1)
			case evExited:
				p.exited, p.err = true, ev.err
				nExited.Add(1)
				_ = p.stdin.Close()
				if ev.err != nil {
					callOff()
				}
				if startedPhase && firstExit.IsZero() {
					firstExit = time.Now()
					wait := max(2*cfg.StallTimeout, 30*time.Second, firstExit.Sub(startAt))
					grace = time.After(wait)
				}
			}
			if startedPhase && !sampledEnd {
				all := true
				for _, q := range procs {
					all = all && (q.ended || q.exited)
				}
				if all {
					sampledEnd = true
					if probe != nil {
						srvEnd = probe.sample(context.WithoutCancel(ctx))
						srvEndAt = time.Now()
					}
				}
			}
		case <-done:
			done = nil
			signalAll(os.Interrupt)
			callOff()
			kill = time.After(15 * time.Second)
		case <-grace:
			grace = nil
			for _, p := range procs {
				if !p.exited {
					p.out.Write([]byte(fmt.Sprintf("still running %s after the first shard ended: interrupted\n", time.Since(firstExit).Round(time.Second))))
				}
			}
			signalAll(os.Interrupt)
			kill = time.After(10 * time.Second)
		case <-kill:
			kill = nil
			signalAll(syscall.SIGKILL)
		}
	}
	wg.Wait()

	// Merge what the shards wrote.
	var docs []*results.Document
	var shardFailures []results.Failure
	for _, p := range procs {
		var doc *results.Document
		if p.cmd != nil {
			if d, err := results.ReadFile(p.path); err == nil {
				doc = d
				docs = append(docs, d)
			}
		}
		if p.err == nil && doc != nil {
			continue
		}
		shardFailures = append(shardFailures, results.Failure{Kind: results.FailShard, Count: 1, Example: p.cause(n, doc), At: time.Now()})
	}
	var m *results.Document
	if len(docs) > 0 {
		var err error
		if m, err = results.Merge(docs); err != nil {
			return nil, fmt.Errorf("--procs: %w", err)
		}
	} else {
		m = newDocument(cfg, spec)
		m.Label = label
		m.Started, m.Ended = started, time.Now()
		m.TimedStart, m.TimedEnd = m.Ended, m.Ended
		m.Shards = n
		m.Interrupted = ctx.Err() != nil
	}
	m.CommandLine = cfg.CommandLine
	m.Config.ServerCPUs = spec.cpus
	m.Config.ConnectRate = cfg.ConnectRate
	m.Source = ""
	for _, f := range shardFailures {
		addFailure(m, f)
	}
	if len(shardFailures) > 0 {
		m.Passed, m.Score = false, 0
	}
	if ctx.Err() != nil {
		m.Interrupted, m.Passed, m.Score = true, false, 0
	}
	if probe != nil {
		var after serverSample
		if m.Churn != nil && !m.Interrupted {
			after = settle(context.WithoutCancel(ctx), probe, before)
		} else {
			after = probe.sample(context.WithoutCancel(ctx))
		}
		if !srvEnd.ok {
			srvEnd = after
		}
		// The server's usage over the timed phase, when there was one.
		m.Server = nil
		if startedPhase && srvStart.ok && srvEnd.ok && !srvEndAt.IsZero() {
			m.Server = serverUsage(srvStart, srvEnd, srvEndAt.Sub(startAt).Seconds(), m.Counts.Total)
		}
		if m.Churn != nil && before.ok && after.ok && !m.Interrupted {
			m.Churn.LeakedConnections, m.Churn.LeakedGoroutines, m.Churn.LeakedFDs = 0, 0, 0
			leaks(m.Churn, before, after)
			if m.Server != nil {
				m.Server.Goroutines, m.Server.OpenFDs = after.goroutines, after.openFDs
			}
			if msg := leakFailure(m.Churn); msg != "" {
				addFailure(m, results.Failure{Kind: results.FailLeak, Count: 1, Example: msg, At: time.Now()})
				m.Passed, m.Score = false, 0
			}
		}
		annotateFailures(m.Failures, outOfFiles(before, after))
	}
	if m.Paced != nil {
		broken, reason := brokenReason(m, 0, cfg.SLO)
		m.Paced.Broken, m.Paced.Reason = broken, reason
	}
	if m.Paced != nil || m.Churn != nil {
		m.Score = 0 // Mark's score is for turn-taking
	}
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("--procs: the merged document is invalid: %w", err)
	}
	return m, nil
}

// shardEnv is the environment of the n shard processes of one machine:
// each gets GOMAXPROCS of this process's processors divided among them
// (at least 1), unless the user set GOMAXPROCS. n processes that each
// schedule onto every processor oversubscribe them: on the 2-core
// development machine, two shards at 950 rooms spent 6.3 to 7.3 µs of CPU
// per message with 2 each and 4.7 to 4.9 µs with 1 each. nil: inherit.
func shardEnv(n int) []string {
	if os.Getenv("GOMAXPROCS") != "" {
		return nil
	}
	return append(os.Environ(), "GOMAXPROCS="+strconv.Itoa(max(1, runtime.GOMAXPROCS(0)/n)))
}

// start starts the shard process (env nil: this process's environment)
// and a reader of its standard output.
func (p *shardProc) start(argv, env []string, events chan<- shardEvent, wg *sync.WaitGroup) error {
	p.cmd = exec.Command(argv[0], argv[1:]...)
	p.cmd.Env = env
	p.cmd.Stderr = p.stderr
	var err error
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		return err
	}
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := p.cmd.Start(); err != nil {
		return fmt.Errorf("start shard %d: %w", p.index, err)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 4096), 1<<20)
		for sc.Scan() {
			switch line := sc.Text(); line {
			case ShardReadyLine:
				events <- shardEvent{i: p.index, kind: evReady}
			case ShardEndedLine:
				events <- shardEvent{i: p.index, kind: evEnded}
			default:
				_, _ = p.out.Write([]byte(line + "\n"))
			}
		}
		_, _ = io.Copy(io.Discard, out)
		events <- shardEvent{i: p.index, kind: evExited, err: p.cmd.Wait()}
	}()
	return nil
}

// cause says why a shard failed: its exit and its own first failure (from
// its document), or the end of what it printed.
func (p *shardProc) cause(n int, doc *results.Document) string {
	msg := fmt.Sprintf("shard %d/%d", p.index, n)
	if p.cmd != nil && p.cmd.Process != nil {
		msg += fmt.Sprintf(" (pid %d)", p.cmd.Process.Pid)
	}
	switch {
	case p.err != nil:
		msg += ": " + p.err.Error()
	case doc == nil:
		msg += ": wrote no result document"
	}
	if doc != nil && len(doc.Failures) > 0 {
		f := doc.Failures[0]
		return msg + ": " + f.Kind + ": " + f.Example
	}
	if doc == nil {
		msg += " and no result document"
	}
	if s := lastLines(p.stderr.String(), 2); s != "" {
		return msg + ": " + s
	}
	if s := lastLines(p.out.String(), 2); s != "" {
		return msg + ": " + s
	}
	return msg
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.TrimSpace(strings.Join(lines, " / "))
}

// addFailure adds f to d's failures, into the failure of the same kind if
// there is one (its example then becomes f's: the more precise cause).
func addFailure(d *results.Document, f results.Failure) {
	for i := range d.Failures {
		if d.Failures[i].Kind == f.Kind {
			d.Failures[i].Example = f.Example
			d.Failures[i].Count = max(d.Failures[i].Count, f.Count)
			return
		}
	}
	d.Failures = append(d.Failures, f)
}

// annotateFailures prefixes the examples of connection failures with
// note (what the server said about them), if any.
func annotateFailures(fs []results.Failure, note string) {
	if note == "" {
		return
	}
	for i := range fs {
		switch fs[i].Kind {
		case results.FailRefused, results.FailClosed, results.FailReset, results.FailTimeout, results.FailStall:
			if !strings.HasPrefix(fs[i].Example, note) {
				fs[i].Example = note + ": " + fs[i].Example
			}
		}
	}
}

// shardArgs are the flags of shard i of n: this run's configuration, its
// shard, the start barrier, the server at d and its document at out.
func shardArgs(cfg *Config, spec runSpec, i, n int, label string, d *dialer, out string) []string {
	a := []string{"--quiet", "--file=", "-o", out,
		"--shard", fmt.Sprintf("%d/%d", i, n), "--run-id", spec.runID, "--start-barrier",
		"--runs", "1", "--discard", "0", "--label", label}
	if d.transport == TransportWS {
		a = append(a, "--transport", TransportWS, "--url", d.url)
	} else {
		host, port, _ := net.SplitHostPort(d.addr)
		a = append(a, "--host", host, "--port", port)
	}
	a = append(a,
		"--start", strconv.Itoa(cfg.Start),
		"--rooms", strconv.Itoa(spec.rooms),
		"--users", strconv.Itoa(cfg.Users),
		"--count", strconv.Itoa(cfg.Count),
		"--pause", cfg.Pause.String(),
		"--connect-concurrency", strconv.Itoa(cfg.ConnectConcurrency),
		"--stall-timeout", cfg.StallTimeout.String(),
		"--slo", cfg.SLO.String())
	if cfg.Duration > 0 {
		a = append(a, "--duration", cfg.Duration.String())
	}
	if cfg.ConnectRate > 0 {
		a = append(a, "--connect-rate", strconv.FormatFloat(cfg.ConnectRate/float64(n), 'g', -1, 64))
	}
	if len(cfg.Bind) > 0 {
		a = append(a, "--bind", strings.Join(cfg.Bind, ","))
	}
	if cfg.BatchReads {
		a = append(a, "--batch-reads")
	}
	if cfg.Scenario != "" {
		a = append(a, "--scenario", cfg.Scenario)
	}
	if cfg.Seed != 0 {
		a = append(a, "--seed", strconv.FormatInt(cfg.Seed+int64(i), 10))
	}
	return a
}
