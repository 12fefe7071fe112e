package campaign

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/volanogo/volanogo/internal/buildinfo"
	"github.com/volanogo/volanogo/internal/results"
	"github.com/volanogo/volanogo/internal/swarm"
	"github.com/volanogo/volanogo/internal/sysinfo"
)

// Sink receives a campaign's runs as they happen: the caller (the CLI)
// prints them, writes the documents and shows progress. Its methods are
// called from the goroutine that called Run.
type Sink interface {
	// RunStarting is called before each run.
	RunStarting(r RunInfo)
	// Progress is called when a run's phase changes; progress may be
	// called from any goroutine until the next call of Progress or
	// RunDone.
	Progress(progress func() Progress)
	// RunDone is called with each run's complete document; an error stops
	// the campaign.
	RunDone(r RunInfo, d *results.Document) error
	// SweepStopped is called when a paced sweep stops at a broken step
	// (see Config.KeepGoing).
	SweepStopped(s Step)
}

// RunInfo places a run within the campaign.
type RunInfo struct {
	// Rooms is the step; CPUs the processors the server was restricted to
	// (0: not restricted).
	Rooms, CPUs int
	// Run is the 1-based run number of Runs in the step; Discarded says
	// whether the run rule does not count it.
	Run, Runs int
	Discarded bool
	// Many is true when the campaign has more than one run.
	Many bool
	// Attempt is the try of a run that Config.Retry makes again (2, 3,
	// ...); 0 for a first try.
	Attempt int
}

// Progress is what a run in progress shows: the swarm's snapshot (summed
// over the shards when the run has shard processes) and the shards'.
type Progress struct {
	swarm.Snapshot
	// Shards is the number of shard processes (0: the run is in this
	// process); ShardsReady of them have set up, ShardsEnded have ended
	// their timed phase.
	Shards, ShardsReady, ShardsEnded int
}

// Step is one step (room count and server processors) with its runs
// under the run rule.
type Step struct {
	Rooms, CPUs int
	Docs        []*results.Document
	// Tally is the run rule applied to the counted runs.
	Tally results.Tally
	// Passed: every run of the step passed (discarded runs too).
	Passed bool
}

// Result is what Run did: every step with its runs, and with
// Config.FindLimit what the search found.
type Result struct {
	Steps  []Step
	Search *SearchResult
}

// environment is this machine's, collected once.
var (
	environment     results.Environment
	environmentOnce sync.Once
)

// Environment is the machine the campaign runs on (collected once).
func Environment() results.Environment {
	environmentOnce.Do(func() { environment = sysinfo.Collect() })
	return environment
}

// runSpec is one run of a step.
type runSpec struct {
	rooms, cpus, run int
	runID            string
	// startAt is Config.StartAt for the first run, zero for the others.
	startAt time.Time
	// server is what the campaign knows of the server before the run:
	// the command that starts it, the --server-label pairs.
	server *results.ServerInfo
}

// Run runs the configured steps, each with its runs, and hands every run
// to sink. It returns ErrFailed when a run failed, ErrInterrupted when ctx
// ended it, a usage error (IsUsage) for a configuration it refuses, and
// other errors when it could not run at all or the sink failed.
func Run(ctx context.Context, cfg Config, sink Sink) (*Result, error) {
	if err := cfg.normalize(); err != nil {
		return nil, err
	}
	Environment()
	cfg.brokerVersion(ctx)
	r := &campaignRun{cfg: &cfg, sink: sink, res: &Result{}, first: true}
	cpuList := cfg.ServerCPUs
	if len(cpuList) == 0 {
		cpuList = []int{0}
	}
	r.many = len(cfg.Steps)*len(cpuList) > 1 || cfg.Runs > 1 || cfg.FindLimit != nil
	var err error
	if cfg.FindLimit != nil {
		err = r.findLimit(ctx)
	} else {
		err = r.sweep(ctx, cpuList)
	}
	if err != nil {
		return r.res, err
	}
	switch {
	case r.interrupted:
		return r.res, ErrInterrupted
	case r.failed:
		return r.res, ErrFailed
	}
	return r.res, nil
}

