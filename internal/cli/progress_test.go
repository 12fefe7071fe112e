package cli

import (
	"math"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volanogo/volanogo/internal/campaign"
	"github.com/volanogo/volanogo/internal/swarm"
)

// TestProgressText: the line says done of total with a percentage, the
// rate and the time left once two redraws give a rate, and the set-up's
// rooms and connections; separators make large counts readable.
func TestProgressText(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	running := func(done int64) campaign.Progress {
		return campaign.Progress{Snapshot: swarm.Snapshot{Phase: swarm.PhaseTimed, Open: 19000,
			Sent: done / 20, Received: done - done/20, Expected: 38_000_000}}
	}
	var rate rateMeter
	assert.Equal(t, "running: 1,000,000 of 38,000,000 (2%); 19,000 connections",
		progressText(running(1_000_000), &rate, nil, t0), "no rate before a second redraw")
	assert.Equal(t, "running: 2,000,000 of 38,000,000 (5%), 1,000,000/s, 36s left; 19,000 connections",
		progressText(running(2_000_000), &rate, nil, t0.Add(time.Second)))

	setup := campaign.Progress{Snapshot: swarm.Snapshot{Phase: swarm.PhaseSetup, Rooms: 950, RoomsReady: 120, Open: 2400},
		Shards: 2, ShardsReady: 1}
	assert.Equal(t, "set-up: 120 of 950 rooms, 2,400 connections, 2 shard processes (1 running, 0 ended)",
		progressText(setup, &rateMeter{}, nil, t0))

	open := campaign.Progress{Snapshot: swarm.Snapshot{Phase: swarm.PhaseTimed, Sent: 5, Received: 95}}
	assert.Equal(t, "running: 100 messages; 0 connections", progressText(open, &rateMeter{}, nil, t0),
		"no total known (a run with a duration): no percentage, no time left")
}

// TestRateSmoothed: the rate is weighted over several seconds, so that one
// second at five times the pace moves it and the time left a little,
// where a one-second window jumped (2m48s, 26s, 1m41s within seconds);
// a steady pace gives that pace exactly, from the first interval on.
func TestRateSmoothed(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var r rateMeter
	_, ok := r.update(0, t0)
	assert.False(t, ok, "one sample: no rate")
	var total int64
	for i := 1; i <= 10; i++ {
		total += 1000
		v, ok := r.update(total, t0.Add(time.Duration(i)*time.Second))
		require.True(t, ok)
		assert.InDelta(t, 1000, v, 1e-6, "a steady pace, second %d", i)
	}
	total += 5000
	v, _ := r.update(total, t0.Add(11*time.Second))
	// The second's weight is 1-e^(-1/5) of the 1-e^(-11/5) so far: a fifth.
	assert.InDelta(t, 1000+4000*(1-math.Exp(-0.2))/(1-math.Exp(-2.2)), v, 1e-6)
	assert.Less(t, v, 1900.0, "a one-second window said 5,000/s")
	spike := v
	total += 1000
	v, _ = r.update(total, t0.Add(12*time.Second))
	assert.Less(t, v, spike)
	assert.Greater(t, v, 1000.0, "and it fades over the next seconds")

	// Two redraws 2.5 s apart weigh as much as their span.
	var a rateMeter
	a.update(0, t0)
	a.update(2500, t0.Add(2500*time.Millisecond))
	v, _ = a.update(2500+4000, t0.Add(3500*time.Millisecond))
	assert.InDelta(t, 1000+3000*(1-math.Exp(-0.2))/(1-math.Exp(-0.7)), v, 1e-6)

	// A count that goes down (another run) starts the rate again.
	v, ok = r.update(10, t0.Add(13*time.Second))
	assert.False(t, ok)
	assert.Zero(t, v)
}

