package swarm

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volanogo/volanogo/internal/broker/brokertest"
	"github.com/volanogo/volanogo/internal/results"
)

// brokerServers are the brokers each test runs against, with their
// protocol.
var brokerServers = []struct{ name, protocol string }{
	{"nats-server", TransportNATS}, {"redis-server", TransportRedis}, {"mosquitto", TransportMQTT},
}

func brokerConfig(protocol, addr string) testConfig {
	return testConfig{Spec: Spec{StallTimeout: 5 * time.Second, StrictOrder: true},
		Target: Target{Transport: protocol, Addr: addr}}
}

// TestBrokerTurnTaking: Mark's turn-taking through each broker, with the
// exact totals, every chat's confirm (the broker's echo) and the fan-out
// of every broadcast.
func TestBrokerTurnTaking(t *testing.T) {
	for _, b := range brokerServers {
		t.Run(b.name, func(t *testing.T) {
			checkGoroutines(t)
			s := brokertest.Start(t, b.name)
			cfg := brokerConfig(b.protocol, s.Addr)
			cfg.Rooms, cfg.Users, cfg.Count = 3, 4, 5
			d := run(t, cfg)
			require.True(t, d.Passed, "%+v", d.Failures)
			assert.Equal(t, results.Counts{Sent: 60, Received: 180, Total: 240, ExpectedSent: 60, ExpectedTotal: 240, Confirms: 60}, d.Counts)
			c := d.Connections
			assert.Equal(t, [3]int64{12, 12, 12}, [3]int64{c.Attempted, c.Established, c.Peak}, "one connection a user")
			require.NotNil(t, c.Carried)
			assert.Equal(t, int64(12), *c.Carried)
			assert.Equal(t, int64(180), d.Latency[results.LatencyDelivery].Count)
			assert.Equal(t, int64(60), d.Latency[results.LatencyFanoutFirst].Count, "one per broadcast")
			assert.Equal(t, results.Integrity{Receivers: 12, StrictOrder: true}, *d.Integrity)
		})
	}
}

// TestBrokerPrefixQoS: a subject prefix, and MQTT at QoS 1.
func TestBrokerPrefixQoS(t *testing.T) {
	for _, b := range brokerServers {
		t.Run(b.name, func(t *testing.T) {
			checkGoroutines(t)
			s := brokertest.Start(t, b.name)
			cfg := brokerConfig(b.protocol, s.Addr)
			cfg.Prefix = "volanogo.test."
			if b.protocol == TransportMQTT {
				cfg.Prefix, cfg.QoS = "volanogo/test/", 1
			}
			cfg.Rooms, cfg.Users, cfg.Count = 2, 3, 4
			d := run(t, cfg)
			require.True(t, d.Passed, "%+v", d.Failures)
			assert.Equal(t, int64(24+48), d.Counts.Total)
		})
	}
}

// TestBrokerPaced: an open-loop run through each broker; every chat
// reaches every other user of its room.
func TestBrokerPaced(t *testing.T) {
	for _, b := range brokerServers {
		t.Run(b.name, func(t *testing.T) {
			checkGoroutines(t)
			s := brokertest.Start(t, b.name)
			cfg := brokerConfig(b.protocol, s.Addr)
			cfg.Rooms, cfg.Users, cfg.Count, cfg.Pause = 2, 3, 5, 20*time.Millisecond
			d := run(t, cfg)
			require.True(t, d.Passed, "%+v", d.Failures)
			assert.Equal(t, int64(30), d.Counts.Sent)
			assert.Equal(t, int64(60), d.Counts.Received)
			assert.Zero(t, d.Integrity.Lost)
		})
	}
}

// TestBrokerChurn: connect, enter, chat, exit and close, repeated.
func TestBrokerChurn(t *testing.T) {
	for _, b := range brokerServers {
		t.Run(b.name, func(t *testing.T) {
			checkGoroutines(t)
			s := brokertest.Start(t, b.name)
			cfg := brokerConfig(b.protocol, s.Addr)
			cfg.Scenario, cfg.Rooms, cfg.Users, cfg.Count = results.ScenarioChurn, 2, 3, 3
			d := run(t, cfg)
			require.True(t, d.Passed, "%+v", d.Failures)
			require.NotNil(t, d.Churn)
			assert.Equal(t, int64(18), d.Churn.Sequences)
		})
	}
}

