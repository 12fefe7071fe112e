package report

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volanogo/volanogo/internal/results"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// doc is a minimal turn-taking document; score 0 means failed with kind.
func doc(label string, conns, run int, score int64, kind string) *results.Document {
	d := &results.Document{
		Schema: results.SchemaVersion, RunID: fmt.Sprintf("%s-%d-%d", label, conns, run), Label: label,
		Config:  results.Config{Scenario: results.ScenarioTurns, Rooms: conns / 20, Users: 20, Count: 100},
		Run:     run,
		Started: t0.Add(time.Duration(conns*100+run) * time.Minute),
		Passed:  score > 0, Score: score, ElapsedSeconds: 10,
		Connections: results.Connections{Attempted: int64(conns), Established: int64(conns), Peak: int64(conns)},
	}
	if score == 0 {
		d.Failures = []results.Failure{{Kind: kind, Count: 1, Example: kind + " example"}}
		d.Connections.Peak = int64(conns) - 7
	}
	return d
}

func TestRunRule(t *testing.T) {
	docs := []*results.Document{
		doc("p", 1000, 1, 500, ""), // discarded
		doc("p", 1000, 2, 1897, ""),
		doc("p", 1000, 3, 1900, ""),
		doc("p", 1000, 4, 1893, ""),
		doc("p", 1000, 5, 9999, ""), // beyond "of 3"
	}
	r, err := Build(docs, DefaultOptions())
	require.NoError(t, err)
	c := r.Fast.Rows[0].Cell
	assert.Equal(t, "1,897; 1,900; 1,893", c.ResultsText())
	assert.Equal(t, int64(1899), c.Score, "(1900+1897)/2 = 1898.5 rounds half up, as the Volano Report's 1899")
	assert.Equal(t, 1897.0, c.Median)
	assert.Equal(t, "1,893–1,900", c.SpreadText())

	// The Discarded mark drops a run too, and the discard counts it.
	docs[0].Discarded = true
	r, err = Build(docs, Options{Discard: 0, Best: 2, Of: 3})
	require.NoError(t, err)
	assert.Equal(t, int64(1899), r.Fast.Rows[0].Cell.Score)

	// A passed run that recorded failures keeps its score and is cited.
	docs[3].Failures = []results.Failure{{Kind: results.FailReset, Count: 36, Example: "read: connection reset by peer"}}
	r, err = Build(docs, DefaultOptions())
	require.NoError(t, err)
	assert.Equal(t, "1,897; 1,900; 1,893a", r.Fast.Rows[0].Cell.ResultsText())
	assert.Equal(t, "1,899a", r.Fast.Rows[0].Cell.Text())
	docs[3].Failures = nil

	// Best 1 of 4, nothing discarded.
	docs[0].Discarded = false
	r, err = Build(docs, Options{Discard: 0, Best: 1, Of: 4})
	require.NoError(t, err)
	assert.Equal(t, int64(1900), r.Fast.Rows[0].Cell.Score)
}

func TestFailedCellsAndFootnotes(t *testing.T) {
	var docs []*results.Document
	for run := 1; run <= 4; run++ {
		docs = append(docs,
			doc("a", 300, run, 2661, ""), doc("a", 600, run, 2387, ""), doc("a", 900, run, 0, results.FailOpenFiles),
			doc("b", 300, run, 2157, ""), doc("b", 600, run, 1901, ""), doc("b", 900, run, 473, ""),
		)
	}
	// One failed run of three: the cell keeps its score and gets the letter.
	docs[len(docs)-1] = doc("b", 900, 4, 0, results.FailReset)
	r, err := Build(docs, DefaultOptions())
	require.NoError(t, err)
	require.NotNil(t, r.Scale)
	assert.Equal(t, []int64{300, 600, 900}, r.Scale.Columns)
	texts := map[string][]string{}
	for _, row := range r.Scale.Rows {
		for _, c := range row.Cells {
			texts[row.Platform] = append(texts[row.Platform], c.Text())
		}
		texts[row.Platform] = append(texts[row.Platform], row.Limit.Text())
	}
	// Letters go in the order the tables cite them: row a (the faster) first.
	assert.Equal(t, []string{"2,661", "2,387", "----a", "893a"}, texts["a"])
	assert.Equal(t, []string{"2,157", "1,901", "473b", "≥ 900"}, texts["b"])
	require.Len(t, r.Footnotes, 2)
	assert.Equal(t, "a", r.Footnotes[0].Letter)
	assert.Equal(t, `Failed with "too many open files" (open_files example).`, r.Footnotes[0].Text)
	assert.Equal(t, []string{"a at 900 connections", "a at its limit"}, r.Footnotes[0].Where)
	assert.Equal(t, `Failed with "connection reset by peer" (reset example).`, r.Footnotes[1].Text)

	// Two failed runs of three: the cell fails.
	docs[len(docs)-7] = doc("b", 900, 3, 0, results.FailReset)
	r, err = Build(docs, DefaultOptions())
	require.NoError(t, err)
	for _, row := range r.Scale.Rows {
		if row.Platform == "b" {
			assert.Equal(t, "----b", row.Cells[2].Text())
		}
	}
	// The fast table then is at 600 connections, where both have a score.
	assert.Equal(t, int64(600), r.Fast.Connections)
}

