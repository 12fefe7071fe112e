package report

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volanogo/volanogo/internal/results"
)

// hist is a histogram of n values of v nanoseconds.
func hist(t *testing.T, v, n int64) *results.Histogram {
	t.Helper()
	h := results.NewHistogram()
	require.NoError(t, h.RecordValues(v, n))
	e, err := results.EncodeHistogram(h)
	require.NoError(t, err)
	return e
}

// churnRun is a churn run of users users, 10 sequences each: a cold
// sequence of cold ns, warm ones of warm ns.
func churnRun(t *testing.T, label string, users int64, run int, cold, warm int64) *results.Document {
	seqs := users * 10
	return &results.Document{
		Schema: results.SchemaVersion, RunID: fmt.Sprintf("%s-%d-%d", label, users, run), Label: label,
		Config: results.Config{Scenario: results.ScenarioChurn, Rooms: int(users / 20), Users: 20, Count: 10},
		Run:    run, Started: t0.Add(time.Duration(users*10+int64(run)) * time.Minute),
		Passed: true, ElapsedSeconds: 2,
		Latency: map[string]*results.Histogram{results.LatencySequence: hist(t, warm, seqs-users)},
		Churn:   &results.Churn{Sequences: seqs, SequencesPerSecond: float64(seqs) / 2, First: hist(t, cold, users)},
		Server:  &results.ServerUsage{Source: "metrics", Goroutines: 9, OpenFDs: 8},
	}
}

func TestChurnTable(t *testing.T) {
	var docs []*results.Document
	for run := 1; run <= 3; run++ {
		docs = append(docs,
			churnRun(t, "go", 100, run, 20e6, 2e6),
			churnRun(t, "go", 1000, run, 90e6, 30e6),
			churnRun(t, "java", 100, run, 180e6, 10e6))
	}
	// java: its server exposes descriptors only, and the discarded run
	// left two connections behind; the others none.
	for _, d := range docs {
		if d.Label == "java" {
			d.Server = &results.ServerUsage{Source: "proc", OpenFDs: 40}
			if d.Run == 1 {
				d.Churn.LeakedConnections, d.Churn.LeakedFDs = 2, 2
			}
		}
	}
	// One more platform with no server figures, whose runs failed.
	for run := 1; run <= 3; run++ {
		d := churnRun(t, "blind", 100, run, 5e6, 1e6)
		d.Server = nil
		d.Passed = false
		d.Failures = []results.Failure{{Kind: results.FailDenied, Count: 1, Example: "EnterRoom refused"}}
		docs = append(docs, d)
	}
	r, err := Build(docs, DefaultOptions())
	require.NoError(t, err)
	require.NotNil(t, r.Churn)
	require.Len(t, r.Churn.Rows, 3)
	rows := map[string]ChurnRow{}
	for _, row := range r.Churn.Rows {
		rows[row.Platform] = row
	}

	g := rows["go"]
	require.Len(t, g.Steps, 2)
	s := g.Steps[0]
	assert.Equal(t, int64(100), s.Users)
	assert.Equal(t, 10, s.SequencesPerUser)
	assert.Equal(t, 2, s.Runs)
	assert.Equal(t, int64(1000), s.Sequences)
	assert.Equal(t, 500.0, s.SequencesPerSecond)
	require.NotNil(t, s.Cold)
	require.NotNil(t, s.Warm)
	assert.Equal(t, int64(200), s.Cold.Count, "the first sequence of 100 users in each of 2 counted runs")
	assert.Equal(t, int64(1800), s.Warm.Count)
	assert.InDelta(t, 10, s.ColdWarm(), 0.05)
	assert.Equal(t, "none", leakText(s))
	assert.Equal(t, "go: no leak after any run", churnHeadline(g))
	assert.Equal(t, []string{"100", "1,000", "500", "20.0 ms", "20.0 ms", "2.00 ms", "2.00 ms", "10.0×", "none", "ok"},
		churnCells(s))

	j := rows["java"].Steps[0]
	assert.Equal(t, "2 conns, 2 FDs", leakText(j), "a leak in the discarded run is a leak")
	assert.Nil(t, j.LeakedGoroutines)
	assert.InDelta(t, 18, j.ColdWarm(), 0.1)
	assert.Equal(t, "java: left behind 2 conns, 2 FDs at 100 users (goroutines not exposed by the server)",
		churnHeadline(rows["java"]))

	b := rows["blind"].Steps[0]
	assert.True(t, b.Failed)
	assert.Equal(t, "–", leakText(b))
	assert.Equal(t, "failed (a)", churnOutcome(b))
	assert.Contains(t, churnHeadline(rows["blind"]), "leaks unknown")
	require.Len(t, r.Footnotes, 1)
	assert.Equal(t, []string{"blind at 100 users (churn)"}, r.Footnotes[0].Where)

	for _, f := range []string{"text", "markdown", "html"} {
		assert.Contains(t, string(render(t, r, f)), "2 conns, 2 FDs", f)
	}
	assert.Contains(t, string(render(t, r, "csv")), "churn,java,100,leaked connections,2\n")
	assert.NotContains(t, string(render(t, r, "csv")), "churn,java,100,leaked goroutines")
	assert.Contains(t, string(render(t, r, "text")), "\nChurn\n=====\n")
	assert.Contains(t, string(render(t, r, "markdown")), "## Churn")
	assert.Contains(t, string(render(t, r, "html")), `<h2 id="churn">Churn</h2>`)
	assert.Contains(t, string(render(t, r, "json")), `"leaked_fds": 2`)

	// Compare: sequences per second and the cold and warm p50.
	r, err = Build(docs, Options{Discard: 1, Compare: [2]string{"go", "java"}})
	require.NoError(t, err)
	var metrics []string
	for _, row := range r.Compare.Rows {
		assert.Equal(t, KindChurn, row.Kind)
		metrics = append(metrics, row.Metric)
	}
	assert.Equal(t, "sequences,cold p50,warm p50", strings.Join(metrics, ","))
	assert.Contains(t, string(render(t, r, "text")), "100 users (churn)")
}
