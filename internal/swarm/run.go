package swarm

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/volanogo/volanogo/internal/broker"
	"github.com/volanogo/volanogo/internal/results"
	"github.com/volanogo/volanogo/internal/sysinfo"
)

// runState is one run: the rooms, their users and what they count.
type runState struct {
	spec      *Spec
	transport string
	rooms     []*room
	paced     bool
	dialer    *dialer
	limit     *limiter
	shards    []*histShard

	base int64 // nanotime of the timed start
	// window is the paced schedule's length (nanoseconds from base): the
	// duration, or count pauses (see inWindow).
	window int64
	// timed is set once base and window are (the loops read packets
	// before: inWindow is false until then, and reads them after).
	timed    atomic.Bool
	timeline *results.TimelineRecorder
	// timelineLive is timeline for Snapshot, which other goroutines call.
	timelineLive atomic.Pointer[results.TimelineRecorder]
	phase        atomic.Int32

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
	// carried counts the users that entered their room in the set-up;
	// firstDial and lastEntered (nanotime) bound the set-up's connects.
	carried     atomic.Int64
	firstDial   atomic.Int64
	lastEntered atomic.Int64
	// dialCtx is the set-up's context for dialling: the run's, not the
	// one a failed user cancels (see setup).
	dialCtx context.Context

	// onDrained, when set, is called (by the watchdog) when a paced run
	// has drained, before the users leave.
	onDrained func()

	// firstReorder describes the first reordered chat, for the summary.
	reorderOnce  sync.Once
	firstReorder string
	// firstOther names the first unexpected packet from outside the run.
	otherOnce  sync.Once
	firstOther string

	// stormRun is the run's storm (nil in other runs).
	stormRun *stormRun

	linksMu sync.Mutex
	links   []*link
	closed  bool
}

func newRunState(spec *Spec, t Target) (*runState, error) {
	addrs, err := ParseBind(spec.Bind)
	if err != nil {
		return nil, &ConfigError{Err: err}
	}
	rs := &runState{
		spec:      spec,
		transport: t.Transport,
		paced:     spec.paced(),
		dialer:    &dialer{transport: t.Transport, addr: t.Addr, url: t.URL, bind: newBinder(addrs), timeout: spec.StallTimeout},
		limit:     newLimiter(spec.ConnectRate),
		startCh:   make(chan struct{}),
		stopCh:    make(chan struct{}),
		drainedCh: make(chan struct{}),
		abortCh:   make(chan struct{}),
	}
	if IsBroker(t.Transport) {
		rs.dialer.broker = broker.Options{Protocol: t.Transport, Prefix: t.Prefix, QoS: t.QoS}
	}
	nShards := min(4*runtime.GOMAXPROCS(0), 64)
	for i := 0; i < nShards; i++ {
		rs.shards = append(rs.shards, &histShard{})
	}
	for i, num := range spec.Rooms {
		r, err := newRoom(rs, i, num, spec.Users)
		if err != nil {
			return nil, err
		}
		rs.rooms = append(rs.rooms, r)
	}
	return rs, nil
}

// Snapshot is the run's progress now (see Progress).
func (rs *runState) Snapshot() Snapshot {
	s := Snapshot{Phase: Phase(rs.phase.Load()), Rooms: len(rs.rooms), RoomsReady: int(rs.roomsReady.Load()), Open: rs.open.Load()}
	if t := rs.timelineLive.Load(); t != nil {
		s.Sent, s.Received = t.Totals()
	}
	if c := int64(rs.spec.Count); c > 0 && rs.spec.Duration == 0 && rs.spec.Scenario != results.ScenarioChurn {
		sent := int64(len(rs.rooms)) * int64(rs.spec.Users) * c
		s.Expected = sent * int64(rs.spec.Users)
	}
	return s
}