func TestAfterFailureAndMissing(t *testing.T) {
	var docs []*results.Document
	for run := 1; run <= 2; run++ {
		docs = append(docs, doc("a", 300, run, 100, ""), doc("a", 600, run, 0, results.FailTimeout),
			doc("b", 300, run, 90, ""), doc("b", 900, run, 80, ""))
	}
	r, err := Build(docs, Options{Discard: 1, Best: 1, Of: 1})
	require.NoError(t, err)
	got := map[string]string{}
	for _, row := range r.Scale.Rows {
		s := ""
		for _, c := range row.Cells {
			s += "|" + c.Text()
		}
		got[row.Platform] = s
	}
	assert.Equal(t, "|100|----a|----", got["a"])
	assert.Equal(t, "|90||80", got["b"])
}

func TestGainPerProcessor(t *testing.T) {
	// JavaWorld 1998, SunSoft JDK 1.2 Dev 3 Intel: 902, 1648 (83%), 2208 (34%), 2645 (20%).
	// Microsoft SDK 3.0 P1: 1384, 1827 (32%), 2142 (17%), 2165 (1%).
	for _, c := range []struct {
		a, b int64
		n    int
		want string
	}{
		{902, 1648, 1, "83"}, {1648, 2208, 1, "34"}, {2208, 2645, 1, "20"},
		{1384, 1827, 1, "32"}, {1827, 2142, 1, "17"}, {2142, 2165, 1, "1"},
		{1000, 4000, 2, "100"}, // 1 → 3 processors: ×4 is ×2 per added processor
	} {
		assert.Equal(t, c.want, strconv.FormatFloat(gainPercent(c.a, c.b, c.n), 'f', 0, 64), "%d→%d", c.a, c.b)
	}

	var docs []*results.Document
	for _, cpus := range []int{1, 2, 4} {
		for run := 1; run <= 2; run++ {
			d := doc("p", 1000, run, map[int]int64{1: 902, 2: 1648, 4: 2645}[cpus], "")
			d.Config.ServerCPUs = cpus
			d.RunID += "-" + strconv.Itoa(cpus)
			docs = append(docs, d)
		}
	}
	r, err := Build(docs, Options{Discard: 1, Best: 1, Of: 1})
	require.NoError(t, err)
	require.NotNil(t, r.Processors)
	assert.Equal(t, []int{1, 2, 4}, r.Processors.Columns)
	var texts []string
	for _, pc := range r.Processors.Rows[0].Cells {
		texts = append(texts, pc.Text())
	}
	assert.Equal(t, []string{"902", "1,648 (83%)", "2,645 (27%)"}, texts)
	// The main tables use the most processors.
	assert.Equal(t, int64(2645), r.Fast.Rows[0].Cell.Score)
}

func TestUnknownCPUsJoinTheMainCell(t *testing.T) {
	var docs []*results.Document
	for run := 1; run <= 4; run++ {
		d := doc("p", 1000, run, int64(1000+run), "")
		if run%2 == 0 { // the server's figures were scraped for half the runs
			d.Server = &results.ServerUsage{GOMAXPROCS: 2}
		}
		docs = append(docs, d)
	}
	r, err := Build(docs, DefaultOptions())
	require.NoError(t, err)
	assert.Equal(t, "1,002; 1,003; 1,004", r.Fast.Rows[0].Cell.ResultsText())
	assert.Nil(t, r.Processors)
}

