package load

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/volanogo/volanogo/internal/results"
	"github.com/volanogo/volanogo/internal/sysinfo"
)

var errAborted = errors.New("run aborted")

// runState is one run: the rooms, their users and what they count.
type runState struct {
	cfg    *Config
	rooms  []*room
	paced  bool
	dialer *dialer
	limit  *limiter
	shards []*histShard

	base     int64 // nanotime of the timed start
	timeline *results.TimelineRecorder

	startCh   chan struct{}
	stopCh    chan struct{} // closed when the duration is over
	stopOnce  sync.Once
	stopping  atomic.Bool
	drainedCh chan struct{} // paced: in-flight messages have arrived
	abortCh   chan struct{}
	abortOnce sync.Once
	aborted   atomic.Bool

	failures    results.FailureSet
	attempted   atomic.Int64
	established atomic.Int64
	open        atomic.Int64
	peak        atomic.Int64
	roomsReady  atomic.Int64

	// onDrained, when set, is called (by the watchdog) when a paced run
	// has drained, before the users leave.
	onDrained func()

	// serverNote is the server's account of connection failures (it ran
	// out of open files), added to their examples.
	serverNote string

	// firstReorder describes the first reordered chat, for the summary.
	reorderOnce  sync.Once
	firstReorder string

	linksMu sync.Mutex
	links   []*link
	closed  bool
}

func newRunState(cfg *Config, nums []int, d *dialer) (*runState, error) {
	rs := &runState{
		cfg:       cfg,
		paced:     cfg.Pause > 0,
		dialer:    d,
		limit:     newLimiter(cfg.ConnectRate),
		startCh:   make(chan struct{}),
		stopCh:    make(chan struct{}),
		drainedCh: make(chan struct{}),
		abortCh:   make(chan struct{}),
	}
	nShards := min(4*runtime.GOMAXPROCS(0), 64)
	for i := 0; i < nShards; i++ {
		rs.shards = append(rs.shards, &histShard{})
	}
	for i, num := range nums {
		r, err := newRoom(rs, i, num, cfg.Users)
		if err != nil {
			return nil, err
		}
		rs.rooms = append(rs.rooms, r)
	}
	return rs, nil
}

// addLink registers a connection so that an abort can close it; false if
// the run is already aborted.
func (rs *runState) addLink(l *link) bool {
	rs.linksMu.Lock()
	defer rs.linksMu.Unlock()
	if rs.closed {
		return false
	}
	rs.links = append(rs.links, l)
	rs.established.Add(1)
	if o := rs.open.Add(1); o > rs.peak.Load() {
		rs.peak.Store(o)
	}
	return true
}

// closeLinks closes every connection still open.
func (rs *runState) closeLinks() {
	rs.linksMu.Lock()
	rs.closed = true
	links := rs.links
	rs.links = nil
	rs.linksMu.Unlock()
	for _, l := range links {
		_ = l.close()
	}
}

// abort stops the run: every connection is closed, every goroutine ends.
func (rs *runState) abort() {
	rs.abortOnce.Do(func() {
		rs.aborted.Store(true)
		close(rs.abortCh)
		rs.closeLinks()
	})
}

func (rs *runState) stop() {
	rs.stopOnce.Do(func() {
		rs.stopping.Store(true)
		close(rs.stopCh)
	})
}

// fail records a failure (once per error) at now.
func (rs *runState) fail(err error) {
	if err == nil || errors.Is(err, errAborted) {
		return
	}
	var ue *userError
	var se *shardError
	kind := results.Classify(err)
	switch {
	case errors.As(err, &ue):
		kind = ue.kind
	case errors.As(err, &se):
		kind = results.FailShard
	}
	if errors.Is(err, context.Canceled) {
		return
	}
	rs.failures.Add(kind, err.Error(), time.Now())
}