// TestBrokerRestart: a broker killed and started again in the timed
// phase ends the run at once, the cause named (the connection closed by
// the server), never a hang.
func TestBrokerRestart(t *testing.T) {
	for _, b := range brokerServers {
		t.Run(b.name, func(t *testing.T) {
			checkGoroutines(t)
			s := brokertest.Start(t, b.name)
			cfg := brokerConfig(b.protocol, s.Addr)
			cfg.Rooms, cfg.Users, cfg.Count = 2, 4, 1_000_000
			restarted := make(chan error, 1)
			obs := &phaseHook{at: PhaseTimed, f: func() {
				time.Sleep(50 * time.Millisecond)
				restarted <- s.Restart()
			}}
			begin := time.Now()
			d := runWith(t, context.Background(), cfg, obs)
			require.NoError(t, <-restarted)
			require.False(t, d.Passed)
			assert.Less(t, time.Since(begin), 20*time.Second, "the run ends with the broker's restart, not at a deadline")
			kinds := failureKinds(d)
			require.NotEmpty(t, kinds)
			assert.Contains(t, []string{results.FailClosed, results.FailReset}, kinds[0], "%+v", d.Failures)
			assert.Regexp(t, "disconnected from server|connection reset by peer", d.Failures[0].Example)
			assert.Positive(t, d.Counts.Sent)
		})
	}
}

func TestBrokerSpecErrors(t *testing.T) {
	for _, tc := range []struct {
		s    Spec
		t    Target
		want string
	}{
		{Spec{Rooms: []int{1}, Count: 1}, Target{Transport: TransportNATS}, "no broker address"},
		{Spec{Rooms: []int{1}, Count: 1, BatchReads: true}, Target{Transport: TransportRedis, Addr: "h:1"}, "batch reads: VOLANO over TCP only"},
		{Spec{Rooms: []int{1}, Count: 1, Engine: EngineEpoll}, Target{Transport: TransportMQTT, Addr: "h:1"}, "engine epoll: TCP only"},
		{Spec{Rooms: []int{1}, Count: 1}, Target{Transport: TransportMQTT, Addr: "h:1", QoS: 2}, "QoS 0 or 1"},
		{Spec{Rooms: []int{1}, Count: 1}, Target{Transport: TransportNATS, Addr: "h:1", Prefix: "a b"}, "no spaces"},
	} {
		_, err := Run(context.Background(), tc.s, tc.t, &observer{})
		var ce *ConfigError
		require.ErrorAs(t, err, &ce, tc.want)
		assert.ErrorContains(t, err, tc.want)
	}
}

// phaseHook is an observer that calls f (in a goroutine of its own) as
// the run enters phase at.
type phaseHook struct {
	observer
	at Phase
	f  func()
}

func (o *phaseHook) Phase(ph Phase, p Progress) {
	o.observer.Phase(ph, p)
	if ph == o.at {
		go o.f()
	}
}

// slowConn reads a few bytes at a time, each read after a pause, for its
// first reads: a subscriber that falls behind for a while.
type slowConn struct {
	net.Conn
	reads atomic.Int64
	slow  int64
	pause time.Duration
}

func (c *slowConn) Read(p []byte) (int, error) {
	if c.reads.Add(1) <= c.slow {
		time.Sleep(c.pause)
		p = p[:min(len(p), 16)]
	}
	return c.Conn.Read(p)
}

// slowUser makes the reads of user Mark2 of Room1 slow (through the
// net.Conn, with a small receive buffer) until the test ends.
func slowUser(t *testing.T, reads int64) {
	testHookLink = func(u *user, l *link) {
		if u.num != 2 || u.r.num != 1 {
			return
		}
		if tc, ok := l.nc.(*net.TCPConn); ok {
			require.NoError(t, tc.SetReadBuffer(1024))
		}
		l.nc = &slowConn{Conn: l.nc, slow: reads, pause: 10 * time.Millisecond}
		l.rc = nil
	}
	t.Cleanup(func() { testHookLink = nil })
}