func TestCompareSignificance(t *testing.T) {
	var docs []*results.Document
	for run := 1; run <= 9; run++ {
		docs = append(docs, doc("fast", 1000, run, int64(2000+run), ""), doc("slow", 1000, run, int64(1000+run), ""),
			doc("same", 1000, run, int64(2000+run), ""))
	}
	for _, c := range []struct {
		a, b  string
		delta string
		best  string
	}{
		{"fast", "slow", "-49.90%", "A"}, // the scores: (1003+1004)/2 against (2003+2004)/2
		{"slow", "fast", "+99.60%", "B"},
		{"fast", "same", "~", ""},
	} {
		r, err := Build(docs, Options{Discard: 1, Best: 2, Of: 3, Compare: [2]string{c.a, c.b}})
		require.NoError(t, err)
		row := r.Compare.Rows[0]
		assert.Equal(t, "score", row.Metric)
		assert.Equal(t, 8, row.NA)
		assert.Equal(t, c.delta, row.Delta, "%s vs %s", c.a, c.b)
		assert.Equal(t, c.best, row.Better)
	}
	// Three runs a side can never be significant at 0.05.
	r, err := Build(docs, Options{Discard: 6, Best: 2, Of: 3, Compare: [2]string{"fast", "slow"}})
	require.NoError(t, err)
	assert.Equal(t, "~", r.Compare.Rows[0].Delta)
	assert.True(t, r.Compare.Rows[0].Powerless)
	assert.InDelta(t, 0.1, r.Compare.Rows[0].MinP, 1e-9)
	assert.True(t, r.Compare.Powerless())
	require.Len(t, r.Compare.Warnings, 1)
	assert.Contains(t, r.Compare.Warnings[0], "with 3 runs of A and 3 of B the smallest possible p-value is 0.100")

	// The gate: B worse than A past the threshold is a regression.
	for _, c := range []struct {
		a, b      string
		threshold float64
		want      bool
	}{{"fast", "slow", 5, true}, {"fast", "slow", 60, false}, {"slow", "fast", 5, false}, {"fast", "same", 0, false}} {
		th := c.threshold
		r, err := Build(docs, Options{Discard: 1, Best: 2, Of: 3, Compare: [2]string{c.a, c.b}, Threshold: &th})
		require.NoError(t, err)
		assert.Equal(t, c.want, len(r.Compare.Regressions()) > 0, "%s vs %s past %v%%", c.a, c.b, th)
		assert.False(t, r.Compare.Powerless())
	}

	_, err = Build(docs, Options{Compare: [2]string{"fast", "nosuch"}})
	var ce0 *CompareError
	require.ErrorAs(t, err, &ce0)
}

// TestCompareQuotesTheTables: a figure the comparison shares with another
// table is the same value in both (one A/A report showed 205,648 in "Is it
// fast?" and 193,090 in the comparison: the median of five runs against
// the run rule's best two of three).
func TestCompareQuotesTheTables(t *testing.T) {
	var docs []*results.Document
	scores := []int64{150_000, 205_000, 206_296, 190_000, 193_090}
	for run, sc := range scores {
		docs = append(docs, doc("a", 1000, run+1, sc, ""), doc("b", 1000, run+1, sc+10, ""))
	}
	r, err := Build(docs, Options{Discard: 1, Best: 2, Of: 3, Compare: [2]string{"a", "b"}})
	require.NoError(t, err)
	fa := slices.IndexFunc(r.Fast.Rows, func(x FastRow) bool { return x.Platform == "a" })
	require.GreaterOrEqual(t, fa, 0)
	require.Equal(t, int64(205_648), r.Fast.Rows[fa].Cell.Score)
	require.NotEmpty(t, r.Compare.Rows)
	assert.Equal(t, "score", r.Compare.Rows[0].Metric)
	assert.Equal(t, 205_648.0, r.Compare.Rows[0].A, "the run rule's score, not the median of the runs (199,045)")
	assert.Equal(t, 4, r.Compare.Rows[0].NA, "the test still compares every run after the discard")
	assert.Contains(t, string(render(t, r, "text")), "205,648")

	docs = readFixtures(t, goodDirs...)
	o := DefaultOptions()
	o.Compare = [2]string{"go1.26-linux", "java17-volano"}
	r, err = Build(docs, o)
	require.NoError(t, err)
	checked := map[string]int{}
	for _, row := range r.Compare.Rows {
		for _, side := range []struct {
			name string
			v    float64
		}{{o.Compare[0], row.A}, {o.Compare[1], row.B}} {
			switch row.Metric {
			case "score":
				c := r.Scale.Rows[slices.IndexFunc(r.Scale.Rows, func(x ScaleRow) bool { return x.Platform == side.name })]
				i := slices.Index(r.Scale.Columns, row.Step)
				require.GreaterOrEqual(t, i, 0)
				assert.Equal(t, float64(c.Cells[i].Score), side.v, "%s at %d", side.name, row.Step)
			case "delivery p99":
				for _, l := range r.Latency.Rows {
					if l.Platform == side.name && l.Kind == row.Kind && l.Step == row.Step {
						assert.Equal(t, float64(l.P99)/1e6, side.v)
					}
				}
			case "server CPU/msg":
				for _, l := range r.Cost.Rows {
					if l.Platform == side.name && l.Kind == row.Kind && l.Step == row.Step {
						assert.Equal(t, *l.ServerMicros, side.v)
					}
				}
			case "sequences":
				for _, cr := range r.Churn.Rows {
					for _, st := range cr.Steps {
						if cr.Platform == side.name && st.Users == row.Step {
							assert.Equal(t, st.SequencesPerSecond, side.v)
						}
					}
				}
			}
			checked[row.Metric]++
		}
	}
	for _, m := range []string{"score", "delivery p99", "server CPU/msg", "sequences"} {
		assert.Positive(t, checked[m], m)
	}
	_, err = Build(docs, Options{Compare: [2]string{"go1.26-linux", "nosuch"}})
	var ce *CompareError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "nosuch", ce.Name)
}

