package swarm

import (
	"context"
	"net"
	"runtime"
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

// TestMeasureNetwork: the round trip to a loopback server, by TCP
// connect, on the loopback interface; a server that is not there is an
// error, soon.
func TestMeasureNetwork(t *testing.T) {
	checkGoroutines(t)
	s := startServer(t, server.Config{})
	n, err := MeasureNetwork(context.Background(), Target{Transport: TransportTCP, Addr: s.Addr().String()}, time.Second)
	require.NoError(t, err)
	assert.Equal(t, "connect", n.Method)
	assert.Equal(t, RTTSamples, n.RTTSamples)
	assert.True(t, n.Loopback)
	assert.Positive(t, n.RTTMinSeconds)
	assert.GreaterOrEqual(t, n.RTTSeconds, n.RTTMinSeconds)
	if runtime.GOOS == "linux" {
		assert.Equal(t, "lo", n.Interface)
	}
	assert.Zero(t, n.LinkMbps, "loopback has no link speed")

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	_, err = MeasureNetwork(context.Background(), Target{Transport: TransportTCP, Addr: addr}, time.Second)
	assert.Error(t, err)
}
