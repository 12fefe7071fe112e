package report

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volanogo/volanogo/internal/results"
)

// TestCostEfficiency: documents that carry the machine's floor get an
// efficiency column in the cost table (floor ÷ measured, medians over the
// counted runs that passed); documents without one keep the table as it
// was.
func TestCostEfficiency(t *testing.T) {
	floors := []results.Floor{{Engine: "epoll", Rooms: 50, ServerCPUPerMessageMicros: 1, ClientCPUPerMessageMicros: 1.5}}
	withFloor := func(d *results.Document, server, client float64) *results.Document {
		d.Counts.Total = 1000
		d.Server = &results.ServerUsage{Source: "metrics", CPUPerMessageMicros: server}
		d.Client.CPUPerMessageMicros = client
		d.Environment.Floor = floors
		return d
	}
	docs := []*results.Document{
		withFloor(doc("p", 1000, 1, 1900, ""), 100, 100), // discarded
		withFloor(doc("p", 1000, 2, 1900, ""), 2, 3),
		withFloor(doc("p", 1000, 3, 1900, ""), 4, 6),
		withFloor(doc("p", 1000, 4, 1900, ""), 5, 5),
	}
	f := func(v float64) *float64 { return &v }
	r, err := Build(docs, DefaultOptions())
	require.NoError(t, err)
	require.NotNil(t, r.Cost)
	require.Len(t, r.Cost.Rows, 1)
	assert.Equal(t, f(0.25), r.Cost.Rows[0].EfficiencyServer)
	assert.Equal(t, f(0.3), r.Cost.Rows[0].EfficiencyClient)
	for _, format := range []string{"text", "markdown", "html"} {
		out := string(render(t, r, format))
		assert.Contains(t, out, "Efficiency (server/client)", format)
		assert.Contains(t, out, "0.25 / 0.30", format)
		assert.Contains(t, strings.Join(strings.Fields(out), " "), "four times as much", format)
	}

	// Without a floor: no column.
	for _, d := range docs {
		d.Environment.Floor = nil
	}
	r, err = Build(docs, DefaultOptions())
	require.NoError(t, err)
	require.NotNil(t, r.Cost)
	assert.Nil(t, r.Cost.Rows[0].EfficiencyServer)
	for _, format := range []string{"text", "markdown", "html"} {
		assert.NotContains(t, string(render(t, r, format)), "Efficiency", format)
	}
}
