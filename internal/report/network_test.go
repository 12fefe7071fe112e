package report

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/volanogo/volanogo/internal/results"
)

// TestNetworkLines: a platform's runs over one path say it once, the
// median of their round trips with the range and the fastest probe, not
// a line a run that differs only in the figures; another path has its own
// line, and a single run's line is as it measured it.
func TestNetworkLines(t *testing.T) {
	lo := func(rtt, fastest float64) *results.Network {
		return &results.Network{RTTSeconds: rtt, RTTMinSeconds: fastest, RTTSamples: 10, Method: "ping", Interface: "lo", Loopback: true}
	}
	eth := &results.Network{RTTSeconds: 212e-6, RTTMinSeconds: 180e-6, RTTSamples: 10, Method: "ping", Interface: "eth0", LinkMbps: 100}
	got := networkLines([]*results.Network{lo(30e-6, 12e-6), eth, lo(20e-6, 11e-6), lo(25e-6, 10e-6), lo(40e-6, 14e-6)})
	assert.Equal(t, []string{
		"RTT 27.5 µs (protocol ping, median of 4 runs, 20.0 µs to 40.0 µs; fastest 10.0 µs), lo (link speed unknown), loopback",
		"RTT 212 µs (protocol ping, median of 10; fastest 180 µs), eth0 (device speed 100 Mbit/s)",
	}, got)
	assert.Nil(t, networkLines(nil))
}