func TestMinUTestP(t *testing.T) {
	assert.InDelta(t, 0.1, minUTestP(3, 3), 1e-12)
	assert.InDelta(t, 2.0/70, minUTestP(4, 4), 1e-12)
	assert.InDelta(t, 2.0/35, minUTestP(3, 4), 1e-12, "3 and 4 runs cannot be significant at 0.05 either")
	assert.Equal(t, 4, minRunsASide(0.05))
	assert.Equal(t, 1.0, minUTestP(1, 1))
}

func TestClientBound(t *testing.T) {
	d := doc("p", 1000, 2, 1000, "") // 10 s timed
	d.Environment.CPUs = 2
	d.Config.Host = "10.0.0.2" // the server on another machine
	assert.False(t, clientBound(d), "nothing known")
	d.Client = results.Usage{CPUUserSeconds: 12, CPUSystemSeconds: 6.1} // 181% of 2 CPUs over 10 s
	assert.True(t, clientBound(d), "client saturated its processors, the server's CPU unknown")
	d.Server = &results.ServerUsage{CPUPercent: 80, GOMAXPROCS: 2}
	assert.True(t, clientBound(d), "client saturated, server at 40% of its 2")
	d.Server.CPUPercent = 185
	assert.False(t, clientBound(d), "the server was saturated too: not the client alone")
	d.Server.CPUPercent = 80
	d.Client = results.Usage{CPUUserSeconds: 5, CPUPerMessageMicros: 9}
	d.Server.CPUPerMessageMicros = 4
	assert.False(t, clientBound(d), "costlier per message than the server, but half its processors idle: not the limit")

	// One machine: a full machine is both sides' limit; a client held to
	// fewer processors (GOMAXPROCS) that it filled, beside idle ones, is
	// the limit alone.
	d.Config.Host, d.Config.ServerCommand = "127.0.0.1", []string{"volanogo", "serve"}
	d.Client = results.Usage{CPUUserSeconds: 9, CPUSystemSeconds: 2}        // 110%
	d.Server = &results.ServerUsage{CPUPercent: 75, CPUPerMessageMicros: 4} // 185% together
	assert.False(t, clientBound(d), "the machine was full")
	d.Environment.GOMAXPROCS = 1
	d.Client = results.Usage{CPUUserSeconds: 7, CPUSystemSeconds: 2.5} // 95% of its one processor
	d.Server.CPUPercent = 50                                           // 145% together
	assert.True(t, clientBound(d), "the client filled its one processor, a quarter of the machine idle")
	d.Server.CPUPercent = 90
	assert.False(t, clientBound(d), "185% together: the machine was full")
}

