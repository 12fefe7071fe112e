package results

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestServerInfoName(t *testing.T) {
	var none *ServerInfo
	assert.Empty(t, none.Name())
	si := &ServerInfo{Product: "volanogo serve", Version: "v1.2.0", Engine: "epoll", Flags: []string{"--max-connections", "150"}}
	si.ApplyLabels(map[string]string{"site": "lab", "rack": "3"})
	assert.Equal(t, "volanogo serve v1.2.0 (epoll) --max-connections 150 rack=3 site=lab", si.Name())
	other := &ServerInfo{}
	other.ApplyLabels(map[string]string{"product": "java COM.volano.Main", "version": "2.1.2", "engine": "threads", "jvm": "17"})
	assert.Equal(t, "java COM.volano.Main 2.1.2 (threads) jvm=17", other.Name(), "product, version and engine labels set the fields")
}

func TestEnvironmentInfoRoundTrip(t *testing.T) {
	e := Environment{Hostname: "srv", OS: "linux", Arch: "arm64", Kernel: "6.1.0", Distribution: "Debian 12", CPUModel: "Neoverse",
		CPUs: 64, MemoryBytes: 256 << 30, GoVersion: "go1.26.8", GOMAXPROCS: 64, OpenFilesSoft: 1 << 20, OpenFilesHard: -1, TCPCongestion: "cubic"}
	labels := map[string]string{}
	for i, v := range e.InfoLabelValues() {
		labels[EnvironmentInfoLabels[i]] = v
	}
	assert.Equal(t, e, EnvironmentFromInfo(labels))
	assert.Equal(t, Environment{OS: "linux"}, EnvironmentFromInfo(map[string]string{"os": "linux", "cpus": "many"}), "an unreadable label is left at zero")
}

func TestFailureExplained(t *testing.T) {
	f := Failure{Kind: FailReset, Example: "Mark14 in Room1: connection reset by peer"}
	assert.Equal(t, f.Example, f.Explained())
	f.Server = "52 connections refused (max_connections)"
	assert.Equal(t, "Mark14 in Room1: connection reset by peer; the server: 52 connections refused (max_connections)", f.Explained())
}

// TestSlowConnects: a capacity step breaks when its set-up achieved less
// than 90% of the connect rate asked, as the vendor's server that
// "accepts connections at a slow rate" did.
func TestSlowConnects(t *testing.T) {
	d := &Document{Config: Config{Scenario: ScenarioPaced, ConnectRate: 200}, Connections: Connections{ConnectRate: 166}}
	assert.Equal(t, "connections accepted at 166 a second, under 90% of the 200 asked (--connect-rate)", d.SlowConnects())
	broken, reason := d.PacedVerdict(0)
	assert.True(t, broken)
	assert.Contains(t, reason, "under 90% of the 200 asked")
	d.Config.ConnectConcurrency = 16
	d.Latency = map[string]*Histogram{LatencyConnect: {Count: 10, P50: 150e6}}
	assert.Contains(t, d.SlowConnects(), "the client's 16 rooms connecting at once allow about 107 a second at the median connect time of 150 ms",
		"over a 50 ms path the client, not the server, is the bound")
	d.Connections.ConnectRate = 181
	assert.Empty(t, d.SlowConnects())
	d.Config.ConnectRate = 0
	d.Connections.ConnectRate = 10
	assert.Empty(t, d.SlowConnects(), "no rate asked")
}
