package campaign

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volanogo/volanogo/internal/swarm"
)

// TestFindLimitPlan follows the search against a server that holds up to
// limit rooms, with and without what a broken step carried: within 5% in
// at most 8 steps, from either end of the range.
func TestFindLimitPlan(t *testing.T) {
	for _, c := range []struct {
		lo, hi, limit int
		carried       bool
		maxProbes     int
	}{
		{10, 100, 50, true, 4},
		{10, 100, 50, false, 8},
		{1, 1000, 37, false, 8},
		{10, 100, 100, false, 8}, // Hi holds
		{10, 100, 5, false, 8},   // even Lo breaks
		{10, 100, 10, false, 8},  // Lo alone holds
		{2, 3, 2, false, 2},
	} {
		f := &FindLimit{Lo: c.lo, Hi: c.hi}
		require.NoError(t, f.normalize())
		sr := &SearchResult{Users: 20}
		hint := 0
		var probes []int
		for sr.Probes < f.MaxProbes {
			rooms := f.next(sr, hint)
			if rooms == 0 {
				break
			}
			probes = append(probes, rooms)
			sr.Probes++
			carried := 0
			if c.carried && rooms > c.limit {
				carried = c.limit
			}
			hint = f.record(sr, rooms, rooms <= c.limit, carried)
			if f.done(sr) {
				sr.Precise = true
				break
			}
		}
		assert.LessOrEqual(t, len(probes), c.maxProbes, "%+v: %v", c, probes)
		switch {
		case c.limit >= c.hi:
			assert.Equal(t, c.hi, sr.Held, "%+v: %v", c, probes)
			assert.Zero(t, sr.Broke)
		case c.limit < c.lo:
			assert.Zero(t, sr.Held, "%+v: %v", c, probes)
			assert.Equal(t, c.lo, sr.Broke, "%+v: %v", c, probes)
		default:
			require.Positive(t, sr.Held, "%+v: %v", c, probes)
			assert.LessOrEqual(t, sr.Held, c.limit)
			assert.Greater(t, sr.Broke, c.limit)
			assert.LessOrEqual(t, float64(c.limit-sr.Held)/float64(c.limit), 0.05, "%+v: %v", c, probes)
		}
		assert.True(t, sr.Precise, "%+v: %v", c, probes)
	}
}

// TestFindLimitMaxConnections searches a server that takes 30
// connections: 15 rooms of 2 hold, 16 break having carried 30, in a few
// steps thanks to what the broken steps carried.
func TestFindLimitMaxConnections(t *testing.T) {
	checkGoroutines(t)
	serveArgv(t, false)
	cfg := Config{ServerCmd: os.Args[0] + " --listen 127.0.0.1:{port} --metrics-listen 127.0.0.1:0 --max-connections 30",
		Runs: 1, FindLimit: &FindLimit{Lo: 2, Hi: 60},
		Spec: swarm.Spec{Users: 2, Count: 2, StallTimeout: 5 * time.Second}}
	rec := &recorder{}
	res, err := Run(context.Background(), cfg, rec)
	require.NoError(t, err, rec.out())
	require.NotNil(t, res.Search)
	assert.Equal(t, 15, res.Search.Held, "%+v", res.Search)
	assert.Equal(t, 16, res.Search.Broke, "%+v", res.Search)
	assert.True(t, res.Search.Precise)
	assert.LessOrEqual(t, res.Search.Probes, 4, "%+v", res.Search)
	require.Len(t, res.Steps, res.Search.Probes)
	for i, s := range res.Steps {
		d := s.Docs[0]
		require.NotNil(t, d.Search)
		assert.Equal(t, i+1, d.Search.Probe)
		assert.Equal(t, 2, d.Search.Lo)
		assert.Equal(t, 60, d.Search.Hi)
	}
	assert.Contains(t, res.Search.Text(), "the largest step that held is 15 rooms (30 connections); 16 rooms broke")
}
