package report

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volanogo/volanogo/internal/results"
)

// TestFanoutLatency: the fan-out histograms are merged over the counted
// runs beside delivery latency and shown in every format.
func TestFanoutLatency(t *testing.T) {
	docs := readFixtures(t, "integrity")
	r, err := Build(docs, DefaultOptions())
	require.NoError(t, err)
	require.NotNil(t, r.Latency)
	var n int
	for _, row := range r.Latency.Rows {
		require.True(t, row.HasFanout(), row.Platform)
		n++
		counted := 0
		var sent int64
		for _, d := range docs {
			if d.Label == row.Platform && int64(d.Config.Rooms*d.Config.Users) == row.Step && !d.Discarded {
				counted++
				sent += d.Counts.Sent
			}
		}
		assert.Equal(t, 3, counted)
		assert.Equal(t, sent, row.FanoutLast.Count, "one value a broadcast, merged over the counted runs")
		assert.Less(t, row.FanoutFirst.P50, row.P50, "the first receiver before the typical one")
		assert.Greater(t, row.FanoutLast.P50, row.P50, "the last after it")
		assert.Greater(t, row.FanoutLast.P99, row.FanoutLast.P50)
	}
	assert.Equal(t, 4, n)
	text := string(render(t, r, "text"))
	assert.Contains(t, text, "Broadcasts  First p50  First p99  Last p50\n", "split to fit 80 columns")
	assert.Contains(t, text, "Last p99  Spread p50  Spread p99\n")
	md := string(render(t, r, "markdown"))
	assert.Contains(t, md, "| Platform | Step | Broadcasts | First p50 | First p99 | Last p50 | Last p99 | Spread p50 | Spread p99 |")
	html := string(render(t, r, "html"))
	assert.Contains(t, html, `<h3 id="fanout">Fan-out</h3>`)
	assert.Contains(t, html, "go1.26-ledger fan-out last", "the latency chart draws the fan-out beside delivery")
	assert.Contains(t, html, `stroke-dasharray="6 4"`)
	csv := string(render(t, r, "csv"))
	assert.Contains(t, csv, "fanout spread p99 ns")
}

// TestReorderingIsAFootnote: a server that reorders some of a room's
// chats (without --strict-order) gets a footnote on its results, with the
// chats reordered, the share of receivers and the largest displacement;
// its scores stand.
func TestReorderingIsAFootnote(t *testing.T) {
	r, err := Build(readFixtures(t, "integrity"), DefaultOptions())
	require.NoError(t, err)
	var reorder *Footnote
	for i, f := range r.Footnotes {
		if f.Kind == kindReordered {
			reorder = &r.Footnotes[i]
		}
	}
	require.NotNil(t, reorder)
	assert.True(t, strings.HasPrefix(reorder.Text, "Reordered: 3,748 chats (23.2% of receivers), largest displacement 3: "), reorder.Text)
	assert.ElementsMatch(t, []string{"java-original at 900 connections", "java-original at 300 connections"}, reorder.Where)
	for _, row := range r.Fast.Rows {
		c := row.Cell
		assert.True(t, c.HasScore(), row.Platform)
		assert.Equal(t, row.Platform == "java-original", strings.Contains(c.Text(), reorder.Letter), "%s: %s", row.Platform, c.Text())
	}

	// With --strict-order the reordering fails the run and is cited as the
	// failure it is, not as this note.
	var docs []*results.Document
	for run := 1; run <= 4; run++ {
		d := doc("strict", 300, run, 1000, "")
		d.Integrity = &results.Integrity{Reordered: 4, Receivers: 20, ReceiversReordered: 2, StrictOrder: true}
		docs = append(docs, d)
	}
	r, err = Build(docs, DefaultOptions())
	require.NoError(t, err)
	for _, f := range r.Footnotes {
		assert.NotEqual(t, kindReordered, f.Kind)
	}
}