// TestClientBoundFixtures: of two platforms with the same scores, the one
// whose client (on its own machine) was at 95% of its processors while the
// server was at 30% is marked "*", and the one whose server was at 98%
// while the client was at 35% is not; nor is any cell of the fixtures of
// client and server sharing a 2-processor machine, which the machine, not
// the client, limited.
func TestClientBoundFixtures(t *testing.T) {
	r, err := Build(readFixtures(t, "bound"), DefaultOptions())
	require.NoError(t, err)
	require.Len(t, r.Fast.Rows, 2)
	for _, row := range r.Fast.Rows {
		assert.Equal(t, row.Platform == "client-bound", row.Cell.ClientBound, row.Platform)
	}
	text := string(render(t, r, "text"))
	assert.Contains(t, text, "client-bound  143,247; 141,669; 142,502  142,875*")
	assert.Contains(t, text, "server-bound  143,247; 141,669; 142,502   142,875 ")
	assert.Contains(t, text, "* client-bound: the client was the limit")

	r, err = Build(readFixtures(t, goodDirs...), DefaultOptions())
	require.NoError(t, err)
	assert.False(t, r.ClientBound, "no mark where client and server filled one machine together")
}

// Retransmissions past 0.1% of a run's segments are a warning that names
// the cell and the worst run's counters; a run without counters, or with
// fewer retransmissions, none.
func TestRetransmitWarning(t *testing.T) {
	var docs []*results.Document
	for run := 1; run <= 4; run++ {
		docs = append(docs, doc("p", 300, run, 1000, ""), doc("p", 19000, run, 600, ""))
	}
	docs[2].TCP = &results.TCPCounters{SegmentsOut: 1000000, Retransmitted: 1000} // 300 conns, run 2: exactly 0.1%
	docs[5].TCP = &results.TCPCounters{SegmentsOut: 8838336, Retransmitted: 22063, DelayedACKs: 2965978, LossProbes: 23426}
	docs[7].TCP = &results.TCPCounters{SegmentsOut: 8000000, Retransmitted: 8001}
	r, err := Build(docs, DefaultOptions())
	require.NoError(t, err)
	require.Len(t, r.Warnings, 1)
	assert.Equal(t, "p at 19,000 connections: the kernel retransmitted 0.25% of the TCP segments of a run (22,063 of 8,838,336; "+
		"2,965,978 delayed ACKs, 23,426 loss probes): on loopback nothing is lost, so these are delayed ACKs outlasting "+
		`the sender's loss probe (see the README, "Delayed ACKs on loopback")`, r.Warnings[0])

	// A discarded run's retransmissions do not count.
	docs[5].TCP, docs[7].TCP = nil, nil
	docs[1].TCP = &results.TCPCounters{SegmentsOut: 100, Retransmitted: 50} // 19000 conns, run 1: discarded
	r, err = Build(docs, DefaultOptions())
	require.NoError(t, err)
	assert.Empty(t, r.Warnings)
}