// TestCampaignETA: the time left to a campaign's end is the current run's
// plus the weight of the runs left (their rooms) at the pace of the runs
// done, set-ups included; before a run is done, the current run's pace.
func TestCampaignETA(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var e campaignETA
	e.plan([]int{5, 10, 15}, 0, true) // -rooms 5,10,15 -runs 2: 6 runs, weight 60
	e.runStarting(campaign.RunInfo{Rooms: 5, Run: 1, Runs: 2}, t0)
	_, ok := e.left(t0.Add(time.Second), 0, false)
	assert.False(t, ok, "nothing tells the pace yet")
	l, ok := e.left(t0.Add(4*time.Second), 6*time.Second, true)
	require.True(t, ok)
	assert.Equal(t, 116*time.Second, l, "2 s a room-run from this run: 6 s + 55 × 2 s")
	e.runDone(t0.Add(10 * time.Second))

	e.runStarting(campaign.RunInfo{Rooms: 5, Run: 2, Runs: 2}, t0.Add(10*time.Second))
	l, _ = e.left(t0.Add(12*time.Second), 6*time.Second, true)
	assert.Equal(t, 106*time.Second, l, "6 s + (60 - 5 - 5) × 2 s")
	l, _ = e.left(t0.Add(12*time.Second), 0, false)
	assert.Equal(t, 108*time.Second, l, "in the set-up: this run's share at the pace, less its 2 s so far")
	e.runDone(t0.Add(20 * time.Second))

	// A retry is a run more.
	e.runStarting(campaign.RunInfo{Rooms: 10, Run: 1, Runs: 2}, t0.Add(20*time.Second))
	e.runDone(t0.Add(40 * time.Second))
	e.runStarting(campaign.RunInfo{Rooms: 10, Run: 1, Runs: 2, Attempt: 2}, t0.Add(40*time.Second))
	l, _ = e.left(t0.Add(40*time.Second), 20*time.Second, true)
	assert.Equal(t, 20*time.Second+(70-20-10)*2*time.Second, l)

	// The line shows it, before the connections.
	p := campaign.Progress{Snapshot: swarm.Snapshot{Phase: swarm.PhaseTimed, Open: 200, Sent: 100, Received: 1900, Expected: 4000}}
	var r rateMeter
	r.update(0, t0.Add(41*time.Second))
	assert.Equal(t, "running: 2,000 of 4,000 (50%), 2,000/s, 1s left (all runs 1m21s); 200 connections",
		progressText(p, &r, &e, t0.Add(42*time.Second)))

	// One run, or a search of the limit (no plan): none.
	var one campaignETA
	one.plan([]int{50}, 0, true)
	one.runStarting(campaign.RunInfo{Rooms: 50, Run: 1, Runs: 1}, t0)
	_, ok = one.left(t0.Add(time.Second), time.Second, true)
	assert.False(t, ok)
	var search campaignETA
	search.runStarting(campaign.RunInfo{Rooms: 50, Run: 1, Runs: 4}, t0)
	_, ok = search.left(t0.Add(time.Second), time.Second, true)
	assert.False(t, ok)
	var none *campaignETA
	_, ok = none.left(t0, time.Second, true)
	assert.False(t, ok)
}

// TestProgressFits: a line longer than the terminal is cut to its width
// (less one column, so the cursor never wraps), ending in an ellipsis.
func TestProgressFits(t *testing.T) {
	long := "running: 2,000,000 of 38,000,000 messages (5%), 1,000,000/s, 36s left; 19,000 connections, 2 shard processes (2 running, 0 ended)"
	for _, width := range []int{20, 40, 79, 200} {
		got := fit(long, width)
		assert.LessOrEqual(t, utf8.RuneCountInString(got), width)
		if utf8.RuneCountInString(long) > width {
			assert.Equal(t, '…', []rune(got)[utf8.RuneCountInString(got)-1])
		} else {
			assert.Equal(t, long, got)
		}
	}
	assert.Equal(t, "-1,234,567", count(-1234567))
	assert.Equal(t, "999", count(999))
}
