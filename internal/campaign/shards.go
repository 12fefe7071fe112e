package campaign

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/volanogo/volanogo/internal/handshake"
	"github.com/volanogo/volanogo/internal/results"
	"github.com/volanogo/volanogo/internal/swarm"
)

// ShardSpec is what a shard process runs: its part of one run, against
// the run's server. The parent writes it, as JSON, on the first line of
// the shard's standard input (see handshake).
type ShardSpec struct {
	// RunID is the run's; Index of Count is which shard of it this is.
	RunID  string       `json:"run_id"`
	Index  int          `json:"index"`
	Count  int          `json:"count"`
	Spec   swarm.Spec   `json:"spec"`
	Target swarm.Target `json:"target"`
}

// maxShardLine bounds one line from a shard: its document, whose
// histograms and timeline are bounded (results.Validate).
const maxShardLine = 64 << 20

// autoProcs is the number of shard processes for rooms rooms of users
// users such that none holds more connections than its open-files limit
// less OpenFilesReserve, in whole rooms.
func autoProcs(rooms, users int) int {
	soft := Environment().OpenFilesSoft
	if soft <= 0 || soft-OpenFilesReserve < int64(users) {
		return 1
	}
	per := int((soft - OpenFilesReserve) / int64(users))
	return max(1, (rooms+per-1)/per)
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

// shardProc is one shard process of a run.
type shardProc struct {
	index  int
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *tailBuffer
	out    *tailBuffer // what it wrote that is not the protocol's
	doc    *results.Document
	docErr error

	mu       sync.Mutex
	progress swarm.Snapshot

	err                  error // how it exited
	ready, ended, exited bool
}

type shardEvent struct {
	i    int
	kind handshake.ShardLine
	err  error // LineOther: the process exited with err
}

// shardGroup is the shard processes of one run, behind one start
// barrier: when every shard is set up, the start is set a little ahead
// and sent to all.
type shardGroup struct {
	cfg    *Config
	spec   runSpec
	probe  serverProbe
	procs  []*shardProc
	events chan shardEvent
	wg     sync.WaitGroup

	started        bool // the start was sent
	calledOff      bool // the shards' inputs were closed before the start
	timed          timedWindow
	sampledEnd     bool
	firstExit      time.Time
	grace, killing <-chan time.Time
}

// runShards runs one run as n shard processes of this program (n may be
// ProcsAuto) against the server at target, reading the server with probe,
// and merges their documents (results.Merge). Only this process reads the
// server: over the timed phase from the start it sent to the last shard's
// end (for paced shards, when they have drained, before their users
// leave) and, for churn, the leaks after the run.
func runShards(ctx context.Context, cfg *Config, n int, spec runSpec, target swarm.Target, probe serverProbe, sink Sink) (*results.Document, error) {
	if n == ProcsAuto {
		n = autoProcs(spec.rooms, cfg.Spec.Users)
	}
	n = max(1, min(n, spec.rooms))
	if spec.runID == "" {
		spec.runID = newRunID()
	}
	argv := cfg.ShardCommand
	if len(argv) == 0 {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("--procs: find this executable: %w", err)
		}
		argv = []string{exe, "shard"}
	}
	g := &shardGroup{cfg: cfg, spec: spec, probe: probe, events: make(chan shardEvent, 8*n)}
	before := cfg.before(ctx, probe)
	started := time.Now()
	env := shardEnv(n)
	for i := 0; i < n; i++ {
		p := &shardProc{index: i, stderr: &tailBuffer{}, out: &tailBuffer{}}
		g.procs = append(g.procs, p)
		s := cfg.Spec
		s.Rooms = ShardRooms(cfg.Start, spec.rooms, i, n)
		s.ConnectRate = cfg.Spec.ConnectRate / float64(n)
		if s.Seed != 0 {
			s.Seed += int64(i)
		}
		if err := g.start(p, argv, env, ShardSpec{RunID: spec.runID, Index: i, Count: n, Spec: s, Target: target}); err != nil {
			p.exited, p.err = true, err
			g.callOff()
			break
		}
	}
	sink.Progress(g.snapshot)
	g.wait(ctx)
	g.wg.Wait()
	return g.merge(ctx, target, probe, before, started)
}

