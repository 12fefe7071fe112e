package results

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPacedVerdict(t *testing.T) {
	h := NewHistogram()
	for i := 0; i < 100; i++ {
		require.NoError(t, h.RecordValue(int64(2*time.Second)))
	}
	enc, err := EncodeHistogram(h)
	require.NoError(t, err)
	d := &Document{Latency: map[string]*Histogram{LatencyDeliveryScheduled: enc}}
	broken, reason := d.PacedVerdict(time.Second)
	assert.True(t, broken)
	assert.Equal(t, "p99 delivery latency 2.00 s over the SLO of 1s", reason)
	broken, _ = d.PacedVerdict(3 * time.Second)
	assert.False(t, broken)

	d = &Document{Failures: []Failure{{Kind: FailRefused, Count: 3, Example: "Mark1 in Room9: connect: refused"}}}
	broken, reason = d.PacedVerdict(time.Second)
	assert.True(t, broken)
	assert.Equal(t, "connections refused (connection refused: Mark1 in Room9: connect: refused)", reason)
	d = &Document{Failures: []Failure{{Kind: FailClosed, Count: 1}, {Kind: FailLost, Count: 7}}, Interrupted: true}
	broken, reason = d.PacedVerdict(time.Second)
	assert.True(t, broken)
	assert.Equal(t, "connections dropped (connection closed by the server: ); 7 messages lost; interrupted", reason)
	d = &Document{Failures: []Failure{{Kind: FailDuplicated, Count: 2, Example: "Mark2 in Room1: chat 3 of Mark1 arrived twice"}}}
	broken, reason = d.PacedVerdict(time.Second)
	assert.True(t, broken)
	assert.Equal(t, "messages duplicated: Mark2 in Room1: chat 3 of Mark1 arrived twice", reason)
	broken, reason = (&Document{}).PacedVerdict(time.Second)
	assert.False(t, broken)
	assert.Empty(t, reason)
}