// The cost table: medians over the passed counted runs that have each
// figure; a discarded or failed run does not count, a run without the
// figures is skipped rather than counted as 0, and a platform or step
// without any figure has no row.
func TestCostTable(t *testing.T) {
	figures := func(d *results.Document, server, client float64, tcp *results.TCPCounters) *results.Document {
		d.Counts.Total = 1000
		d.Server = &results.ServerUsage{Source: "metrics", CPUPerMessageMicros: server}
		d.Client.CPUPerMessageMicros = client
		d.TCP = tcp
		return d
	}
	docs := []*results.Document{
		// Discarded: its figures must not count.
		figures(doc("p", 1000, 1, 900, ""), 999, 999, &results.TCPCounters{SegmentsOut: 400, Retransmitted: 400, DelayedACKs: 99999}),
		figures(doc("p", 1000, 2, 1900, ""), 4, 2, &results.TCPCounters{SegmentsOut: 400, Retransmitted: 1, DelayedACKs: 500}),
		figures(doc("p", 1000, 3, 1900, ""), 6, 3, &results.TCPCounters{SegmentsOut: 400, Retransmitted: 3, DelayedACKs: 1500}),
		figures(doc("p", 1000, 4, 1900, ""), 100, 10, &results.TCPCounters{SegmentsOut: 400, Retransmitted: 2, DelayedACKs: 1000}),
		// Passed without figures: skipped, not a 0.
		figures(doc("p", 1000, 5, 1900, ""), 0, 0, nil),
		// Failed: not counted.
		figures(doc("p", 1000, 6, 0, results.FailReset), 1000, 1000, &results.TCPCounters{SegmentsOut: 400, Retransmitted: 400, DelayedACKs: 99999}),
		// A step with only the client's CPU, and one with no figure at all.
		figures(doc("p", 2000, 1, 1900, ""), 0, 7, nil),
		figures(doc("p", 2000, 2, 1900, ""), 0, 5, nil),
		doc("p", 3000, 1, 1900, ""), doc("p", 3000, 2, 1900, ""),
		// A platform with no figure at all.
		doc("q", 1000, 1, 1900, ""), doc("q", 1000, 2, 1900, ""),
	}
	f := func(v float64) *float64 { return &v }
	r, err := Build(docs, Options{Discard: 1, Best: 2, Of: 5})
	require.NoError(t, err)
	require.NotNil(t, r.Cost)
	assert.Equal(t, []CostRow{
		{Platform: "p", Kind: KindTurns, Step: 1000, ServerMicros: f(6), ClientMicros: f(3),
			DelayedACKsPerMessage: f(1), RetransmittedPercent: f(0.5)},
		{Platform: "p", Kind: KindTurns, Step: 2000, ClientMicros: f(5)},
	}, r.Cost.Rows)

	text := string(render(t, r, "text"))
	assert.Contains(t, text, "What does a message cost?")
	assert.Contains(t, text, "6.00 µs")
	assert.Contains(t, text, "0.50%")

	// No run has any figure: no table.
	var bare []*results.Document
	for _, d := range docs {
		if d.Label == "q" {
			bare = append(bare, d)
		}
	}
	r, err = Build(bare, DefaultOptions())
	require.NoError(t, err)
	assert.Nil(t, r.Cost)
	assert.NotContains(t, string(render(t, r, "text")), "What does a message cost?")
}

func TestLetters(t *testing.T) {
	assert.Equal(t, "a", letter(0))
	assert.Equal(t, "z", letter(25))
	assert.Equal(t, "aa", letter(26))
	assert.Equal(t, "ab", letter(27))
}

func TestBuildErrors(t *testing.T) {
	_, err := Build(nil, DefaultOptions())
	assert.ErrorIs(t, err, ErrNoDocuments)
	_, err = Build([]*results.Document{nil}, DefaultOptions())
	assert.ErrorIs(t, err, ErrNoDocuments)
	for _, o := range []Options{{Best: 3, Of: 2}, {Best: -1}, {By: "colour"}, {Compare: [2]string{"a", ""}}} {
		assert.Error(t, o.Check(), "%+v", o)
	}
	r, err := Build([]*results.Document{doc("p", 1000, 1, 5, "")}, DefaultOptions())
	require.NoError(t, err)
	assert.Contains(t, r.Warnings[0], "p at 1,000 connections: only 1 run, counted although --discard 1 would drop it")
	assert.Equal(t, int64(5), r.Fast.Rows[0].Cell.Score)
	assert.Error(t, r.Render(&bytes.Buffer{}, "pdf"))

	marked := doc("p", 1000, 1, 5, "")
	marked.Discarded = true
	r, err = Build([]*results.Document{marked}, DefaultOptions())
	require.NoError(t, err)
	assert.Nil(t, r.Fast)
	assert.Contains(t, r.Warnings[0], "every run is marked discarded")

	r, err = Build([]*results.Document{doc("p", 1000, 1, 5, "")}, Options{Step: 777})
	require.NoError(t, err)
	assert.Nil(t, r.Fast)
	assert.Contains(t, r.Warnings[0], "no turn-taking runs at 777 connections (there are runs at 1000)")
}