// start starts shard p with spec on its standard input, and a reader of
// its standard output.
func (g *shardGroup) start(p *shardProc, argv, env []string, spec ShardSpec) error {
	line, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	p.cmd = exec.Command(argv[0], argv[1:]...)
	p.cmd.Env = env
	p.cmd.Stderr = p.stderr
	p.cmd.SysProcAttr = childAttr()
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
	if _, err := p.stdin.Write(append(line, '\n')); err != nil {
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
		return fmt.Errorf("shard %d: send its spec: %w", p.index, err)
	}
	g.wg.Add(1)
	go g.read(p, out)
	return nil
}

// read reads shard p's standard output until it exits.
func (g *shardGroup) read(p *shardProc, out io.Reader) {
	defer g.wg.Done()
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), maxShardLine)
	for sc.Scan() {
		kind, payload := handshake.ParseShardLine(sc.Text())
		switch kind {
		case handshake.LineReady, handshake.LineEnded:
			g.events <- shardEvent{i: p.index, kind: kind}
		case handshake.LineProgress:
			var s swarm.Snapshot
			if json.Unmarshal([]byte(payload), &s) == nil {
				p.mu.Lock()
				p.progress = s
				p.mu.Unlock()
			}
		case handshake.LineDocument:
			d, err := results.Read(strings.NewReader(payload), fmt.Sprintf("shard %d", p.index))
			p.mu.Lock()
			p.doc, p.docErr = d, err
			p.mu.Unlock()
		default:
			_, _ = p.out.Write([]byte(payload + "\n"))
		}
	}
	if err := sc.Err(); err != nil {
		_, _ = p.out.Write([]byte("reading its output: " + err.Error() + "\n"))
	}
	_, _ = io.Copy(io.Discard, out)
	g.events <- shardEvent{i: p.index, kind: handshake.LineOther, err: p.cmd.Wait()}
}

// snapshot is the run's progress: the shards' snapshots summed.
func (g *shardGroup) snapshot() Progress {
	pr := Progress{Shards: len(g.procs)}
	for _, p := range g.procs {
		p.mu.Lock()
		s := p.progress
		p.mu.Unlock()
		pr.Phase = max(pr.Phase, s.Phase)
		pr.Rooms += s.Rooms
		pr.RoomsReady += s.RoomsReady
		pr.Open += s.Open
		pr.Sent += s.Sent
		pr.Received += s.Received
		pr.Expected += s.Expected
		if s.Phase >= swarm.PhaseTimed {
			pr.ShardsReady++
		}
		if s.Phase >= swarm.PhaseEnded {
			pr.ShardsEnded++
		}
	}
	return pr
}

func (g *shardGroup) live() int {
	n := 0
	for _, p := range g.procs {
		if p.cmd != nil && p.cmd.Process != nil && !p.exited {
			n++
		}
	}
	return n
}

// wait runs the barrier until every shard has exited: the start when all
// are ready, the server's samples, SIGINT to the shards when ctx ends, and
// a deadline for shards still running long after the first one ended.
func (g *shardGroup) wait(ctx context.Context) {
	done := ctx.Done()
	for g.live() > 0 {
		select {
		case ev := <-g.events:
			g.event(ctx, ev)
		case <-done:
			done = nil
			g.signalAll(os.Interrupt)
			g.callOff()
			g.killing = time.After(15 * time.Second)
		case <-g.grace:
			g.grace = nil
			for _, p := range g.procs {
				if !p.exited {
					_, _ = fmt.Fprintf(p.out, "still running %s after the first shard ended: interrupted\n", time.Since(g.firstExit).Round(time.Second))
				}
			}
			g.signalAll(os.Interrupt)
			g.killing = time.After(10 * time.Second)
		case <-g.killing:
			g.killing = nil
			g.signalAll(syscall.SIGKILL)
		}
	}
}

func (g *shardGroup) event(ctx context.Context, ev shardEvent) {
	p := g.procs[ev.i]
	switch ev.kind {
	case handshake.LineReady:
		p.ready = true
		g.maybeStart(ctx)
	case handshake.LineEnded:
		p.ended = true
	case handshake.LineOther:
		p.exited, p.err = true, ev.err
		_ = p.stdin.Close()
		if ev.err != nil {
			g.callOff()
		}
		if g.started && g.firstExit.IsZero() {
			g.firstExit = time.Now()
			g.grace = time.After(max(2*g.cfg.Spec.StallTimeout, 30*time.Second, g.firstExit.Sub(g.timed.startAt)))
		}
	}
	g.maybeSampleEnd(ctx)
}