// runOnce runs one run (this process's rooms of spec) against the server
// at d, with the server's usage read by srv (nil: unknown), and returns
// its document.
func runOnce(ctx context.Context, cfg *Config, spec runSpec, d *dialer, srv serverProbe, progress *progressLine) (*results.Document, error) {
	started := time.Now()
	nums := ShardRooms(cfg.Start, spec.rooms, cfg.ShardIndex, cfg.ShardCount)
	rs, err := newRunState(cfg, nums, d)
	if err != nil {
		return nil, err
	}
	doc := newDocument(cfg, spec)
	doc.Started = started
	var srvBefore serverSample
	if srv != nil {
		srvBefore = srv.sample(ctx)
	}
	if cfg.Scenario == results.ScenarioChurn {
		return rs.churn(ctx, doc, spec, srv, srvBefore)
	}

	// Watch the context during set-up.
	setupDone := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			rs.abort()
		case <-setupDone:
		}
	}()
	if progress != nil {
		progress.setup(rs, len(nums))
	}
	err = rs.setup(ctx)
	close(setupDone)
	setupEnd := time.Now()
	doc.SetupSeconds = setupEnd.Sub(started).Seconds()
	interrupted := ctx.Err() != nil
	if err == nil && !interrupted {
		// Mark forces a GC before the timed phase: before the wait for
		// the start, so that shards start together.
		runtime.GC()
		err = rs.waitStart(ctx, cfg, spec, doc)
		interrupted = ctx.Err() != nil
	}
	if err != nil || interrupted {
		if !interrupted {
			rs.fail(err)
		}
		rs.abort()
		doc.Interrupted = interrupted
		doc.TimedStart, doc.TimedEnd = setupEnd, setupEnd
		if srv != nil && !interrupted {
			rs.serverCause(srvBefore, srv.sample(context.WithoutCancel(ctx)))
		}
		rs.finish(doc, 0, nil, nil)
		if cfg.Gate != nil {
			cfg.Gate.Ended()
		}
		return doc, nil
	}

	var srvStart serverSample
	if srv != nil {
		srvStart = srv.sample(ctx)
	}
	cu0, cs0 := sysinfo.CPUTimes()
	tcp0 := sysinfo.ReadTCPCounters()

	var wg sync.WaitGroup
	rng := rand.New(rand.NewPCG(uint64(cfg.Seed), uint64(time.Now().UnixNano())))
	for _, r := range rs.rooms {
		for _, u := range r.users {
			wg.Add(1)
			var offset time.Duration
			if rs.paced {
				offset = time.Duration(rng.Int64N(int64(cfg.Pause)))
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-rs.startCh
					if err := u.pacedSend(offset); err != nil && !rs.aborted.Load() {
						rs.fail(err)
						rs.abort()
					}
				}()
			}
			go func() {
				defer wg.Done()
				select {
				case <-rs.startCh:
				case <-rs.abortCh:
					return
				}
				var err error
				if rs.paced {
					err = u.pacedRead()
				} else {
					err = u.turns()
				}
				u.flushAll()
				if u.done.Load() {
					_ = u.l.close()
					rs.open.Add(-1)
					r.progress.Add(1)
					r.done.Add(1)
				}
				if err != nil && !u.done.Load() && !rs.aborted.Load() {
					rs.fail(err)
					rs.abort()
				}
			}()
		}
	}
	allDone := make(chan struct{})
	go func() { wg.Wait(); close(allDone) }()

	begin := time.Now()
	rs.base = nanotime()
	rs.timeline = results.NewTimelineRecorder(begin)
	if progress != nil {
		progress.timed(rs)
	}
	// Paced: the server is read when the messages in flight have arrived,
	// before the users leave (each exit fetches the room list, which at
	// thousands of rooms costs the server more than the messages did), so
	// that its CPU is that of the load held.
	var drained serverSample
	var drainedAt time.Time
	gateEnded := false
	if rs.paced {
		rs.onDrained = func() {
			drainedAt = time.Now()
			if srv != nil {
				drained = srv.sample(context.WithoutCancel(ctx))
			}
			if cfg.Gate != nil {
				cfg.Gate.Ended()
				gateEnded = true
			}
		}
	}
	close(rs.startCh)
	interrupted = rs.watch(ctx, allDone)
	end := time.Now()
	<-allDone
	cu1, cs1 := sysinfo.CPUTimes()
	tcp1 := sysinfo.ReadTCPCounters()
	var srvEnd serverSample
	if srv != nil {
		srvEnd = srv.sample(context.WithoutCancel(ctx))
	}
	if cfg.Gate != nil && !gateEnded {
		cfg.Gate.Ended()
	}
	rs.closeLinks()
	if srv != nil && srvEnd.ok && rs.aborted.Load() {
		rs.serverCause(srvBefore, srvEnd)
	}
	doc.Interrupted = interrupted
	doc.TimedStart, doc.TimedEnd = begin, end
	if doc.Shard != nil && !doc.Shard.StartAt.IsZero() {
		doc.Shard.ClockOffsetSeconds = begin.Sub(doc.Shard.StartAt).Seconds()
	}
	doc.Client = results.Usage{CPUUserSeconds: max(0, cu1-cu0), CPUSystemSeconds: max(0, cs1-cs0)}
	doc.TCP = sysinfo.TCPDelta(tcp0, tcp1)
	rs.finish(doc, end.Sub(begin).Milliseconds(), &srvStart, &srvEnd)
	if drained.ok && srvStart.ok && doc.Server != nil {
		s := serverUsage(srvStart, drained, drainedAt.Sub(begin).Seconds(), doc.Counts.Total)
		s.RSSEndBytes = max(s.RSSEndBytes, doc.Server.RSSEndBytes)
		doc.Server = s
	}
	return doc, nil
}