// TestOddDocuments: documents with missing or odd parts render in every
// format without a panic.
func TestOddDocuments(t *testing.T) {
	empty := &results.Document{Schema: 1, RunID: "x"}
	paced := &results.Document{Schema: 1, RunID: "y", Label: "p", Paced: &results.Paced{Broken: true}}
	churn := &results.Document{Schema: 1, RunID: "z", Label: "c", Config: results.Config{Scenario: results.ScenarioChurn},
		Churn: &results.Churn{}, Interrupted: true}
	badHist := doc("h", 300, 2, 10, "")
	badHist.Latency = map[string]*results.Histogram{results.LatencyDelivery: {HDR: "not base64!", Count: 3, P50: 1, P99: 2, P999: 3, Max: 4}}
	noFailure := doc("n", 300, 2, 0, "")
	noFailure.Failures = nil
	sharded := doc("s", 600, 2, 10, "")
	sharded.Shard = &results.Shard{Index: 0, Count: 2}
	docs := []*results.Document{empty, paced, churn, badHist, noFailure, sharded, doc("h", 600, 2, 20, "")}
	for _, by := range []string{ByLabel, ByServer, ByCPUs} {
		r, err := Build(docs, Options{Discard: 0, By: by, Compare: [2]string{"h", "n"}})
		if by != ByLabel {
			r, err = Build(docs, Options{Discard: 0, By: by})
		}
		require.NoError(t, err)
		for _, f := range Formats {
			var b bytes.Buffer
			require.NoError(t, r.Render(&b, f), f)
			assert.NotEmpty(t, b.Bytes())
		}
	}
}

func TestWideScaleSplits(t *testing.T) {
	var docs []*results.Document
	for i := 1; i <= 18; i++ {
		docs = append(docs, doc("a platform with a rather long label", i*300, 1, int64(100000-i), ""))
	}
	r, err := Build(docs, Options{Discard: 0, Best: 1, Of: 1})
	require.NoError(t, err)
	require.Len(t, r.Scale.Columns, 18)
	text := string(render(t, r, "text"))
	for _, line := range strings.Split(text, "\n") {
		assert.LessOrEqual(t, utf8.RuneCountInString(line), textWidth, line)
	}
	assert.Contains(t, text, "5,400")
	assert.GreaterOrEqual(t, strings.Count(text, "a platform with a rather long label"), 3, "the table is split, the platform repeated")
}

// TestRandomDocuments: Build and every renderer survive documents with
// arbitrary values.
func TestRandomDocuments(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	pick := func(xs ...int64) int64 { return xs[rng.IntN(len(xs))] }
	for iter := 0; iter < 30; iter++ {
		var docs []*results.Document
		for i := 0; i < 1+rng.IntN(12); i++ {
			d := &results.Document{
				Schema: 1, RunID: strconv.Itoa(rng.IntN(4)), Label: []string{"", "a", "b", "<x>&\"|`*"}[rng.IntN(4)],
				Run: rng.IntN(3) - 1, Discarded: rng.IntN(4) == 0, Passed: rng.IntN(3) > 0, Interrupted: rng.IntN(9) == 0,
				Score:          pick(0, 1, -5, 1<<62, 123456),
				ElapsedSeconds: float64(pick(0, -1, 10, 1e9)),
				Config: results.Config{Scenario: []string{"", "turns", "paced", "churn", "??"}[rng.IntN(5)],
					Rooms: int(pick(0, 1, 50, -3)), Users: int(pick(0, 20, 1<<20)), ServerCPUs: int(pick(0, 1, 2, 64))},
				Connections: results.Connections{Peak: pick(0, 5, -1), Established: pick(0, 7)},
			}
			if rng.IntN(2) == 0 {
				d.Shard = &results.Shard{Index: rng.IntN(3), Count: 1 + rng.IntN(3)}
			}
			if rng.IntN(2) == 0 {
				d.Paced = &results.Paced{ConcurrentUsers: pick(0, 10, -2), Broken: rng.IntN(2) == 0, InPerSecond: 3}
			}
			if rng.IntN(2) == 0 {
				d.Server = &results.ServerUsage{CPUPercent: float64(pick(0, 50, 500)), CPUPerMessageMicros: 3, GOMAXPROCS: int(pick(0, 2))}
				d.Client = results.Usage{CPUUserSeconds: 9, CPUPerMessageMicros: float64(pick(0, 3, 9))}
			}
			if rng.IntN(3) == 0 {
				d.Failures = []results.Failure{{Kind: "", Count: -1}, {Kind: results.FailStall, Example: "x", At: t0}}
			}
			if rng.IntN(3) == 0 {
				d.Latency = map[string]*results.Histogram{results.LatencyDelivery: {Count: 5, HDR: "HISTFAAAAB"}, "": nil}
			}
			docs = append(docs, d)
		}
		opt := Options{Discard: rng.IntN(3), Best: 1 + rng.IntN(2), Of: 3, By: []string{ByLabel, ByServer, ByCPUs}[rng.IntN(3)]}
		r, err := Build(docs, opt)
		if err != nil {
			continue
		}
		for _, f := range Formats {
			var b bytes.Buffer
			require.NoError(t, r.Render(&b, f))
		}
	}
}