// maybeStart sends the start, a little ahead, once every shard is ready.
func (g *shardGroup) maybeStart(ctx context.Context) {
	for _, p := range g.procs {
		if !p.ready {
			return
		}
	}
	if g.calledOff || g.started {
		return
	}
	g.started = true
	at := time.Now().Add(100*time.Millisecond + time.Duration(len(g.procs))*10*time.Millisecond)
	if !g.spec.startAt.IsZero() && g.spec.startAt.After(at) {
		at = g.spec.startAt
	}
	g.timed.startAt = at
	if g.probe != nil {
		g.timed.start = g.probe.sample(ctx)
	}
	line := handshake.Start(at) + "\n"
	for _, p := range g.procs {
		_, _ = io.WriteString(p.stdin, line)
	}
}

// maybeSampleEnd reads the server once every shard has ended its timed
// phase (or exited).
func (g *shardGroup) maybeSampleEnd(ctx context.Context) {
	if !g.started || g.sampledEnd {
		return
	}
	for _, p := range g.procs {
		if !p.ended && !p.exited {
			return
		}
	}
	g.sampledEnd = true
	g.timed.endAt = time.Now()
	if g.probe != nil {
		g.timed.end = g.probe.sample(context.WithoutCancel(ctx))
	}
}

// callOff closes the shards' inputs before the start: they then fail
// their run rather than wait for a start that will not come.
func (g *shardGroup) callOff() {
	if g.calledOff || g.started {
		return
	}
	g.calledOff = true
	for _, p := range g.procs {
		if p.stdin != nil {
			_ = p.stdin.Close()
		}
	}
}

func (g *shardGroup) signalAll(sig os.Signal) {
	for _, p := range g.procs {
		if p.cmd != nil && p.cmd.Process != nil && !p.exited {
			_ = p.cmd.Process.Signal(sig)
		}
	}
}

// merge merges the shards' documents into the run's, with a failure of
// kind shard for each shard that failed or wrote no document, and adds
// what this process read of the server.
func (g *shardGroup) merge(ctx context.Context, target swarm.Target, probe serverProbe, before serverSample, started time.Time) (*results.Document, error) {
	n := len(g.procs)
	var docs []*results.Document
	var shardFailures []results.Failure
	for _, p := range g.procs {
		d := p.doc
		if d != nil {
			docs = append(docs, d)
		}
		if d != nil && (p.err == nil || d.Interrupted && ctx.Err() != nil) {
			// A shard that the campaign's own interruption stopped has
			// not failed: its document says it was interrupted.
			continue
		}
		shardFailures = append(shardFailures, results.Failure{Kind: results.FailShard, Count: 1, Example: p.cause(n), At: time.Now()})
	}
	var m *results.Document
	if len(docs) > 0 {
		var err error
		if m, err = results.Merge(docs); err != nil {
			return nil, fmt.Errorf("--procs: %w", err)
		}
	} else {
		m = &results.Document{Started: started, Ended: time.Now()}
		m.TimedStart, m.TimedEnd = m.Ended, m.Ended
		m.Interrupted = ctx.Err() != nil
	}
	m.Shard = nil
	m.Shards = n
	m.Source = ""
	g.cfg.identify(m, g.spec, target)
	if len(docs) > 0 {
		// The client is the shards: their machine and runtime (each
		// shard's GOMAXPROCS is its share of the processors).
		m.Environment = docs[0].Environment
	}
	for _, f := range shardFailures {
		addFailure(m, f)
	}
	if ctx.Err() != nil {
		m.Interrupted = true
	}
	window := g.timed
	if !g.started || !g.sampledEnd {
		window = timedWindow{}
	}
	g.cfg.finish(ctx, m, probe, before, window)
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("--procs: the merged document is invalid: %w", err)
	}
	return m, nil
}

// cause says why a shard failed: its exit and its own first failure (from
// its document), or the end of what it printed.
func (p *shardProc) cause(n int) string {
	msg := fmt.Sprintf("shard %d/%d", p.index, n)
	if p.cmd != nil && p.cmd.Process != nil {
		msg += fmt.Sprintf(" (pid %d)", p.cmd.Process.Pid)
	}
	doc := p.doc
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
		if p.docErr != nil {
			msg += " (" + p.docErr.Error() + ")"
		}
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

// errNoStart is what a shard whose input ended before the start reports.
var errNoStart = errors.New("no start signal (the run was called off: another shard failed)")