// watch waits for the timed phase to end, checking every room for stalls,
// ending the duration and watching the context. It returns true when the
// context ended the run.
func (rs *runState) watch(ctx context.Context, allDone <-chan struct{}) (interrupted bool) {
	stall := int64(rs.cfg.StallTimeout)
	if rs.paced {
		stall += int64(rs.cfg.Pause)
	}
	every := min(max(rs.cfg.StallTimeout/8, 10*time.Millisecond), 250*time.Millisecond)
	tick := time.NewTicker(every)
	defer tick.Stop()
	var durC <-chan time.Time
	if rs.cfg.Duration > 0 {
		t := time.NewTimer(rs.cfg.Duration)
		defer t.Stop()
		durC = t.C
	}
	now := nanotime()
	for _, r := range rs.rooms {
		r.wdProgress, r.wdAt = -1, now
	}
	draining := false
	var drainStart int64
	for {
		select {
		case <-allDone:
			return false
		case <-ctx.Done():
			rs.abort()
			return true
		case <-durC:
			durC = nil
			rs.stop()
			if rs.paced {
				draining, drainStart = true, nanotime()
			}
		case <-tick.C:
			now := nanotime()
			if rs.paced && !draining && rs.sendersFinished() {
				draining, drainStart = true, now
			}
			if draining {
				if rs.drained() || now-drainStart > int64(rs.cfg.StallTimeout) {
					draining = false
					if rs.onDrained != nil {
						rs.onDrained()
					}
					close(rs.drainedCh)
					// The drain had its own deadline: the rooms' stall
					// clocks start again now.
					for _, r := range rs.rooms {
						r.wdAt = now
					}
				}
				continue
			}
			for _, r := range rs.rooms {
				if int(r.done.Load()) == len(r.users) {
					continue
				}
				p := r.progress.Load()
				if p != r.wdProgress {
					r.wdProgress, r.wdAt = p, now
					continue
				}
				if rs.cfg.BatchReads && !r.unbatched && now-r.wdAt > stall/4 {
					r.unbatched = true
					r.unbatch()
				}
				if now-r.wdAt > stall {
					r.stalled = true
					rs.failures.Add(results.FailStall, r.stallReport(time.Duration(now-r.wdAt)), time.Now())
					rs.abort()
					return false
				}
			}
		}
	}
}

// stallReport names the room, the user it waits for and what that user
// saw last.
func (r *room) stallReport(d time.Duration) string {
	var u *user
	if !r.rs.paced {
		// The user whose turn it is: the sender of the message after the
		// last one sent.
		u = r.users[r.seq.Load()%int64(len(r.users))]
	}
	if u == nil || u.done.Load() {
		for _, x := range r.users {
			if !x.done.Load() {
				u = x
				break
			}
		}
	}
	if u == nil {
		u = r.users[0]
	}
	return fmt.Sprintf("%s made no progress for %s: waiting for %s, whose last packet was %s",
		r.name, d.Round(time.Millisecond), u.name, u.lastPacket())
}

func (rs *runState) sendersFinished() bool {
	if rs.cfg.Count == 0 {
		return false
	}
	for _, r := range rs.rooms {
		for _, u := range r.users {
			if u.sentA.Load() < int64(rs.cfg.Count) {
				return false
			}
		}
	}
	return true
}