// TestRunWarningsAreFootnotes: a document's warnings (the server's metrics
// could not be read) are footnotes of the cells whose counted runs have
// them.
func TestRunWarningsAreFootnotes(t *testing.T) {
	r, err := Build(readFixtures(t, "integrity"), DefaultOptions())
	require.NoError(t, err)
	var warn *Footnote
	for i, f := range r.Footnotes {
		if f.Kind == kindWarning {
			warn = &r.Footnotes[i]
		}
	}
	require.NotNil(t, warn)
	assert.Equal(t, `Warning: the server's usage is unknown: Get "http://127.0.0.1:9090/metrics": dial tcp 127.0.0.1:9090: connect: connection refused.`, warn.Text)
	assert.Equal(t, []string{"java-original at 900 connections"}, warn.Where)
	text := string(render(t, r, "text"))
	assert.Contains(t, text, warn.Letter+". Warning: the server's usage is unknown")

	// Warnings that differ after their first ": " share one note.
	var docs []*results.Document
	for run := 1; run <= 4; run++ {
		d := doc("w", 300, run, 1000, "")
		d.Warnings = []string{"the server's usage is unknown: dial tcp 127.0.0.1:" + string(rune('0'+run)) + "000: refused"}
		docs = append(docs, d)
	}
	r, err = Build(docs, DefaultOptions())
	require.NoError(t, err)
	require.Len(t, r.Footnotes, 1)
	assert.Contains(t, r.Footnotes[0].Text, "127.0.0.1:2000", "the first counted run's")
}

// TestStormTable: the reconnect storm's recovery, loss, reconnects and
// leaks, per platform.
func TestStormTable(t *testing.T) {
	r, err := Build(readFixtures(t, "storm"), DefaultOptions())
	require.NoError(t, err)
	require.NotNil(t, r.Storm)
	assert.Nil(t, r.Capacity, "a storm is not a capacity step")
	rows := map[string]StormStep{}
	for _, row := range r.Storm.Rows {
		require.Len(t, row.Steps, 1)
		rows[row.Platform] = row.Steps[0]
	}
	g, j := rows["go1.26-linux"], rows["java17-volano"]
	assert.Equal(t, int64(2000), g.Users)
	assert.Equal(t, 3, g.Runs)
	require.NotNil(t, g.RecoverySeconds)
	assert.InDelta(t, 3, *g.RecoverySeconds, 0.5)
	assert.Zero(t, g.NeverRecovered)
	assert.Zero(t, g.Lost)
	assert.False(t, g.Failed)
	require.NotNil(t, g.Reconnect)
	assert.Equal(t, int64(6000), g.Reconnect.Count, "2000 reconnections in each of 3 counted runs")
	require.NotNil(t, g.LeakedFDs)
	assert.Zero(t, *g.LeakedFDs)

	assert.Equal(t, 1, j.NeverRecovered)
	assert.Equal(t, int64(239), j.Lost, "the most any counted run lost")
	require.NotNil(t, j.LeakedFDs)
	assert.Equal(t, int64(6), *j.LeakedFDs)
	assert.Nil(t, j.LeakedGoroutines, "the java server exposes no goroutine count")
	assert.True(t, j.Failed)
	assert.Equal(t, "8.75 s; never in 1 of 3 runs", recoveryText(j))
	assert.Equal(t, "java17-volano: at 2,000 users recovered in 8.75 s, but never in 1 of 3 runs, lost up to 239 chats, left behind 6 FDs",
		stormHeadline(r.Storm.Rows[1]))

	text := string(render(t, r, "text"))
	assert.Contains(t, text, "\nReconnect storm\n===============\n")
	assert.Contains(t, text, "go1.26-linux: at 2,000 users recovered in 3.15 s, lost nothing")
	html := string(render(t, r, "html"))
	assert.Contains(t, html, `<h2 id="storm">Reconnect storm</h2>`)
	assert.Contains(t, html, `<td class="leak">6 FDs</td>`)
	csv := string(render(t, r, "csv"))
	assert.Contains(t, csv, "storm,java17-volano,2000,leaked fds,6")
}

// TestCompareStorm: two platforms' storms are compared by their time to
// recovery, among the other metrics.
func TestCompareStorm(t *testing.T) {
	r, err := Build(readFixtures(t, "storm"), Options{Discard: 1, Compare: [2]string{"go1.26-linux", "java17-volano"}})
	require.NoError(t, err)
	var got []string
	for _, row := range r.Compare.Rows {
		assert.Equal(t, KindStorm, row.Kind)
		got = append(got, row.Metric)
	}
	assert.Contains(t, got, "recovery")
	text := string(render(t, r, "text"))
	assert.Contains(t, text, "2,000 users (storm)  recovery (s)")
}
