package cli

import (
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"

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
	assert.Equal(t, "running: 1,000,000 of 38,000,000 messages (2%), 19,000 connections",
		progressText(running(1_000_000), &rate, t0), "no rate before a second redraw")
	assert.Equal(t, "running: 2,000,000 of 38,000,000 messages (5%), 1,000,000/s, 36s left, 19,000 connections",
		progressText(running(2_000_000), &rate, t0.Add(time.Second)))

	setup := campaign.Progress{Snapshot: swarm.Snapshot{Phase: swarm.PhaseSetup, Rooms: 950, RoomsReady: 120, Open: 2400},
		Shards: 2, ShardsReady: 1}
	assert.Equal(t, "set-up: 120 of 950 rooms, 2,400 connections, 2 shard processes (1 running, 0 ended)",
		progressText(setup, &rateMeter{}, t0))

	open := campaign.Progress{Snapshot: swarm.Snapshot{Phase: swarm.PhaseTimed, Sent: 5, Received: 95}}
	assert.Equal(t, "running: 100 messages, 0 connections", progressText(open, &rateMeter{}, t0),
		"no total known (a run with a duration): no percentage, no time left")
}

// TestProgressFits: a line longer than the terminal is cut to its width
// (less one column, so the cursor never wraps), ending in an ellipsis.
func TestProgressFits(t *testing.T) {
	long := "running: 2,000,000 of 38,000,000 messages (5%), 1,000,000/s, 36s left, 19,000 connections, 2 shard processes (2 running, 0 ended)"
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