// drained reports whether every paced message sent has reached every
// other member of its room.
func (rs *runState) drained() bool {
	for _, r := range rs.rooms {
		var sent int64
		for _, u := range r.users {
			sent += u.sentA.Load()
		}
		if r.received.Load() < sent*int64(len(r.users)-1) {
			return false
		}
	}
	return true
}

// finish fills doc from the run's counters, histograms and failures.
func (rs *runState) finish(doc *results.Document, elapsedMs int64, srvStart, srvEnd *serverSample) {
	cfg := rs.cfg
	doc.Ended = time.Now()
	doc.ElapsedSeconds = float64(elapsedMs) / 1000
	var c results.Counts
	for _, r := range rs.rooms {
		for _, u := range r.users {
			if rs.paced {
				u.sent = u.sentA.Load()
			}
			c.Sent += u.sent
			c.Received += u.received
			c.Confirms += u.confirms
		}
	}
	c.Total = c.Sent + c.Received
	if cfg.Count > 0 {
		c.ExpectedSent = int64(len(rs.rooms)) * int64(cfg.Users) * int64(cfg.Count)
		c.ExpectedTotal = c.ExpectedSent * int64(cfg.Users)
	}
	doc.Counts = c
	ranToEnd := !rs.aborted.Load() && !doc.Interrupted && rs.timeline != nil
	if rs.timeline != nil {
		// A run that ended early still reports what its receivers saw,
		// but no loss: chats were still in flight.
		doc.Integrity = rs.integrity(ranToEnd)
	}
	if ranToEnd && !rs.paced && !rs.stopping.Load() && cfg.Count > 0 && !doc.Integrity.Failed() {
		// A safety net under the ledger: totals it did not explain.
		if c.Sent != c.ExpectedSent || c.Received != c.ExpectedSent*int64(cfg.Users-1) {
			rs.failures.Add(results.FailIntegrity, fmt.Sprintf("totals: sent %d (expected %d), received %d (expected %d)",
				c.Sent, c.ExpectedSent, c.Received, c.ExpectedSent*int64(cfg.Users-1)), time.Now())
		}
	}
	var lost int64
	if doc.Integrity != nil {
		lost = doc.Integrity.Lost
	}

	// Histograms.
	var merged [nKinds]*hdrhistogram.Histogram
	for _, s := range rs.shards {
		s.mu.Lock()
		for k := 0; k < nKinds; k++ {
			if s.h[k] == nil {
				continue
			}
			if merged[k] == nil {
				merged[k] = results.NewHistogram()
			}
			merged[k].Merge(s.h[k])
		}
		s.mu.Unlock()
	}
	connect := results.NewHistogram()
	for _, r := range rs.rooms {
		for _, u := range r.users {
			if u.setupAt > 0 {
				_ = connect.RecordValue(min(int64(u.setupAt), results.HistogramHighest))
			}
		}
	}
	doc.Latency = map[string]*results.Histogram{}
	for k, h := range merged {
		if h == nil {
			continue
		}
		if e, err := results.EncodeHistogram(h); err == nil {
			doc.Latency[kindNames[k]] = e
		}
	}
	if connect.TotalCount() > 0 {
		if e, err := results.EncodeHistogram(connect); err == nil {
			doc.Latency[results.LatencyConnect] = e
		}
	}
	if len(doc.Latency) == 0 {
		doc.Latency = nil
	}
	if rs.timeline != nil {
		rs.timeline.Add(doc.TimedEnd, 0, 0)
		doc.Timeline = rs.timeline.Timeline()
	}

	doc.Connections = results.Connections{
		Attempted:   rs.attempted.Load(),
		Established: rs.established.Load(),
		Peak:        rs.peak.Load(),
	}
	doc.Client.PeakRSSBytes = sysinfo.PeakRSS()
	if srvStart != nil && srvEnd != nil && srvStart.ok && srvEnd.ok {
		doc.Server = serverUsage(*srvStart, *srvEnd, doc.ElapsedSeconds, c.Total)
	}
	doc.Failures = rs.failures.List()
	rs.annotate(doc.Failures)
	doc.Derive()
	if rs.paced {
		doc.Paced = pacedOutcome(rs, doc, lost)
	}
}