// campaignRun is one Run: its configuration, its sink and what it did.
type campaignRun struct {
	cfg   *Config
	sink  Sink
	res   *Result
	many  bool
	first bool // no run has started yet
	// failed: a run failed (or a paced step broke); interrupted: ctx
	// ended a run.
	failed, interrupted bool
}

// sweep runs the configured steps in order, each at every processor
// count of cpuList; a paced sweep stops at its first broken step unless
// KeepGoing.
func (r *campaignRun) sweep(ctx context.Context, cpuList []int) error {
	cfg := r.cfg
	for _, rooms := range cfg.Steps {
		floor, err := cfg.measureFloor(ctx, rooms)
		if err != nil {
			return err
		}
		for _, cpus := range cpuList {
			step, stop, err := r.step(ctx, rooms, cpus, floor, nil)
			if err != nil {
				return err
			}
			if step != nil {
				r.res.Steps = append(r.res.Steps, *step)
			}
			if stop {
				return nil
			}
			if cfg.Spec.Pause > 0 && !step.Passed && !cfg.KeepGoing && len(cfg.Steps)*len(cpuList) > 1 {
				r.sink.SweepStopped(*step)
				return nil
			}
		}
	}
	return nil
}

// step makes the runs of one step (rooms, at cpus processors when the
// server is restricted), each with its tries (Config.Retry), and applies
// the run rule. stop says that the campaign ends here (interrupted, or a
// server that does not start); step is nil when no run was made.
func (r *campaignRun) step(ctx context.Context, rooms, cpus int, floor *results.Floor, search *results.Search) (step *Step, stop bool, err error) {
	cfg := r.cfg
	var docs []*results.Document
	for run := 1; run <= cfg.Runs; run++ {
		if ctx.Err() != nil {
			r.interrupted, stop = true, true
			break
		}
		info := RunInfo{Rooms: rooms, CPUs: cpus, Run: run, Runs: cfg.Runs, Discarded: run <= cfg.Discard, Many: r.many}
		doc, err := r.tries(ctx, info, floor, search)
		if err != nil {
			return nil, true, err
		}
		docs = append(docs, doc)
		if doc.Interrupted {
			r.interrupted, stop = true, true
			break
		}
		if !doc.Passed || (doc.Paced != nil && doc.Paced.Broken) {
			r.failed = true
		}
		if hasKind(doc, results.FailServerStart) {
			stop = true
			break
		}
	}
	if len(docs) == 0 {
		return nil, stop, nil
	}
	s := summarize(rooms, cpus, docs)
	return &s, stop, nil
}

// tries makes one run, again on a fresh server after a failure while
// Config.Retry allows: each try goes to the sink, a failed try that a
// later one replaces marked Superseded, the run's document (the last
// try) naming the earlier tries' causes.
func (r *campaignRun) tries(ctx context.Context, info RunInfo, floor *results.Floor, search *results.Search) (*results.Document, error) {
	cfg := r.cfg
	var earlier []results.Failure
	for attempt := 1; ; attempt++ {
		if attempt > 1 {
			info.Attempt = attempt
		}
		r.sink.RunStarting(info)
		spec := runSpec{rooms: info.Rooms, cpus: info.CPUs, run: info.Run, runID: cfg.runID(info.Rooms, info.CPUs, info.Run, r.many)}
		if attempt > 1 && cfg.RunID != "" {
			spec.runID += "-try" + strconv.Itoa(attempt)
		}
		if r.first {
			spec.startAt = cfg.StartAt
		}
		r.first = false
		doc, err := runStep(ctx, cfg, spec, r.sink)
		if err != nil {
			return nil, err
		}
		doc.Step, doc.Run, doc.Discarded = info.Rooms, info.Run, info.Discarded && r.many
		if floor != nil {
			doc.Environment.Floor = []results.Floor{*floor}
		}
		if search != nil {
			s := *search
			doc.Search = &s
		}
		again := attempt <= cfg.Retry && !doc.Passed && !doc.Interrupted && ctx.Err() == nil
		if cfg.Retry > 0 {
			doc.Retry = &results.Retry{Attempt: attempt, Of: cfg.Retry + 1, Superseded: again, Earlier: slices.Clone(earlier)}
		}
		if err := r.sink.RunDone(info, doc); err != nil {
			return nil, err
		}
		if !again {
			return doc, nil
		}
		if f, ok := doc.FirstFailure(); ok {
			earlier = append(earlier, f)
		}
	}
}

