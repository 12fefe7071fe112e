package results

import (
	"math"
	"sort"
	"sync/atomic"
	"time"
)

// Timeline recorder storage: per-second buckets in chunks allocated on
// first use, never moved, so that recording is lock-free.
const (
	chunkSeconds = 1024
	maxChunks    = 1024
	// MaxRecorderSeconds is how far a TimelineRecorder counts second by
	// second (about 12 days); later messages count in its last second.
	MaxRecorderSeconds = chunkSeconds * maxChunks
)

type timelineBucket struct {
	sent, received atomic.Int64
}

type timelineChunk [chunkSeconds]timelineBucket

// TimelineRecorder counts messages per second of the timed phase. It is safe
// for concurrent use from any number of goroutines, and cheap: a count is
// two atomic additions on the current second's bucket, with no lock (a new
// chunk of 1,024 seconds is allocated once every 17 minutes). Callers that
// count in a tight loop may batch (Add with n > 1).
type TimelineRecorder struct {
	start  time.Time
	last   atomic.Int64 // highest second touched, -1 for none
	chunks [maxChunks]atomic.Pointer[timelineChunk]
}

// NewTimelineRecorder returns a recorder whose second 0 begins at start
// (the timed phase's start, Document.TimedStart).
func NewTimelineRecorder(start time.Time) *TimelineRecorder {
	r := &TimelineRecorder{start: start}
	r.last.Store(-1)
	return r
}

// Start is the recorder's time origin.
func (r *TimelineRecorder) Start() time.Time { return r.start }

// Add counts sent and received messages at time t. A time before the start
// counts in second 0. Add(t, 0, 0) counts nothing but makes the timeline
// reach t (use it at the end of the timed phase so that a quiet tail shows).
func (r *TimelineRecorder) Add(t time.Time, sent, received int64) {
	r.AddElapsed(t.Sub(r.start), sent, received)
}

// AddElapsed is Add at elapsed time d since the start.
func (r *TimelineRecorder) AddElapsed(d time.Duration, sent, received int64) {
	sec := int64(0)
	if d > 0 {
		sec = int64(d / time.Second)
	}
	if sec >= MaxRecorderSeconds {
		sec = MaxRecorderSeconds - 1
	}
	c := r.chunk(sec / chunkSeconds)
	b := &c[sec%chunkSeconds]
	if sent != 0 {
		b.sent.Add(sent)
	}
	if received != 0 {
		b.received.Add(received)
	}
	for {
		l := r.last.Load()
		if sec <= l || r.last.CompareAndSwap(l, sec) {
			break
		}
	}
}

// AddSent counts n messages sent at t.
func (r *TimelineRecorder) AddSent(t time.Time, n int64) { r.Add(t, n, 0) }

// AddReceived counts n messages received at t.
func (r *TimelineRecorder) AddReceived(t time.Time, n int64) { r.Add(t, 0, n) }

func (r *TimelineRecorder) chunk(i int64) *timelineChunk {
	p := &r.chunks[i]
	if c := p.Load(); c != nil {
		return c
	}
	c := new(timelineChunk)
	if p.CompareAndSwap(nil, c) {
		return c
	}
	return p.Load()
}

// Timeline returns the counts so far, from second 0 to the last second
// touched, with the interval doubled (2 s, 4 s, ...) as often as needed to
// keep at most MaxTimelinePoints points. The last point may cover a partial
// interval. It returns nil when nothing was recorded. It may be called while
// counting goes on.
func (r *TimelineRecorder) Timeline() *Timeline {
	last := r.last.Load()
	if last < 0 {
		return nil
	}
	n := int(last + 1)
	sent := make([]int64, n)
	received := make([]int64, n)
	for i := 0; i < n; i++ {
		c := r.chunks[i/chunkSeconds].Load()
		if c == nil {
			i += chunkSeconds - 1 - i%chunkSeconds
			continue
		}
		sent[i] = c[i%chunkSeconds].sent.Load()
		received[i] = c[i%chunkSeconds].received.Load()
	}
	return coarsen(&Timeline{IntervalSeconds: 1, Sent: sent, Received: received}, MaxTimelinePoints)
}

// Totals is the messages counted so far, without building a timeline. It
// may be called while counting goes on.
func (r *TimelineRecorder) Totals() (sent, received int64) {
	last := r.last.Load()
	for i := int64(0); i <= last; i++ {
		c := r.chunks[i/chunkSeconds].Load()
		if c == nil {
			i += chunkSeconds - 1 - i%chunkSeconds
			continue
		}
		sent += c[i%chunkSeconds].sent.Load()
		received += c[i%chunkSeconds].received.Load()
	}
	return sent, received
}

// coarsen doubles t's interval, adding pairs of points, until it has at most
// max points. It reuses t's slices.
func coarsen(t *Timeline, max int) *Timeline {
	for len(t.Sent) > max {
		n := (len(t.Sent) + 1) / 2
		for i := 0; i < n; i++ {
			s, r := t.Sent[2*i], t.Received[2*i]
			if 2*i+1 < len(t.Sent) {
				s += t.Sent[2*i+1]
				r += t.Received[2*i+1]
			}
			t.Sent[i], t.Received[i] = s, r
		}
		t.Sent, t.Received = t.Sent[:n], t.Received[:n]
		t.IntervalSeconds *= 2
	}
	return t
}

// TimelineAt is a timeline with the time its first interval began (the
// document's TimedStart).
type TimelineAt struct {
	Start    time.Time
	Timeline *Timeline
}

// MergeTimelines adds timelines that began at different times (shards of one
// run) into one that begins at the earliest start. The merged interval is
// the largest of the inputs' (coarsened further if needed to keep at most
// MaxTimelinePoints points); each input point is added to the merged
// interval in which it began, so a shard that started 0.4 s late has its
// seconds counted up to a second early. Nil and invalid timelines (see
// Document.Validate) are skipped; with none left the result is nil.
func MergeTimelines(parts ...TimelineAt) (*Timeline, time.Time) {
	var ps []TimelineAt
	for _, p := range parts {
		if p.Timeline != nil && p.Timeline.validate() == nil {
			ps = append(ps, p)
		}
	}
	if len(ps) == 0 {
		return nil, time.Time{}
	}
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].Start.Before(ps[j].Start) })
	start := ps[0].Start
	interval := 0.0
	for _, p := range ps {
		interval = max(interval, p.Timeline.IntervalSeconds)
	}
	// Each input point goes to the merged interval in which it began; the
	// merged timeline ends with the interval of the last such point.
	length := func(interval float64) float64 {
		n := 0.0
		for _, p := range ps {
			if k := len(p.Timeline.Sent); k > 0 {
				off := p.Start.Sub(start).Seconds()
				n = max(n, math.Floor((off+float64(k-1)*p.Timeline.IntervalSeconds)/interval)+1)
			}
		}
		return n
	}
	for length(interval) > MaxTimelinePoints {
		interval *= 2
	}
	n := int(length(interval))
	out := &Timeline{IntervalSeconds: interval, Sent: make([]int64, n), Received: make([]int64, n)}
	for _, p := range ps {
		off := p.Start.Sub(start).Seconds()
		for i := range p.Timeline.Sent {
			k := min(max(int((off+float64(i)*p.Timeline.IntervalSeconds)/interval), 0), n-1)
			out.Sent[k] += p.Timeline.Sent[i]
			out.Received[k] += p.Timeline.Received[i]
		}
	}
	return out, start
}