// pacedOutcome is the step's result for a capacity sweep.
func pacedOutcome(rs *runState, doc *results.Document, lost int64) *results.Paced {
	p := &results.Paced{ConcurrentUsers: doc.Connections.Established}
	window := doc.ElapsedSeconds
	if rs.cfg.Duration > 0 && rs.cfg.Duration.Seconds() < window {
		window = rs.cfg.Duration.Seconds()
	}
	if window > 0 {
		p.InPerSecond = float64(doc.Counts.Sent) / window
		p.OutPerSecond = float64(doc.Counts.Received+doc.Counts.Confirms) / window
	}
	p.Broken, p.Reason = brokenReason(doc, lost, rs.cfg.SLO)
	return p
}

// brokenReason says why a paced step broke: connections refused or
// dropped, messages lost, or the p99 delivery latency (from the scheduled
// send) over the SLO.
func brokenReason(doc *results.Document, lost int64, slo time.Duration) (bool, string) {
	var reasons []string
	for _, f := range doc.Failures {
		switch f.Kind {
		case results.FailRefused, results.FailOpenFiles, results.FailNoSourcePort, results.FailTimeout, results.FailDenied:
			reasons = append(reasons, "connections refused ("+results.Describe(f.Kind)+": "+f.Example+")")
		case results.FailReset, results.FailClosed:
			reasons = append(reasons, "connections dropped ("+results.Describe(f.Kind)+": "+f.Example+")")
		case results.FailLost:
			reasons = append(reasons, fmt.Sprintf("%d messages lost", max(lost, f.Count)))
		case results.FailIntegrity, results.FailDuplicated, results.FailCorrupted, results.FailReordered:
			reasons = append(reasons, results.Describe(f.Kind)+": "+f.Example)
		case results.FailStall:
			reasons = append(reasons, "stalled: "+f.Example)
		default:
			reasons = append(reasons, results.Describe(f.Kind)+": "+f.Example)
		}
	}
	if doc.Interrupted {
		reasons = append(reasons, "interrupted")
	}
	h := doc.Latency[results.LatencyDeliveryScheduled]
	if h == nil {
		h = doc.Latency[results.LatencyDelivery]
	}
	if h != nil && slo > 0 && h.Count > 0 && time.Duration(h.P99) > slo {
		reasons = append(reasons, fmt.Sprintf("p99 delivery latency %s over the SLO of %s", fmtDur(h.P99), slo))
	}
	if len(reasons) == 0 {
		return false, ""
	}
	return true, strings.Join(reasons, "; ")
}

// waitStart waits, after the set-up, for the agreed start of the timed
// phase: the Gate's (other shards are ready), or spec.startAt. It records
// the agreed time in the document's Shard.
func (rs *runState) waitStart(ctx context.Context, cfg *Config, spec runSpec, doc *results.Document) error {
	at := spec.startAt
	if cfg.Gate != nil {
		t, err := cfg.Gate.Ready(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return &shardError{fmt.Errorf("start barrier: %w", err)}
		}
		at = t
	}
	if at.IsZero() {
		return nil
	}
	if doc.Shard == nil {
		doc.Shard = &results.Shard{Index: 0, Count: 1}
	}
	doc.Shard.StartAt = at
	return sleepUntil(ctx, at, rs.abortCh)
}

// sleepUntil waits until the wall-clock time at (now if it has passed).
func sleepUntil(ctx context.Context, at time.Time, abort <-chan struct{}) error {
	d := time.Until(at)
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-abort:
		return errAborted
	}
}

// shardError is a failure of the coordination between shards.
type shardError struct{ err error }

func (e *shardError) Error() string { return e.err.Error() }
func (e *shardError) Unwrap() error { return e.err }

// serverCause adds to the run's connection failures what the server says
// about them: that it ran out of open files, when it did.
func (rs *runState) serverCause(before, after serverSample) {
	cause := outOfFiles(before, after)
	if cause == "" {
		return
	}
	rs.serverNote = cause
}

// annotate prefixes the examples of connection failures with what the
// server said about them (serverCause).
func (rs *runState) annotate(fs []results.Failure) { annotateFailures(fs, rs.serverNote) }