// measureFloor measures the floor at a step's room count (Config.Floor)
// just before the step's runs, so that a long sweep's last step is not
// measured against a floor read long before it; nil without Config.Floor.
func (c *Config) measureFloor(ctx context.Context, rooms int) (*results.Floor, error) {
	if c.Floor == nil {
		return nil, nil
	}
	f, err := c.Floor(ctx, rooms, c.Spec.Users)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ErrInterrupted
		}
		return nil, fmt.Errorf("--floor: %w", err)
	}
	return &f, nil
}

// summarize applies the Volano Report's rule (results.DefaultRunRule; the
// runs to discard are marked) to the runs of one step.
func summarize(rooms, cpus int, docs []*results.Document) Step {
	s := Step{Rooms: rooms, CPUs: cpus, Docs: docs, Passed: true}
	for _, d := range docs {
		if !results.RunPassed(d) {
			s.Passed = false
		}
	}
	rule := results.DefaultRunRule
	rule.Discard = 0
	counted, _, _ := rule.Counted(docs)
	s.Tally = rule.Tally(counted)
	return s
}

func hasKind(d *results.Document, kind string) bool {
	for _, f := range d.Failures {
		if f.Kind == kind {
			return true
		}
	}
	return false
}

// runStep makes one run: it starts the server when asked, runs the
// swarm (here or in shard processes) and stops the server.
func runStep(ctx context.Context, cfg *Config, spec runSpec, sink Sink) (*results.Document, error) {
	target := cfg.target()
	var probe serverProbe
	if cfg.ServerMetrics != "" {
		probe = metricsProbe{url: cfg.ServerMetrics}
	}
	var srv *spawned
	spec.server = cfg.serverIdentity()
	if cfg.spawned() {
		var err error
		if cfg.Serve {
			srv, err = startServe(ctx, cfg.ServeCommand, spec.cpus)
		} else {
			srv, err = startServerCmd(ctx, cfg.ServerCmd, spec.cpus)
		}
		if err != nil {
			return serverStartFailure(ctx, cfg, spec, err), nil
		}
		if testHookServerStarted != nil {
			testHookServerStarted(srv.pid())
		}
		defer srv.stop()
		if cfg.Transport == swarm.TransportWS {
			target = swarm.Target{Transport: swarm.TransportWS, URL: "ws://" + srv.ws + "/chat"}
		} else {
			target = cfg.addrTarget(srv.chat)
		}
		switch {
		case cfg.ServerMetrics != "":
		case srv.metrics != "":
			probe = metricsProbe{url: "http://" + srv.metrics + "/metrics"}
		case srv.ready != nil:
			probe = &lateProbe{srv: srv}
		default:
			probe = procProbe{pid: srv.pid()}
		}
	}
	network, netErr := measureNetwork(ctx, target, probe)
	var doc *results.Document
	var err error
	switch {
	case cfg.ClientCmd != "":
		doc, err = runClient(ctx, cfg, spec, target, probe)
	case cfg.Procs != 0:
		doc, err = runShards(ctx, cfg, cfg.Procs, spec, target, probe, sink)
	case cfg.SplitWhenNeeded && cfg.ShardCount == 0 && cfg.ClientCmd == "" && cfg.Spec.Scenario != results.ScenarioChurn && autoProcs(spec.rooms, cfg.Spec.Users) > 1:
		doc, err = runShards(ctx, cfg, ProcsAuto, spec, target, probe, sink)
	default:
		doc, err = runLocal(ctx, cfg, spec, target, probe, sink)
	}
	if doc != nil {
		doc.Network = network
		if netErr != nil {
			doc.Warnings = appendWarning(doc.Warnings, "the network round trip is unknown: "+netErr.Error())
		}
	}
	if doc != nil && srv != nil {
		doc.Config.ServerCommand = srv.argv
		if srv.recorded != nil {
			doc.Config.ServerCommand = srv.recorded
		}
		if doc.Server != nil {
			doc.Server.CPUs = sysinfo.ProcessCPUs(srv.pid())
		}
		if !doc.Passed {
			// The server's own words, when its metrics said nothing.
			explainFailures(doc.Failures, srv.account())
		}
	}
	return doc, err
}