// enter tells the observer that the run enters phase ph.
func (rs *runState) enter(obs Observer, ph Phase) {
	rs.phase.Store(int32(ph))
	obs.Phase(ph, rs)
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
	var se *startError
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

// Run runs the swarm once against t: the set-up (not timed), a start at
// the time the observer gives, the timed phase, and the end. It returns
// the run's document with what the swarm measured; the caller adds what
// the run was (run id, label, configuration, environment, shard) and what
// it knows of the server, then calls Derive again if it added failures.
// An error means that the run could not be made at all (a *ConfigError
// for a spec it refuses); a run that failed, or that ctx interrupted,
// returns a document that says so.
func Run(ctx context.Context, spec Spec, t Target, obs Observer) (*results.Document, error) {
	if err := spec.normalize(t); err != nil {
		return nil, err
	}
	initPlatform()
	rs, err := newRunState(&spec, t)
	if err != nil {
		return nil, err
	}
	doc := &results.Document{Started: time.Now()}
	if spec.Scenario == results.ScenarioChurn {
		return rs.churn(ctx, doc, obs), nil
	}
	if spec.Scenario == results.ScenarioStorm {
		rs.initStorm()
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
	rs.enter(obs, PhaseSetup)
	err = rs.setup(ctx)
	if err == nil && spec.Scenario == results.ScenarioPrivate {
		err = rs.openPrivate(ctx)
	}
	close(setupDone)
	setupEnd := time.Now()
	doc.SetupSeconds = setupEnd.Sub(doc.Started).Seconds()
	interrupted := ctx.Err() != nil
	if err == nil && !interrupted {
		// Mark forces a GC before the timed phase: before the wait for
		// the start, so that shards start together.
		runtime.GC()
		err = rs.waitStart(ctx, obs)
		interrupted = ctx.Err() != nil
	}
	if err != nil || interrupted {
		if !interrupted {
			rs.fail(err)
		}
		rs.abort()
		doc.Interrupted = interrupted
		doc.TimedStart, doc.TimedEnd = setupEnd, setupEnd
		rs.enter(obs, PhaseEnded)
		rs.finish(doc, 0)
		return doc, nil
	}

	var ev *evEngine
	if spec.Engine == EngineEpoll {
		if ev, err = newEvEngine(spec.Loops, len(rs.rooms)*spec.Users); err != nil {
			rs.fail(err)
			rs.abort()
			rs.enter(obs, PhaseEnded)
			doc.TimedStart, doc.TimedEnd = setupEnd, setupEnd
			rs.finish(doc, 0)
			return doc, nil
		}
	}
	var wg sync.WaitGroup
	// userEnded is what follows a user's timed phase: its figures, and its
	// connection closed when it left its room as it should.
	userEnded := func(u *user, err error) {
		u.flushAll()
		if u.done.Load() {
			_ = u.l.close()
			rs.open.Add(-1)
			u.r.progress.Add(1)
			u.r.done.Add(1)
		}
		if err != nil && !u.done.Load() && !rs.aborted.Load() {
			rs.fail(err)
			rs.abort()
		}
	}
	rng := rand.New(rand.NewPCG(uint64(spec.Seed), uint64(time.Now().UnixNano())))
	// The loops' receive low-water marks count VOLANO packets: not on a
	// broker's socket, whose frames have other sizes.
	volano := rs.transport == TransportTCP
	for _, r := range rs.rooms {
		for _, u := range r.users {
			wg.Add(1)
			var offset time.Duration
			if rs.paced {
				offset = time.Duration(rng.Int64N(int64(spec.Pause)))
			}
			if ev != nil {
				// The loops read it from now on, and start it at the
				// start.
				ended := func(err error) { userEnded(u, err); wg.Done() }
				var err error
				if rs.paced {
					// (A Ping, shorter than a confirm, comes only to a
					// user silent for long.)
					u.confirmLowat = spec.Pause <= time.Minute && volano
					r.lowats = r.lowats || u.confirmLowat
					err = ev.attachPaced(u, offset, ended)
				} else {
					u.confirmLowat = !u.batch && spec.Count > 0 && spec.Duration == 0 && volano
					r.lowats = r.lowats || u.batch || u.confirmLowat
					err = ev.attachTurns(u, ended)
				}
				if err != nil {
					userEnded(u, err)
					wg.Done()
				}
				continue
			}
			if rs.paced {
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
					err = u.pacedReadLoop(ctx)
				} else {
					err = u.turns()
				}
				userEnded(u, err)
			}()
		}
	}
	// The client's CPU and the TCP counters from here: the users'
	// goroutines started or their sockets handed to the loops (set-up).
	cu0, cs0 := sysinfo.CPUTimes()
	tcp0 := sysinfo.ReadTCPCounters()
	allDone := make(chan struct{})
	go func() { wg.Wait(); close(allDone) }()

	begin := time.Now()
	rs.base = nanotime()
	if rs.paced {
		rs.window = math.MaxInt64
		if spec.Duration > 0 {
			rs.window = int64(spec.Duration)
		}
		if spec.Count > 0 {
			rs.window = min(rs.window, int64(spec.Count)*int64(spec.Pause))
		}
	}
	rs.timed.Store(true)
	rs.startTimeline(begin)
	if rs.stormRun != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-rs.startCh
			rs.drop(ctx)
		}()
	}
	rs.enter(obs, PhaseTimed)
	// Paced: the timed phase is over when the chats in flight have
	// arrived, before the users leave (each exit fetches the room list,
	// which at thousands of rooms costs the server more than the chats
	// did), so that what the observer reads of the server then is the
	// load held.
	ended := false
	if rs.paced {
		rs.onDrained = func() {
			rs.enter(obs, PhaseEnded)
			ended = true
			if ev != nil {
				ev.leave()
			}
		}
	}
	if ev != nil {
		ev.start(rs.base)
	}
	close(rs.startCh)
	interrupted = rs.watch(ctx, allDone)
	end := time.Now()
	<-allDone
	if ev != nil {
		ev.close()
	}
	cu1, cs1 := sysinfo.CPUTimes()
	tcp1 := sysinfo.ReadTCPCounters()
	if !ended {
		rs.enter(obs, PhaseEnded)
	}
	rs.closeLinks()
	doc.Interrupted = interrupted
	doc.TimedStart, doc.TimedEnd = begin, end
	doc.Client = results.Usage{CPUUserSeconds: max(0, cu1-cu0), CPUSystemSeconds: max(0, cs1-cs0)}
	doc.TCP = sysinfo.TCPDelta(tcp0, tcp1)
	rs.finish(doc, end.Sub(begin).Milliseconds())
	return doc, nil
}

