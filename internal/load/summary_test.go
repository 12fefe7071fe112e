package load

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/volanogo/volanogo/internal/results"
)

// A run under one second has no score: it is neither a score of 0 in the
// median nor one of the best two.
func TestSummarizeSkipsRunsWithoutScore(t *testing.T) {
	doc := func(run int, score int64) *results.Document {
		return &results.Document{Run: run, Passed: true, Score: score, Discarded: run == 1}
	}
	s := summarize(15, []*results.Document{doc(1, 0), doc(2, 0), doc(3, 400000), doc(4, 500000)})
	assert.Equal(t, int64(450000), s.Tally.Score)
	assert.Equal(t, 450000.0, s.Tally.Median)

	s = summarize(15, []*results.Document{doc(1, 0), doc(2, 0), doc(3, 0), doc(4, 598205)})
	assert.Zero(t, s.Tally.Score, "one scored run of three is too few")
	assert.Zero(t, s.Tally.Median)
	assert.True(t, s.Passed)
}