// TestBrokerLossMQTT: mosquitto drops the messages a slow subscriber's
// queue has no room for (QoS 1: one in flight until the subscriber's
// PUBACK, max_queued_messages behind it), and keeps it connected: the
// ledger counts them lost, and the run fails with the count.
func TestBrokerLossMQTT(t *testing.T) {
	checkGoroutines(t)
	s := brokertest.Start(t, "mosquitto", brokertest.Conf("max_queued_messages 20", "max_inflight_messages 1"))
	slowUser(t, 50)
	cfg := brokerConfig(TransportMQTT, s.Addr)
	cfg.QoS = 1
	cfg.Rooms, cfg.Users, cfg.Count, cfg.Pause = 1, 10, 200, 2*time.Millisecond
	cfg.StallTimeout = 1500 * time.Millisecond
	d := run(t, cfg)
	require.False(t, d.Passed)
	require.NotNil(t, d.Integrity, "%+v", d.Failures)
	assert.Positive(t, d.Integrity.Lost, "%+v", d.Failures)
	assert.Contains(t, failureKinds(d), results.FailLost)
	assert.Equal(t, int64(2000), d.Counts.Sent)
	t.Logf("lost %d of %d: %s", d.Integrity.Lost, 9*d.Counts.Sent, d.Failures[0].Example)
}

// TestBrokerSlowConsumerCut: Redis closes the connection of a subscriber
// that falls behind (its pub/sub output buffer limit, here small enough
// that a user reading at full speed may be cut too): the run fails, the
// cut user named. (NATS cuts one too, past max_pending, but
// only once the kernel's socket buffers are full: megabytes on loopback,
// more than a test sends in a second.)
func TestBrokerSlowConsumerCut(t *testing.T) {
	for _, b := range []struct {
		name, protocol string
		conf           []string
	}{
		{"redis-server", TransportRedis, []string{"client-output-buffer-limit pubsub 8kb 4kb 1"}},
	} {
		t.Run(b.name, func(t *testing.T) {
			checkGoroutines(t)
			s := brokertest.Start(t, b.name, brokertest.Conf(b.conf...))
			slowUser(t, 200)
			cfg := brokerConfig(b.protocol, s.Addr)
			cfg.Rooms, cfg.Users, cfg.Count, cfg.Pause = 1, 10, 400, 2*time.Millisecond
			cfg.StallTimeout = 3 * time.Second
			begin := time.Now()
			d := run(t, cfg)
			require.False(t, d.Passed)
			assert.Less(t, time.Since(begin), 30*time.Second, "the cut ends the run, never a hang")
			kinds := failureKinds(d)
			require.NotEmpty(t, kinds)
			assert.Contains(t, []string{results.FailClosed, results.FailReset}, kinds[0], "%+v", d.Failures)
			assert.Regexp(t, "Mark[0-9]+ in Room1: (disconnected from server|read|write)", d.Failures[0].Example)
		})
	}
}

// TestBrokerStorm: every user drops at once and reconnects; each comes
// back, and nothing sent while it was in its room is lost.
func TestBrokerStorm(t *testing.T) {
	for _, b := range brokerServers {
		t.Run(b.name, func(t *testing.T) {
			checkGoroutines(t)
			s := brokertest.Start(t, b.name)
			cfg := brokerConfig(b.protocol, s.Addr)
			cfg.Scenario = results.ScenarioStorm
			cfg.Rooms, cfg.Users, cfg.Count, cfg.Pause = 2, 4, 0, 50*time.Millisecond
			cfg.Duration, cfg.StormAt = 1500*time.Millisecond, 500*time.Millisecond
			cfg.StrictOrder = false
			cfg.SLO = time.Minute
			d := run(t, cfg)
			require.True(t, d.Passed, "%+v", d.Failures)
			require.NotNil(t, d.Storm)
			assert.Equal(t, int64(8), d.Storm.Dropped)
			assert.Equal(t, int64(8), d.Storm.Reconnected)
			assert.Zero(t, d.Integrity.Lost)
		})
	}
}

// TestBrokerSays: a broker that says what it is in its handshake (NATS's
// INFO, Redis's HELLO) is named in the document; MQTT's says nothing.
func TestBrokerSays(t *testing.T) {
	for _, b := range brokerServers {
		t.Run(b.name, func(t *testing.T) {
			s := brokertest.Start(t, b.name)
			cfg := brokerConfig(b.protocol, s.Addr)
			cfg.Rooms, cfg.Users, cfg.Count = 1, 2, 1
			d := run(t, cfg)
			require.True(t, d.Passed, "%+v", d.Failures)
			if b.protocol == TransportMQTT {
				assert.Nil(t, d.ServerInfo)
				return
			}
			require.NotNil(t, d.ServerInfo)
			assert.Equal(t, b.name, d.ServerInfo.Product)
			assert.Equal(t, s.Version(), d.ServerInfo.Version)
		})
	}
}
