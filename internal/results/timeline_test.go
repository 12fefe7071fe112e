package results

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTimelineRecorder(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := NewTimelineRecorder(t0)
	assert.Equal(t, t0, r.Start())
	assert.Nil(t, r.Timeline())

	r.Add(t0.Add(-time.Second), 1, 0) // before the start: second 0
	r.AddSent(t0.Add(500*time.Millisecond), 2)
	r.AddReceived(t0.Add(999*time.Millisecond), 38)
	r.AddElapsed(2*time.Second, 3, 57)
	assert.Equal(t, &Timeline{IntervalSeconds: 1, Sent: []int64{3, 0, 3}, Received: []int64{38, 0, 57}}, r.Timeline())

	r.Add(t0.Add(4500*time.Millisecond), 0, 0) // extends without counting
	assert.Equal(t, &Timeline{IntervalSeconds: 1, Sent: []int64{3, 0, 3, 0, 0}, Received: []int64{38, 0, 57, 0, 0}}, r.Timeline())
}

func TestTimelineRecorderConcurrent(t *testing.T) {
	t0 := time.Now()
	r := NewTimelineRecorder(t0)
	var wg sync.WaitGroup
	const goroutines, per = 200, 500
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < per; i++ {
				// Spread over 3,000 seconds: chunks get allocated concurrently.
				r.AddElapsed(time.Duration((g*per+i)%3000)*time.Second, 1, 19)
			}
		}()
	}
	wg.Wait()
	tl := r.Timeline()
	require.NotNil(t, tl)
	assert.Len(t, tl.Sent, 3000)
	var sent, received int64
	for i := range tl.Sent {
		sent += tl.Sent[i]
		received += tl.Received[i]
	}
	assert.Equal(t, int64(goroutines*per), sent)
	assert.Equal(t, int64(goroutines*per*19), received)
}

func TestTimelineCoarsens(t *testing.T) {
	r := NewTimelineRecorder(time.Time{})
	const seconds = 3*MaxTimelinePoints + 5 // 3 h: interval 4 s
	for s := 0; s < seconds; s++ {
		r.AddElapsed(time.Duration(s)*time.Second+time.Millisecond, 1, 2)
	}
	tl := r.Timeline()
	assert.Equal(t, 4.0, tl.IntervalSeconds)
	assert.LessOrEqual(t, len(tl.Sent), MaxTimelinePoints)
	assert.Equal(t, (seconds+3)/4, len(tl.Sent))
	assert.Equal(t, int64(4), tl.Sent[0])
	assert.Equal(t, int64(seconds%4), tl.Sent[len(tl.Sent)-1]) // a partial last interval
	var sum int64
	for _, v := range tl.Received {
		sum += v
	}
	assert.Equal(t, int64(2*seconds), sum)
	require.NoError(t, tl.validate())

	// Far past the recorder's range: counted in its last second.
	r2 := NewTimelineRecorder(time.Time{})
	r2.AddElapsed(100*24*time.Hour, 7, 0)
	tl = r2.Timeline()
	assert.LessOrEqual(t, len(tl.Sent), MaxTimelinePoints)
	assert.Equal(t, int64(7), tl.Sent[len(tl.Sent)-1])
}

func TestMergeTimelines(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a := &Timeline{IntervalSeconds: 1, Sent: []int64{1, 2, 3}, Received: []int64{10, 20, 30}}
	b := &Timeline{IntervalSeconds: 1, Sent: []int64{4, 5}, Received: []int64{40, 50}}
	c := &Timeline{IntervalSeconds: 2, Sent: []int64{6}, Received: []int64{60}}

	m, start := MergeTimelines(TimelineAt{t0.Add(time.Second), b}, TimelineAt{t0, a}, TimelineAt{t0, nil})
	assert.Equal(t, t0, start)
	assert.Equal(t, &Timeline{IntervalSeconds: 1, Sent: []int64{1, 6, 8}, Received: []int64{10, 60, 80}}, m)

	// A shard 0.4 s late counts in the interval in which its seconds began.
	m, _ = MergeTimelines(TimelineAt{t0, a}, TimelineAt{t0.Add(400 * time.Millisecond), b})
	assert.Equal(t, &Timeline{IntervalSeconds: 1, Sent: []int64{5, 7, 3}, Received: []int64{50, 70, 30}}, m)

	// Different intervals: the coarsest wins.
	m, _ = MergeTimelines(TimelineAt{t0, a}, TimelineAt{t0, c})
	assert.Equal(t, &Timeline{IntervalSeconds: 2, Sent: []int64{9, 3}, Received: []int64{90, 30}}, m)

	m, start = MergeTimelines()
	assert.Nil(t, m)
	assert.True(t, start.IsZero())

	// Long and far apart: coarsened to stay within MaxTimelinePoints.
	long := &Timeline{IntervalSeconds: 1, Sent: make([]int64, MaxTimelinePoints), Received: make([]int64, MaxTimelinePoints)}
	long.Sent[0] = 1
	m, _ = MergeTimelines(TimelineAt{t0, long}, TimelineAt{t0.Add(time.Hour), long})
	assert.LessOrEqual(t, len(m.Sent), MaxTimelinePoints)
	assert.Equal(t, 2.0, m.IntervalSeconds)
	assert.Equal(t, int64(1), m.Sent[0])
	assert.Equal(t, int64(1), m.Sent[MaxTimelinePoints/2])
	require.NoError(t, m.validate())
}

func BenchmarkTimelineRecorderAdd(b *testing.B) {
	r := NewTimelineRecorder(time.Now())
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			r.AddElapsed(time.Second, 0, 1)
		}
	})
}

func TestMergeTimelinesOddInput(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a := &Timeline{IntervalSeconds: 1, Sent: []int64{1}, Received: []int64{2}}
	for _, bad := range []*Timeline{
		{IntervalSeconds: 0, Sent: []int64{5}, Received: []int64{5}},
		{IntervalSeconds: 1e-300, Sent: []int64{5}, Received: []int64{5}},
		{IntervalSeconds: 1e300, Sent: []int64{5}, Received: []int64{5}},
		{IntervalSeconds: 1, Sent: []int64{5}, Received: nil},
		{IntervalSeconds: 1, Sent: []int64{-5}, Received: []int64{5}},
	} {
		m, _ := MergeTimelines(TimelineAt{t0, a}, TimelineAt{t0.Add(time.Hour), bad})
		assert.Equal(t, a, m, "%+v is skipped", bad)
	}
	// Shards centuries apart: coarse but bounded.
	m, start := MergeTimelines(TimelineAt{t0, a}, TimelineAt{t0.AddDate(-300, 0, 0), &Timeline{IntervalSeconds: 0.001, Sent: []int64{1}, Received: []int64{1}}})
	assert.Equal(t, t0.AddDate(-300, 0, 0), start)
	assert.LessOrEqual(t, len(m.Sent), MaxTimelinePoints)
	assert.Equal(t, int64(1), m.Sent[0])
	assert.Equal(t, int64(1), m.Sent[len(m.Sent)-1])
}

func TestTimelineTotals(t *testing.T) {
	r := NewTimelineRecorder(time.Unix(0, 0))
	s, rc := r.Totals()
	assert.Zero(t, s)
	assert.Zero(t, rc)
	r.AddElapsed(0, 2, 3)
	r.AddElapsed(5*time.Second, 1, 0)
	r.AddElapsed(3000*time.Second, 0, 4) // a later chunk
	s, rc = r.Totals()
	assert.Equal(t, int64(3), s)
	assert.Equal(t, int64(7), rc)
}
