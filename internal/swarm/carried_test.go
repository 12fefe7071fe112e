package swarm

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volanogo/volanogo/internal/server"
)

// TestCarriedAtMaxConnections: a server that takes 10 connections and
// closes the rest at accept carried 10, whatever the client established:
// the users already in their handshake finish it when another fails.
func TestCarriedAtMaxConnections(t *testing.T) {
	checkGoroutines(t)
	for i := 0; i < 3; i++ {
		s := startServer(t, server.Config{MaxConnections: 10})
		cfg := tcpConfig(s.Addr().String())
		cfg.Rooms, cfg.Users, cfg.Count = 4, 4, 2
		d := run(t, cfg)
		require.False(t, d.Passed)
		require.NotNil(t, d.Connections.Carried)
		assert.Equal(t, int64(10), *d.Connections.Carried, "try %d: %+v", i, d.Connections)
		assert.GreaterOrEqual(t, d.Connections.Established, *d.Connections.Carried)
	}
}

// TestConnectRateMeasured: the set-up's achieved rate follows the rate
// asked: never above it.
func TestConnectRateMeasured(t *testing.T) {
	checkGoroutines(t)
	s := startServer(t, server.Config{})
	cfg := tcpConfig(s.Addr().String())
	cfg.Rooms, cfg.Users, cfg.Count = 2, 10, 1
	cfg.ConnectRate = 200
	start := time.Now()
	d := run(t, cfg)
	require.True(t, d.Passed, "%+v", d.Failures)
	assert.GreaterOrEqual(t, time.Since(start), 19*5*time.Millisecond, "20 connections at 200 a second")
	assert.Equal(t, new(int64(20)), d.Connections.Carried)
	assert.Positive(t, d.Connections.ConnectRate)
	assert.LessOrEqual(t, d.Connections.ConnectRate, 201.0, "never faster than the rate asked")
}
