package swarm

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

// churn is the connection-churn scenario (results.ScenarioChurn): every
// user repeats a sequence Count times, connect → Access → EnterRoom → one
// chat (until its confirm) → ExitRoom → RoomList (until its confirm) →
// close. At most Spec.ConnectConcurrency sequences run at once, and new
// connections start at most Spec.ConnectRate per second. There is no
// untimed set-up: the timed phase is the whole run (after the observer's
// start). Each sequence is timed from connect to close; each user's first
// one (cold: new room, first connection of the run) goes to Churn.First,
// the others to Latency[sequence]. Whether the server leaked what the
// sequences left is for the caller, who can read the server, to check.
func (rs *runState) churn(ctx context.Context, doc *results.Document, obs Observer) *results.Document {
	cfg := rs.spec
	if err := rs.waitStart(ctx, obs); err != nil {
		now := time.Now()
		doc.TimedStart, doc.TimedEnd = now, now
		doc.Interrupted = ctx.Err() != nil
		if !doc.Interrupted {
			rs.fail(err)
		}
		rs.enter(obs, PhaseEnded)
		rs.finishChurn(doc, 0, nil)
		return doc
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
	rs.startTimeline(begin)
	rs.enter(obs, PhaseTimed)
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
	rs.enter(obs, PhaseEnded)
	rs.closeLinks()
	doc.Churn = &results.Churn{Sequences: seqs}
	if first.TotalCount() > 0 {
		doc.Churn.First, _ = results.EncodeHistogram(first)
	}
	rs.finishChurn(doc, end.Sub(begin).Milliseconds(), later)
	return doc
}

// finishChurn fills a churn run's document.
func (rs *runState) finishChurn(doc *results.Document, elapsedMs int64, later *hdrhistogram.Histogram) {
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
	if doc.ElapsedSeconds > 0 {
		doc.Churn.SequencesPerSecond = float64(doc.Churn.Sequences) / doc.ElapsedSeconds
	}
	if !rs.aborted.Load() && !doc.Interrupted {
		if want := int64(len(rs.rooms)) * int64(rs.spec.Users) * int64(rs.spec.Count); doc.Churn.Sequences != want {
			rs.failures.Add(results.FailIntegrity, fmt.Sprintf("%d sequences completed, %d expected", doc.Churn.Sequences, want), time.Now())
		}
	}
	doc.Failures = rs.failures.List()
	doc.Derive()
}

// sequence is one churn sequence of user u on a new connection; it
// returns the sequence's time.
func (u *user) sequence(ctx context.Context) (time.Duration, error) {
	r := u.r
	rs := r.rs
	t0 := time.Now()
	l, err := u.connect(ctx)
	if err != nil {
		return 0, err
	}
	defer rs.dropLink(l)
	deadline := time.Now().Add(rs.spec.StallTimeout)
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
		f, err := u.await(st.what, st.want)
		if err != nil {
			return 0, err
		}
		switch f.ID {
		case protocol.IDAccess, protocol.IDEnterRoom:
			if err := u.confirmed(f); err != nil {
				return 0, err
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
