package report

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCapacityChart(t *testing.T) {
	r, err := Build(readFixtures(t, "paced"), DefaultOptions())
	require.NoError(t, err)
	require.NotNil(t, r.Capacity)
	cr := r.Capacity.Rows[0]
	assert.Equal(t, 1.0, cr.SLOSeconds)
	c := capacityChart(cr)
	require.NotNil(t, c)
	require.Len(t, c.Panels, 3, "messages, CPU, p99")
	assert.Len(t, c.Panels[0].Series, 2, "in and out")
	for _, p := range c.Panels {
		for _, s := range p.Series {
			assert.Len(t, s.Dots, len(cr.Steps), s.Name)
		}
	}
	// The broken step is marked at the right end, the SLO in the p99
	// panel.
	require.NotNil(t, c.Broken)
	assert.Equal(t, c.Right(), c.Broken.X)
	assert.Equal(t, "broke at 20,000 (a)", c.Broken.Label)
	require.NotNil(t, c.Panels[2].Limit)
	assert.Equal(t, "SLO 1.00 s", c.Panels[2].Limit.Label)
	lat := c.Panels[2]
	assert.True(t, lat.Limit.Pos > lat.Top && lat.Limit.Pos < lat.Bottom())
	// Panels do not overlap and the chart holds them.
	for i := 1; i < len(c.Panels); i++ {
		assert.Greater(t, c.Panels[i].Top, c.Panels[i-1].Bottom())
	}
	assert.Greater(t, c.Height, c.Bottom())

	html := string(render(t, r, "html"))
	assert.Contains(t, html, `aria-label="go1.26-linux: capacity against concurrent users"`)
	assert.Contains(t, html, "go1.26-linux at 20,000 users: broke: p99 2.34 s over the SLO of 1 s")

	// Unknown CPU: no CPU panel. One step: no chart.
	for i := range cr.Steps {
		cr.Steps[i].ServerCPUPercent = -1
	}
	c = capacityChart(cr)
	require.NotNil(t, c)
	assert.Len(t, c.Panels, 2)
	for _, p := range c.Panels {
		assert.False(t, strings.Contains(p.YLabel, "CPU"))
	}
	cr.Steps = cr.Steps[:1]
	assert.Nil(t, capacityChart(cr))
}
