package load

import (
	"bytes"
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volanogo/volanogo/internal/results"
	"github.com/volanogo/volanogo/internal/server"
)

func startServer(t testing.TB, cfg server.Config) *server.Server {
	t.Helper()
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	s, err := server.New(cfg)
	require.NoError(t, err)
	require.NoError(t, s.Start())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		assert.NoError(t, s.Shutdown(ctx))
	})
	return s
}

func tcpConfig(t testing.TB, addr string) Config {
	host, port := splitAddr(t, addr)
	return Config{Host: host, Port: port, StallTimeout: 5 * time.Second}
}

func TestTurnTakingCounts(t *testing.T) {
	s := startServer(t, server.Config{MetricsListen: "127.0.0.1:0"})
	cfg := tcpConfig(t, s.Addr().String())
	cfg.Steps, cfg.Users, cfg.Count = []int{3}, 4, 5
	cfg.ServerMetrics = "http://" + s.MetricsAddr().String() + "/metrics"
	dir := t.TempDir()
	cfg.Output = dir + "/doc.json"
	var out bytes.Buffer
	res, err := Run(context.Background(), cfg, &out)
	require.NoError(t, err, out.String())
	require.Len(t, res.Steps, 1)
	d := res.Steps[0].Docs[0]
	assert.True(t, d.Passed, "%+v", d.Failures)
	assert.Equal(t, int64(60), d.Counts.Sent)
	assert.Equal(t, int64(180), d.Counts.Received)
	assert.Equal(t, int64(240), d.Counts.Total)
	assert.Equal(t, int64(60), d.Counts.Confirms)
	assert.Equal(t, int64(12), d.Connections.Established)
	assert.Equal(t, int64(180), d.Latency[results.LatencyDelivery].Count)
	assert.Equal(t, int64(57), d.Latency[results.LatencyTurn].Count)
	assert.NotNil(t, d.Server)
	t.Log(out.String())
	rd, err := results.ReadFile(cfg.Output)
	require.NoError(t, err)
	assert.Equal(t, d.Counts, rd.Counts)
	assert.Regexp(t, regexp.MustCompile(`(?m)^Messages sent      = 60$`), out.String())
}