// serverIdentity is what the configuration says of the server: the
// command that starts it (--serve, --server-cmd) and the --server-label
// pairs; nil when it says nothing.
func (c *Config) serverIdentity() *results.ServerInfo {
	var si *results.ServerInfo
	switch {
	case c.Serve:
		si = commandIdentity(c.ServeCommand)
	case c.ServerCmd != "":
		si = commandIdentity(strings.Fields(c.ServerCmd))
		c.brokerIdentity(si)
	}
	if len(c.ServerLabels) > 0 {
		if si == nil {
			si = &results.ServerInfo{}
		}
		si.ApplyLabels(c.ServerLabels)
	}
	return si
}

// measureNetwork times the round trip to the server before a run
// (swarm.MeasureNetwork) and, when the server's metrics count its
// connections, waits (a second at most) until it has seen the probes'
// connections close, so that they take no place of the run's (a server
// with --max-connections).
func measureNetwork(ctx context.Context, target swarm.Target, probe serverProbe) (*results.Network, error) {
	var before serverSample
	if probe != nil {
		before = probe.sample(ctx)
	}
	n, err := swarm.MeasureNetwork(ctx, target, networkTimeout)
	if before.ok && before.hasOpen {
		deadline := time.Now().Add(time.Second)
		for time.Now().Before(deadline) {
			if s := probe.sample(ctx); !s.ok || !s.hasOpen || s.open <= before.open {
				break
			}
			select {
			case <-ctx.Done():
				return n, err
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	return n, err
}

// networkTimeout bounds each connect of the round-trip measurement.
const networkTimeout = 5 * time.Second

// testHookServerStarted, when set, is called with the pid of each server
// the campaign starts.
var testHookServerStarted func(pid int)

// serverStartFailure is the document of a run whose server did not start.
func serverStartFailure(ctx context.Context, cfg *Config, spec runSpec, err error) *results.Document {
	doc := &results.Document{Started: time.Now()}
	doc.Ended, doc.TimedStart, doc.TimedEnd = doc.Started, doc.Started, doc.Started
	doc.Interrupted = ctx.Err() != nil
	kind := results.FailServerStart
	if doc.Interrupted {
		kind = results.FailOther
	}
	doc.Failures = []results.Failure{{Kind: kind, Count: 1, Example: err.Error(), At: time.Now()}}
	cfg.identify(doc, spec, cfg.target())
	doc.Derive()
	return doc
}

// runLocal runs the swarm in this process, reading the server with probe
// (nil: not at all) around its timed phase.
func runLocal(ctx context.Context, cfg *Config, spec runSpec, target swarm.Target, probe serverProbe, sink Sink) (*results.Document, error) {
	obs := &localObserver{ctx: ctx, probe: probe, sink: sink, startAt: spec.startAt}
	before := cfg.before(ctx, probe)
	s := cfg.Spec
	s.Rooms = ShardRooms(cfg.Start, spec.rooms, cfg.ShardIndex, cfg.ShardCount)
	doc, err := swarm.Run(ctx, s, target, obs)
	if err != nil {
		return nil, err
	}
	cfg.identify(doc, spec, target)
	if doc.Shard != nil && !spec.startAt.IsZero() {
		doc.Shard.StartAt = spec.startAt
		doc.Shard.ClockOffsetSeconds = doc.TimedStart.Sub(spec.startAt).Seconds()
	}
	cfg.finish(ctx, doc, probe, before, obs.timed)
	return doc, nil
}

// before samples the server before a run: at rest, for a run whose leaks
// are checked (churn, storm).
func (c *Config) before(ctx context.Context, probe serverProbe) serverSample {
	switch {
	case probe == nil:
		return serverSample{}
	case c.Spec.Scenario == results.ScenarioChurn || c.Spec.Scenario == results.ScenarioStorm:
		return baseline(ctx, probe)
	}
	return probe.sample(ctx)
}

// timedWindow is what the campaign read of the server over a timed phase:
// a sample at its start and at its end, and when.
type timedWindow struct {
	start, end     serverSample
	startAt, endAt time.Time
}

// localObserver is the swarm's observer for a run in this process: it
// shows the run's progress, starts at startAt (or at once), and reads the
// server when the timed phase starts and ends.
type localObserver struct {
	ctx     context.Context
	probe   serverProbe
	sink    Sink
	startAt time.Time
	timed   timedWindow
}

func (o *localObserver) Phase(ph swarm.Phase, p swarm.Progress) {
	switch ph {
	case swarm.PhaseSetup:
		o.sink.Progress(func() Progress { return Progress{Snapshot: p.Snapshot()} })
	case swarm.PhaseTimed:
		o.timed.startAt = time.Now()
		if o.probe != nil {
			o.timed.start = o.probe.sample(o.ctx)
		}
	case swarm.PhaseEnded:
		o.timed.endAt = time.Now()
		if o.probe != nil {
			o.timed.end = o.probe.sample(context.WithoutCancel(o.ctx))
		}
	}
}

func (o *localObserver) Start(context.Context) (time.Time, error) { return o.startAt, nil }

// finish adds to a run's document what the campaign knows of the server:
// its usage over the timed phase, what it left behind after a churn run,
// whether it ran out of descriptors; then the verdicts that follow.
func (c *Config) finish(ctx context.Context, doc *results.Document, probe serverProbe, before serverSample, w timedWindow) {
	if probe != nil {
		// After a churn or a storm, what the server kept is checked once
		// its figures settle.
		var l *results.Leaks
		var what string
		switch {
		case doc.Churn != nil:
			l, what = &doc.Churn.Leaks, fmt.Sprintf("%d sequences", doc.Churn.Sequences)
		case doc.Storm != nil:
			l, what = &doc.Storm.Leaks, fmt.Sprintf("a storm of %d reconnections", doc.Storm.Reconnected)
		}
		var after serverSample
		if l != nil && !doc.Interrupted {
			after = settle(context.WithoutCancel(ctx), probe, before)
		} else {
			after = probe.sample(context.WithoutCancel(ctx))
		}
		doc.Server = nil
		if w.start.ok && w.end.ok && !w.endAt.IsZero() {
			doc.Server = serverUsage(w.start, w.end, w.endAt.Sub(w.startAt).Seconds(), doc.Counts.Total)
			if after.ok {
				doc.Server.RSSEndBytes = max(doc.Server.RSSEndBytes, after.rss)
			}
			if before.ok {
				doc.Server.RSSBeforeBytes = before.rss
			}
			doc.Server.Engine = cmp.Or(doc.Server.Engine, before.engine, after.engine)
		}
		if l != nil && before.ok && after.ok && !doc.Interrupted {
			leaks(l, before, after)
			if doc.Server != nil {
				doc.Server.Goroutines, doc.Server.OpenFDs = after.goroutines, after.openFDs
			}
			if msg := leakFailure(what, *l); msg != "" {
				addFailure(doc, results.Failure{Kind: results.FailLeak, Count: 1, Example: msg, At: time.Now()})
			}
		}
		first := before
		if !first.ok {
			first = w.start
		}
		explainFailures(doc.Failures, serverAccount(first, after))
		doc.ServerInfo = identityOf(doc.ServerInfo, before, w.start, w.end, after)
		for _, s := range []serverSample{before, w.start, w.end, after} {
			if s.err != nil {
				doc.Warnings = appendWarning(doc.Warnings, "the server's usage is unknown: "+s.err.Error())
				break
			}
		}
	}
	c.label(doc)
	if doc.Paced != nil {
		doc.Paced.Broken, doc.Paced.Reason = doc.PacedVerdict(c.Spec.SLO)
	}
	doc.Derive()
}

func appendWarning(ws []string, w string) []string {
	for _, x := range ws {
		if x == w {
			return ws
		}
	}
	return append(ws, w)
}

// identify fills what a run was: its id, label, the tool, the command
// line, the machine, the configuration (the whole step, also in a shard)
// and the shard.
func (c *Config) identify(d *results.Document, spec runSpec, target swarm.Target) {
	stamp(d, spec.runID)
	d.CommandLine = c.CommandLine
	s := &c.Spec
	d.Config = results.Config{
		Scenario:            s.Scenario,
		Transport:           target.Transport,
		StartRoom:           c.Start,
		Rooms:               spec.rooms,
		Users:               s.Users,
		Count:               s.Count,
		PauseSeconds:        s.Pause.Seconds(),
		Publishers:          s.Publishers,
		DurationSeconds:     s.Duration.Seconds(),
		ConnectRate:         s.ConnectRate,
		ConnectConcurrency:  s.ConnectConcurrency,
		StallTimeoutSeconds: s.StallTimeout.Seconds(),
		SLOSeconds:          s.SLO.Seconds(),
		Bind:                s.Bind,
		ServerCPUs:          spec.cpus,
		ClientEngine:        s.Engine,
	}
	if d.Config.ClientEngine == "" {
		d.Config.ClientEngine = swarm.EngineGoroutine
	}
	if spec.server != nil {
		si := *spec.server
		si.Flags, si.Labels = slices.Clone(si.Flags), maps.Clone(si.Labels)
		d.ServerInfo = &si
	}
	c.label(d)
	if target.Transport == swarm.TransportWS {
		d.Config.URL = target.URL
	} else {
		host, port, _ := net.SplitHostPort(target.Addr)
		d.Config.Host = host
		d.Config.Port, _ = strconv.Atoi(port)
	}
	if c.ShardCount > 0 {
		d.Shard = &results.Shard{Index: c.ShardIndex, Count: c.ShardCount,
			Rooms: ShardRooms(c.Start, spec.rooms, c.ShardIndex, c.ShardCount)}
	}
}

// stamp marks d as a document of this build of run runID (a new id when
// empty), made on this machine.
func stamp(d *results.Document, runID string) {
	bi := buildinfo.Get()
	d.Schema = results.SchemaVersion
	d.RunID = runID
	if d.RunID == "" {
		d.RunID = newRunID()
	}
	d.Tool = results.Tool{Name: "volanogo", Version: orDevel(bi.Version), Commit: bi.Commit, GoVersion: bi.GoVersion}
	d.Environment = Environment()
}

// label sets d's label: Config.Label, or by default the server, with the
// engines of the run as far as they are known (results.Document.Engines),
// so that runs differing only by engines are separate platforms:
// "volanogo serve epoll / load goroutine, v1.2.0, go1.26.0",
// "java (serve ... / load epoll)", "127.0.0.1:8000 (load goroutine)".
// It is called again once the server has said its engine.
func (c *Config) label(d *results.Document) {
	if c.Label != "" {
		d.Label = c.Label
		return
	}
	engines := d.Engines()
	build := orDevel(buildinfo.Get().Version) + ", " + Environment().GoVersion
	var base string
	switch {
	case c.Serve && d.ServerEngine() != "":
		d.Label = "volanogo " + engines + ", " + build
		return
	case c.Serve:
		base = "volanogo serve " + build
	case c.ServerCmd != "":
		base = strings.Fields(c.ServerCmd)[0]
		if c.serverVersion != "" {
			base += " " + c.serverVersion
		}
	case swarm.IsBroker(c.Transport):
		base = c.Transport + "://" + net.JoinHostPort(c.Host, strconv.Itoa(c.Port))
	case c.Transport == swarm.TransportWS:
		base = c.URL
	default:
		base = net.JoinHostPort(c.Host, strconv.Itoa(c.Port))
	}
	if engines != "" {
		base += " (" + engines + ")"
	}
	d.Label = base
}

func orDevel(s string) string {
	if s == "" {
		return "devel"
	}
	return s
}

// runID is the id of one run: Config.RunID (with the run's place when
// there are several), or a new one.
func (c *Config) runID(rooms, cpus, run int, many bool) string {
	switch {
	case c.RunID == "":
		return newRunID()
	case !many:
		return c.RunID
	case cpus > 0:
		return fmt.Sprintf("%s-%d-c%d-%d", c.RunID, rooms, cpus, run)
	}
	return fmt.Sprintf("%s-%d-%d", c.RunID, rooms, run)
}

func newRunID() string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return strconv.FormatInt(time.Now().UnixNano(), 16)
	}
	return hex.EncodeToString(b[:])
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