// startTimeline starts counting the timed phase's chats from begin.
func (rs *runState) startTimeline(begin time.Time) {
	rec := results.NewTimelineRecorder(begin)
	rs.timeline = rec
	rs.timelineLive.Store(rec)
}

// watch waits for the timed phase to end, checking every room for stalls,
// ending the duration and watching the context. It returns true when the
// context ended the run.
func (rs *runState) watch(ctx context.Context, allDone <-chan struct{}) (interrupted bool) {
	stall := int64(rs.spec.StallTimeout)
	if rs.paced {
		stall += int64(rs.spec.Pause)
	}
	every := min(max(rs.spec.StallTimeout/8, 10*time.Millisecond), 250*time.Millisecond)
	tick := time.NewTicker(every)
	defer tick.Stop()
	var durC <-chan time.Time
	if rs.spec.Duration > 0 {
		t := time.NewTimer(rs.spec.Duration)
		defer t.Stop()
		durC = t.C
	}
	now := nanotime()
	for _, r := range rs.rooms {
		r.wdProgress, r.wdAt = -1, now
	}
	// The drain happens once: after it, the rooms' stall clocks run again
	// until every user is done.
	draining, drainedOnce := false, false
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
			if rs.paced && !drainedOnce {
				draining, drainStart = true, nanotime()
			}
		case <-tick.C:
			now := nanotime()
			if rs.paced && !draining && !drainedOnce && rs.sendersFinished() {
				draining, drainStart = true, now
			}
			if draining {
				if rs.drained() || now-drainStart > int64(rs.spec.StallTimeout) {
					draining, drainedOnce = false, true
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
				if (rs.spec.BatchReads || r.lowats) && !r.unbatched && now-r.wdAt > stall/4 {
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
	if rs.spec.Count == 0 {
		return false
	}
	for _, r := range rs.rooms {
		for _, u := range r.users {
			if !u.doneSending.Load() {
				return false
			}
		}
	}
	return true
}

// drained reports whether every paced message sent has reached every
// other member of its room.
func (rs *runState) drained() bool {
	if rs.stormRun != nil {
		return rs.stormDrained()
	}
	if rs.spec.Scenario == results.ScenarioPrivate {
		return rs.privateDrained()
	}
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
func (rs *runState) finish(doc *results.Document, elapsedMs int64) {
	cfg := rs.spec
	doc.Ended = time.Now()
	doc.ElapsedSeconds = float64(elapsedMs) / 1000
	var c results.Counts
	for _, r := range rs.rooms {
		for _, u := range r.users {
			if rs.paced {
				u.sent = u.sentA.Load()
			}
			c.Sent += u.sent
			if u.priv != nil {
				c.Sent += u.priv.echoes
			}
			c.Received += u.received
			c.Confirms += u.confirms
		}
	}
	c.Total = c.Sent + c.Received
	if cfg.Count > 0 && !rs.stopping.Load() {
		// (A run that its duration ended had no expected total.)
		c.ExpectedSent = int64(len(rs.rooms)) * int64(cfg.publishers()) * int64(cfg.Count)
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
		Carried:     new(rs.carried.Load()),
		ConnectRate: rs.connectRate(),
	}
	doc.Client.PeakRSSBytes = sysinfo.PeakRSS()
	if rs.stormRun != nil {
		rs.stormOutcome(doc)
	}
	doc.Failures = rs.failures.List()
	if said := rs.dialer.said.Load(); said != nil && doc.ServerInfo == nil {
		doc.ServerInfo = &results.ServerInfo{Product: said[0], Version: said[1]}
	}
	if rs.paced {
		doc.Paced = pacedOutcome(rs, doc)
	}
	doc.Derive()
}

// connectRate is the set-up's achieved rate: the connections carried
// after the first over the time from the first dial to the last EnterRoom
// confirm (0 with fewer than two).
func (rs *runState) connectRate() float64 {
	n, first, last := rs.carried.Load(), rs.firstDial.Load(), rs.lastEntered.Load()
	if n < 2 || first == 0 || last <= first {
		return 0
	}
	return float64(n-1) / time.Duration(last-first).Seconds()
}

// entered counts a user that has entered its room in the set-up.
func (rs *runState) entered() {
	rs.carried.Add(1)
	now := nanotime()
	for {
		last := rs.lastEntered.Load()
		if now <= last || rs.lastEntered.CompareAndSwap(last, now) {
			return
		}
	}
}

// inWindow reports whether a paced send or read at now (nanotime) falls
// within the schedule's window, which the rates in and out count.
func (rs *runState) inWindow(now int64) bool {
	return rs.timed.Load() && now-rs.base < rs.window
}

// pacedOutcome is the step's result for a capacity sweep. Its rates are
// what was sent and read within the schedule's window (the duration, or
// count pauses), over that window: the drain's deliveries are not
// counted, so that a run that fell behind its schedule shows the rate it
// held, not the rate it was given.
func pacedOutcome(rs *runState, doc *results.Document) *results.Paced {
	// Users, not connections: a storm's reconnections are further
	// connections of the same users.
	p := &results.Paced{ConcurrentUsers: min(rs.carried.Load(), int64(len(rs.spec.Rooms)*rs.spec.Users))}
	var in, out int64
	for _, r := range rs.rooms {
		for _, u := range r.users {
			in += u.sentIn
			out += u.readIn
		}
	}
	// A run that ended early (interrupted, aborted): over what it lasted.
	window := min(time.Duration(rs.window).Seconds(), doc.ElapsedSeconds)
	if window > 0 {
		p.InPerSecond = float64(in) / window
		p.OutPerSecond = float64(out) / window
	}
	p.Broken, p.Reason = doc.PacedVerdict(rs.spec.SLO)
	return p
}

// waitStart waits, after the set-up, for the start of the timed phase
// that the observer gives.
func (rs *runState) waitStart(ctx context.Context, obs Observer) error {
	at, err := obs.Start(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return &startError{fmt.Errorf("start barrier: %w", err)}
	}
	if at.IsZero() {
		return nil
	}
	return sleepUntil(ctx, at, rs.abortCh)
}

// sleepUntil waits until the wall-clock time at (now if it has passed).
func sleepUntil(ctx context.Context, at time.Time, abort <-chan struct{}) error {
	return sleepFor(ctx, time.Until(at), abort, nil)
}

// sleepFor waits for d, or an abort or the stop (a nil channel: none).
func sleepFor(ctx context.Context, d time.Duration, abort, stop <-chan struct{}) error {
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
	case <-stop:
		return errAborted
	}
}

// startError is a start that the observer called off (the shards of a
// run start together, and another failed).
type startError struct{ err error }

func (e *startError) Error() string { return e.err.Error() }
func (e *startError) Unwrap() error { return e.err }
