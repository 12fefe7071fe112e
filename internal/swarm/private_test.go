package swarm

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volanogo/volanogo/internal/results"
	"github.com/volanogo/volanogo/internal/server"
)

// TestPrivateChat: pairs in private sessions, each user sending its
// partner a chat every pause and echoing its partner's: every chat
// reaches the partner and comes back, exactly, In:Out 1:2, with the
// one-way and the round-trip latency.
func TestPrivateChat(t *testing.T) {
	checkGoroutines(t)
	s := startServer(t, server.Config{})
	cfg := tcpConfig(s.Addr().String())
	cfg.Scenario = results.ScenarioPrivate
	cfg.Rooms, cfg.Users, cfg.Count = 3, 4, 10
	cfg.Pause = 20 * time.Millisecond
	d := run(t, cfg)
	require.True(t, d.Passed, "%+v", d.Failures)
	const users, count = 3 * 4, 10
	assert.Equal(t, int64(2*users*count), d.Counts.Sent, "each chat, and its echo")
	assert.Equal(t, int64(2*users*count), d.Counts.Received, "the partner's chats and the echoes of one's own")
	require.NotNil(t, d.Integrity)
	assert.Zero(t, d.Integrity.Lost)
	assert.Zero(t, d.Integrity.Duplicated)
	assert.Zero(t, d.Integrity.Corrupted)
	assert.Zero(t, d.Integrity.Outside, "private chats of the run's own sessions are not outsiders")
	assert.Equal(t, int64(users*count), d.Latency[results.LatencyDelivery].Count)
	assert.Equal(t, int64(users*count), d.Latency[results.LatencyDeliveryScheduled].Count)
	assert.Equal(t, int64(users*count), d.Latency[results.LatencyResponse].Count)
	assert.Nil(t, d.Latency[results.LatencyFanoutFirst], "one receiver: no fan-out")
	require.NotNil(t, d.Paced)
	assert.Equal(t, int64(users), d.Paced.ConcurrentUsers)
	require.Positive(t, d.Paced.InPerSecond)
	assert.InDelta(t, 2, d.Paced.OutPerSecond/d.Paced.InPerSecond, 0.25, "In:Out 1:2 (in %.1f, out %.1f)", d.Paced.InPerSecond, d.Paced.OutPerSecond)
	assert.False(t, d.Paced.Broken, d.Paced.Reason)
}

// TestPrivateNeedsPairs: an odd number of users, no pause, or the epoll
// engine are refused.
func TestPrivateNeedsPairs(t *testing.T) {
	target := Target{Transport: TransportTCP, Addr: "127.0.0.1:1"}
	for _, s := range []Spec{
		{Scenario: results.ScenarioPrivate, Rooms: []int{1}, Users: 3, Count: 1, Pause: time.Second},
		{Scenario: results.ScenarioPrivate, Rooms: []int{1}, Users: 4, Count: 1},
		{Scenario: results.ScenarioPrivate, Rooms: []int{1}, Users: 4, Count: 1, Pause: time.Second, Engine: EngineEpoll},
	} {
		err := s.normalize(target)
		var ce *ConfigError
		assert.ErrorAs(t, err, &ce, "%+v", s)
	}
}
