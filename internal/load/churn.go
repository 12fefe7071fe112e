package load

import (
	"context"
	"fmt"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/volanogo/volanogo/internal/results"
	"github.com/volanogo/volanogo/internal/sysinfo"
	"github.com/volanogo/volanogo/pkg/protocol"
)

// LeakSettle is how long a churn run waits, after its last sequence, for
// the server's open connections, goroutines and descriptors to come back
// to what they were before the run; what is still above then is a leak.
var LeakSettle = 5 * time.Second

// churn is the connection-churn scenario (results.ScenarioChurn): every
// user repeats a sequence Count times, connect → Access → EnterRoom → one
// chat (until its confirm) → ExitRoom → RoomList (until its confirm) →
// close. At most Config.ConnectConcurrency sequences run at once, and new
// connections start at most Config.ConnectRate per second. There is no
// untimed set-up: the timed phase is the whole run. Each sequence is timed
// from connect to close; each user's first one (cold: new room, first
// connection of the run) goes to Churn.First, the others to
// Latency[sequence]. Then the server's metrics are read until they settle
// back to their values before the run (at most LeakSettle); what is left
// is a leak and fails the run.
func (rs *runState) churn(ctx context.Context, doc *results.Document, spec runSpec, srv serverProbe, before serverSample) (*results.Document, error) {
	cfg := rs.cfg
	doc.Config.Scenario = results.ScenarioChurn
	if err := rs.waitStart(ctx, cfg, spec, doc); err != nil {
		now := time.Now()
		doc.TimedStart, doc.TimedEnd = now, now
		doc.Interrupted = ctx.Err() != nil
		if !doc.Interrupted {
			rs.fail(err)
		}
		rs.finishChurn(doc, 0, nil, nil, nil)
		if cfg.Gate != nil {
			cfg.Gate.Ended()
		}
		return doc, nil
	}

	var (
		mu    sync.Mutex
		first = results.NewHistogram()
		later = results.NewHistogram()
		seqs  int64
	)
	watchDone := make(chan struct{})
	watchEnded := make(chan struct{})
	go func() {
		defer close(watchEnded)
		select {
		case <-ctx.Done():
			rs.abort()
		case <-watchDone:
		}
	}()
	sem := make(chan struct{}, cfg.ConnectConcurrency)
	cu0, cs0 := sysinfo.CPUTimes()
	tcp0 := sysinfo.ReadTCPCounters()
	begin := time.Now()
	rs.base = nanotime()
	rs.timeline = results.NewTimelineRecorder(begin)
	var wg sync.WaitGroup
	for _, r := range rs.rooms {
		for _, u := range r.users {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < cfg.Count; i++ {
					select {
					case sem <- struct{}{}:
					case <-rs.abortCh:
						return
					}
					d, err := u.sequence(ctx)
					<-sem
					if err != nil {
						if !rs.aborted.Load() {
							rs.fail(err)
							rs.abort()
						}
						return
					}
					h := later
					if i == 0 {
						h = first
					}
					mu.Lock()
					_ = h.RecordValue(min(int64(d), results.HistogramHighest))
					seqs++
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	end := time.Now()
	close(watchDone)
	<-watchEnded
	cu1, cs1 := sysinfo.CPUTimes()
	tcp1 := sysinfo.ReadTCPCounters()
	doc.Interrupted = ctx.Err() != nil
	doc.TimedStart, doc.TimedEnd = begin, end
	doc.Client = results.Usage{CPUUserSeconds: max(0, cu1-cu0), CPUSystemSeconds: max(0, cs1-cs0)}
	doc.TCP = sysinfo.TCPDelta(tcp0, tcp1)
	if cfg.Gate != nil {
		cfg.Gate.Ended()
	}
	rs.closeLinks()
	var after serverSample
	if srv != nil {
		after = settle(context.WithoutCancel(ctx), srv, before)
	}
	doc.Churn = &results.Churn{Sequences: seqs}
	if first.TotalCount() > 0 {
		doc.Churn.First, _ = results.EncodeHistogram(first)
	}
	rs.finishChurn(doc, end.Sub(begin).Milliseconds(), later, &before, &after)
	return doc, nil
}

// settle samples the server until its connections, goroutines and
// descriptors are back to before's (or LeakSettle has passed) and
// returns the last sample.
func settle(ctx context.Context, srv serverProbe, before serverSample) serverSample {
	deadline := time.Now().Add(LeakSettle)
	for {
		s := srv.sample(ctx)
		if !s.ok || !before.ok || (s.open <= before.open && s.goroutines <= before.goroutines && s.openFDs <= before.openFDs) {
			return s
		}
		if time.Now().After(deadline) {
			return s
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// leaks fills c's leaks from the server's state before and after the run.
func leaks(c *results.Churn, before, after serverSample) {
	if !before.ok || !after.ok {
		return
	}
	if before.hasOpen && after.hasOpen {
		c.LeakedConnections = max(0, after.open-before.open)
	}
	if before.goroutines > 0 && after.goroutines > 0 {
		c.LeakedGoroutines = max(0, after.goroutines-before.goroutines)
	}
	if before.openFDs > 0 && after.openFDs > 0 {
		c.LeakedFDs = max(0, after.openFDs-before.openFDs)
	}
}

// leakFailure is the failure for a churn run's leaks, "" if none.
func leakFailure(c *results.Churn) string {
	if c.LeakedConnections == 0 && c.LeakedGoroutines == 0 && c.LeakedFDs == 0 {
		return ""
	}
	return fmt.Sprintf("after %d sequences the server still has %d more connections open, %d more goroutines and %d more descriptors than before the run",
		c.Sequences, c.LeakedConnections, c.LeakedGoroutines, c.LeakedFDs)
}

// finishChurn fills a churn run's document.
func (rs *runState) finishChurn(doc *results.Document, elapsedMs int64, later *hdrhistogram.Histogram, before, after *serverSample) {
	doc.Ended = time.Now()
	doc.ElapsedSeconds = float64(elapsedMs) / 1000
	if doc.Churn == nil {
		doc.Churn = &results.Churn{}
	}
	var c results.Counts
	for _, r := range rs.rooms {
		for _, u := range r.users {
			c.Sent += u.sent
			c.Received += u.received
			c.Confirms += u.confirms
		}
	}
	c.Total = c.Sent + c.Received
	doc.Counts = c
	if later != nil && later.TotalCount() > 0 {
		if e, err := results.EncodeHistogram(later); err == nil {
			doc.Latency = map[string]*results.Histogram{results.LatencySequence: e}
		}
	}
	if rs.timeline != nil {
		rs.timeline.Add(doc.TimedEnd, 0, 0)
		doc.Timeline = rs.timeline.Timeline()
	}
	doc.Connections = results.Connections{Attempted: rs.attempted.Load(), Established: rs.established.Load(), Peak: rs.peak.Load()}
	doc.Client.PeakRSSBytes = sysinfo.PeakRSS()
	if before != nil && after != nil && before.ok && after.ok {
		doc.Server = serverUsage(*before, *after, doc.ElapsedSeconds, c.Total)
		doc.Server.Goroutines, doc.Server.OpenFDs = after.goroutines, after.openFDs
		leaks(doc.Churn, *before, *after)
	}
	if doc.ElapsedSeconds > 0 {
		doc.Churn.SequencesPerSecond = float64(doc.Churn.Sequences) / doc.ElapsedSeconds
	}
	if !rs.aborted.Load() && !doc.Interrupted {
		if want := int64(len(rs.rooms)) * int64(rs.cfg.Users) * int64(rs.cfg.Count); doc.Churn.Sequences != want {
			rs.failures.Add(results.FailIntegrity, fmt.Sprintf("%d sequences completed, %d expected", doc.Churn.Sequences, want), time.Now())
		}
		if msg := leakFailure(doc.Churn); msg != "" {
			rs.failures.Add(results.FailLeak, msg, time.Now())
		}
	}
	doc.Failures = rs.failures.List()
	rs.annotate(doc.Failures)
	doc.Derive()
}

// sequence is one churn sequence of user u on a new connection; it
// returns the sequence's time.
func (u *user) sequence(ctx context.Context) (time.Duration, error) {
	r := u.r
	rs := r.rs
	if err := rs.limit.wait(ctx); err != nil {
		return 0, err
	}
	if rs.aborted.Load() {
		return 0, errAborted
	}
	t0 := time.Now()
	rs.attempted.Add(1)
	l, err := rs.dialer.dial(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		kind, what := results.Classify(err), "connect"
		if kind == results.FailOpenFiles {
			what = fmt.Sprintf("connect (open-files limit %d, %d connections open)", openFilesSoft(), rs.open.Load())
		}
		return 0, &userError{u: u, kind: kind, what: what, err: err}
	}
	if !rs.addLink(l) {
		_ = l.close()
		return 0, errAborted
	}
	defer rs.dropLink(l)
	u.l = l
	u.rd = protocol.NewReader(l, maxPacket)
	deadline := time.Now().Add(rs.cfg.StallTimeout)
	_ = l.setReadDeadline(deadline)
	_ = l.setWriteDeadline(deadline)
	steps := []struct {
		send [][]byte
		what string
		want func(protocol.Frame) bool
	}{
		{[][]byte{r.access}, "Access confirm", isConfirm(protocol.IDAccess)},
		{[][]byte{u.enter}, "EnterRoom confirm", isConfirm(protocol.IDEnterRoom)},
		{[][]byte{u.chat}, "Chat confirm", isConfirm(protocol.IDChat)},
		{[][]byte{u.exit, u.roomList}, "RoomList confirm", isConfirm(protocol.IDRoomList)},
	}
	for _, st := range steps {
		for _, pkt := range st.send {
			if err := l.write(pkt); err != nil {
				return 0, u.failIO("send for "+st.what, err)
			}
		}
		f, err := u.churnAwait(st.what, st.want)
		if err != nil {
			return 0, err
		}
		switch f.ID {
		case protocol.IDAccess:
			p, err := f.Decode()
			if err != nil {
				return 0, u.failIO("read Access confirm", err)
			}
			if res := p.(*protocol.Access).Result; res != protocol.AccessOK {
				return 0, &userError{u: u, kind: results.FailDenied, what: fmt.Sprintf("Access denied (result %d)", res)}
			}
		case protocol.IDEnterRoom:
			p, err := f.Decode()
			if err != nil {
				return 0, u.failIO("read EnterRoom confirm", err)
			}
			if res := p.(*protocol.EnterRoom).Result; res != protocol.EnterOK {
				return 0, &userError{u: u, kind: results.FailDenied, what: fmt.Sprintf("unable to enter %s (result %d)", r.name, res)}
			}
		case protocol.IDChat:
			u.sent++
			u.confirms++
			rs.timeline.AddElapsed(time.Duration(nanotime()-rs.base), 1, 0)
		}
		r.progress.Add(1)
	}
	return time.Since(t0), nil
}

func isConfirm(id protocol.ID) func(protocol.Frame) bool {
	return func(f protocol.Frame) bool { return f.ID == id && f.Type == protocol.Confirm }
}

// churnAwait reads packets until want accepts one, counting the chats of
// the other users in the room, answering Pings and failing on a
// StreamableError or a packet the sequence does not expect.
func (u *user) churnAwait(what string, want func(protocol.Frame) bool) (protocol.Frame, error) {
	for {
		f, err := u.rd.Next()
		if err != nil {
			return f, u.failIO("waiting for "+what, err)
		}
		u.seen(f)
		if want(f) {
			return f, nil
		}
		if f.ID != protocol.IDChat {
			if err := u.aside(f, what); err != nil {
				return f, err
			}
			continue
		}
		if f.Type != protocol.Indication {
			return f, u.protocolError("unexpected Chat %s while waiting for %s", f.Type, what)
		}
		u.received++
		rs := u.r.rs
		rs.timeline.AddElapsed(time.Duration(nanotime()-rs.base), 0, 1)
	}
}

// dropLink closes a churn connection and forgets it.
func (rs *runState) dropLink(l *link) {
	_ = l.close()
	rs.linksMu.Lock()
	for i := len(rs.links) - 1; i >= 0; i-- {
		if rs.links[i] == l {
			last := len(rs.links) - 1
			rs.links[i] = rs.links[last]
			rs.links[last] = nil
			rs.links = rs.links[:last]
			rs.open.Add(-1)
			break
		}
	}
	rs.linksMu.Unlock()
}
