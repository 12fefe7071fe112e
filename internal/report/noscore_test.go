package report

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volanogo/volanogo/internal/results"
)

// short is a passed turn-taking run whose timed phase lasted under one
// second: Mark gives it no score, so its document says 0.
func short(label string, conns, run int) *results.Document {
	d := doc(label, conns, run, 1, "")
	d.Score, d.ElapsedSeconds = 0, 0.412
	return d
}

func scaleTexts(r *Report) map[string]string {
	got := map[string]string{}
	for _, row := range r.Scale.Rows {
		var cells []string
		for _, c := range row.Cells {
			cells = append(cells, c.Text())
		}
		got[row.Platform] = strings.Join(cells, "|") + "|" + row.Limit.Text()
	}
	return got
}

// TestUnderOneSecondHasNoScore: a step whose runs lasted under one second
// prints "----" with a footnote, never a score of 0, and does not stop the
// steps above it.
func TestUnderOneSecondHasNoScore(t *testing.T) {
	var docs []*results.Document
	for run := 1; run <= 4; run++ {
		docs = append(docs, short("q", 300, run), doc("q", 600, run, 2000+int64(run), ""),
			doc("p", 300, run, 3000, ""), doc("p", 600, run, 2900, ""))
	}
	r, err := Build(docs, DefaultOptions())
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"p": "3,000|2,900|≥ 600", "q": "----a|2,004|≥ 600"}, scaleTexts(r))
	c := r.Scale.Rows[1].Cells[0]
	assert.True(t, c.NoScore)
	assert.False(t, c.Failed)
	assert.False(t, r.Scale.Rows[1].Cells[1].AfterFailure, "a step without a score is no failure")
	assert.Equal(t, "----a; ----a; ----a", c.ResultsText())
	assert.Empty(t, c.SpreadText())
	require.Len(t, r.Footnotes, 1)
	assert.Equal(t, "Ran under 1 second: no score (raise -count).", r.Footnotes[0].Text)
	assert.Equal(t, []string{"q at 300 connections"}, r.Footnotes[0].Where)
	// "Is it fast?" goes where both platforms have a score.
	assert.Equal(t, int64(600), r.Fast.Connections)

	for _, f := range Formats {
		out := string(render(t, r, f))
		assert.NotContains(t, out, "q,300,score", f)
		assert.NotRegexp(t, `\b0a\b`, out, f)
	}
	csv := string(render(t, r, "csv"))
	assert.Contains(t, csv, "scale,q,300,cell,----a\n")
	assert.Contains(t, csv, "scale,q,300,run 2,----a\n")
	html := string(render(t, r, "html"))
	assert.Contains(t, html, `class="n noscore">----a<`)
	assert.Contains(t, html, "q at 300 connections: ----a (no score)")

	// At the fast step, the platform without a score comes last.
	r, err = Build(docs, Options{Discard: 1, Best: 2, Of: 3, Step: 300})
	require.NoError(t, err)
	assert.Equal(t, []string{"p", "q"}, r.Platforms)
	assert.Equal(t, "----a", r.Fast.Rows[1].Cell.Text())
	assert.Empty(t, r.Fast.Rows[1].Cell.SpreadText())
}

func TestUnderOneSecondMixed(t *testing.T) {
	for _, c := range []struct {
		name    string
		runs    []*results.Document // runs 2, 3, 4 (run 1 is discarded)
		text    string
		results string
		notes   int
	}{
		// Two runs with a score are enough for best 2 of 3: the short one
		// is cited but does not count as 0.
		{"two scored", []*results.Document{doc("m", 900, 2, 1897, ""), short("m", 900, 3), doc("m", 900, 4, 1901, "")},
			"1,899a", "1,897; ----a; 1,901", 1},
		// One score is not the average of the best two.
		{"one scored", []*results.Document{short("m", 900, 2), doc("m", 900, 3, 1900, ""), short("m", 900, 4)},
			"----a", "----a; 1,900; ----a", 1},
		// A failure and a short run: too few scores, both cited.
		{"failed and short", []*results.Document{doc("m", 900, 2, 0, results.FailReset), doc("m", 900, 3, 1900, ""), short("m", 900, 4)},
			"----ab", "----a; 1,900; ----b", 2},
		// Two failures: the cell failed (whatever the short run).
		{"failed", []*results.Document{doc("m", 900, 2, 0, results.FailReset), doc("m", 900, 3, 0, results.FailReset), short("m", 900, 4)},
			"----ab", "----a; ----a; ----b", 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			docs := append([]*results.Document{doc("m", 900, 1, 1000, "")}, c.runs...)
			r, err := Build(docs, DefaultOptions())
			require.NoError(t, err)
			cell := r.Fast.Rows[0].Cell
			assert.Equal(t, c.text, cell.Text())
			assert.Equal(t, c.results, cell.ResultsText())
			assert.Len(t, r.Footnotes, c.notes)
			if !cell.HasScore() {
				assert.Zero(t, cell.Score)
			}
		})
	}
}

// TestNoScoreWithoutShortRun: a passed run of a second or more whose
// document has no score is not taken for a score of 0 either.
func TestNoScoreWithoutShortRun(t *testing.T) {
	d := doc("x", 300, 1, 1, "")
	d.Score = 0
	r, err := Build([]*results.Document{d}, Options{Discard: 0, Best: 1, Of: 1})
	require.NoError(t, err)
	assert.Equal(t, "----a", r.Fast.Rows[0].Cell.Text())
	assert.Equal(t, "Passed, but the result document has no score.", r.Footnotes[0].Text)
}

// TestNoScoreNoGain: a processor count without a score has no gain.
func TestNoScoreNoGain(t *testing.T) {
	var docs []*results.Document
	for run := 1; run <= 2; run++ {
		one := doc("g", 1000, run, 900, "")
		one.Config.ServerCPUs = 1
		two := short("g", 1000, run)
		two.Config.ServerCPUs = 2
		two.RunID += "-2"
		docs = append(docs, one, two)
	}
	r, err := Build(docs, Options{Discard: 1, Best: 1, Of: 1})
	require.NoError(t, err)
	require.NotNil(t, r.Processors)
	cells := r.Processors.Rows[0].Cells
	assert.Equal(t, "900", cells[0].Text())
	assert.Equal(t, "----a", cells[1].Text())
	assert.Nil(t, cells[1].GainPercent)
}