func ExampleBuild() {
	var docs []*results.Document
	for run, score := range []int64{1790, 1897, 1900, 1893} {
		docs = append(docs, &results.Document{
			Schema: results.SchemaVersion, RunID: strconv.Itoa(run), Label: "go1.26-linux", Run: run + 1,
			Config: results.Config{Scenario: results.ScenarioTurns, Rooms: 50, Users: 20},
			Passed: true, Score: score,
		})
	}
	r, err := Build(docs, DefaultOptions())
	if err != nil {
		fmt.Println(err)
		return
	}
	c := r.Fast.Rows[0].Cell
	fmt.Printf("%s at %d connections: %s → %s (median %.0f, spread %s)\n",
		r.Fast.Rows[0].Platform, r.Fast.Connections, c.ResultsText(), c.Text(), c.Median, c.SpreadText())
	// Output:
	// go1.26-linux at 1000 connections: 1,897; 1,900; 1,893 → 1,899 (median 1897, spread 1,893–1,900)
}

func TestEscaping(t *testing.T) {
	var docs []*results.Document
	for run := 1; run <= 2; run++ {
		d := doc(`<script>alert("x")</script> | *bold*`, 300, run, 100, "")
		d.CommandLine = []string{"volanogo", "load", "-label", "it's <b>", "`tick`"}
		docs = append(docs, d, doc("plain", 300, run, 0, results.FailProtocol))
	}
	docs[3].Failures[0].Example = `</li><script>bad()</script>`
	r, err := Build(docs, Options{Discard: 1, Best: 1, Of: 1})
	require.NoError(t, err)
	html := string(render(t, r, "html"))
	assert.NotContains(t, html, "<script>")
	assert.NotContains(t, html, "'<b>'")
	assert.Contains(t, html, "&lt;script&gt;")
	assert.Contains(t, html, "&lt;/li&gt;&lt;script&gt;bad()")
	md := string(render(t, r, "markdown"))
	assert.Contains(t, md, `\| \*bold\*`)
	assert.Contains(t, md, "`volanogo load -label 'it'\\''s <b>' '`tick`'`")
	text := string(render(t, r, "text"))
	assert.Contains(t, text, `Command:   volanogo load -label 'it'\''s <b>' '`+"`tick`'")
}

// The client machine's TCP settings reach the environment and its Runtime
// line: congestion control always, the loopback quickack only when set.
func TestEnvironmentTCPSettings(t *testing.T) {
	d := doc("p", 300, 1, 1000, "")
	d.Environment = results.Environment{OS: "linux", GoVersion: "go1.26.8", EphemeralPorts: "32768 60999",
		TCPCongestion: "bbr", LoopbackQuickACK: true}
	r, err := Build([]*results.Document{d}, Options{Discard: 0, Best: 1, Of: 1})
	require.NoError(t, err)
	require.Len(t, r.Environments, 1)
	e := r.Environments[0]
	assert.Equal(t, "bbr", e.TCPCongestion)
	assert.True(t, e.LoopbackQuickACK)
	assert.Contains(t, envLines(e), [2]string{"Runtime", "go1.26.8; ports 32768–60999; TCP bbr; loopback quickack"})

	e.LoopbackQuickACK = false
	assert.Contains(t, envLines(e), [2]string{"Runtime", "go1.26.8; ports 32768–60999; TCP bbr"})
}

// TestPublishersPlatform: paced runs in which only some users of a room
// sent (load --publishers) are a platform of their own, not averaged
// with runs of the same label in which every user sent.
func TestPublishersPlatform(t *testing.T) {
	paced := func(run, publishers int) *results.Document {
		d := doc("nats", 20, run, 0, "")
		d.Passed, d.Failures = true, nil
		d.Config.Scenario, d.Config.PauseSeconds, d.Config.Publishers = results.ScenarioPaced, 0.001, publishers
		d.Paced = &results.Paced{ConcurrentUsers: 20, InPerSecond: 1000, OutPerSecond: 19000}
		return d
	}
	r, err := Build([]*results.Document{paced(1, 0), paced(2, 1), paced(3, 20)}, DefaultOptions())
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"nats", "nats (1 publisher a room)"}, r.Platforms, "20 publishers of 20 is every user")
}
