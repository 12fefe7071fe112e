package swarm

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
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
			notRescued(t, d, cfg)
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

// notRescued checks that a broker run that passed took less than a
// quarter of its stall timeout, when the stall watchdog would have woken
// readers waiting on a receive low-water mark (a mark counted in VOLANO
// packets, wrong for a broker's frames, passes only that way, slowly).
func notRescued(t *testing.T, d *results.Document, cfg testConfig) {
	t.Helper()
	assert.Less(t, d.ElapsedSeconds, (cfg.StallTimeout / 4).Seconds(), "the run waited for the stall watchdog")
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
			notRescued(t, d, cfg)
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
		{Spec{Rooms: []int{1}, Count: 1, Engine: EngineEpoll}, Target{Transport: TransportWS, URL: "ws://h:1/chat"}, "engine epoll: TCP only"},
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

// slowConn stops reading for a while (until the connection is closed, at
// most): a subscriber that falls behind.
type slowConn struct {
	net.Conn
	reads atomic.Int64
	// stallAt is the read before which the user stops reading for stall.
	stallAt int64
	stall   time.Duration
	closed  chan struct{}
	once    sync.Once
}

func (c *slowConn) Read(p []byte) (int, error) {
	if c.reads.Add(1) == c.stallAt {
		select {
		case <-time.After(c.stall):
		case <-c.closed:
		}
	}
	return c.Conn.Read(p)
}

func (c *slowConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return c.Conn.Close()
}

// stalledUser makes user Mark2 of Room1 stop reading for d before its
// read number at (with a small receive buffer).
func stalledUser(t *testing.T, at int64, d time.Duration) {
	slowLink(t, &slowConn{stallAt: at, stall: d})
}

func slowLink(t *testing.T, sc *slowConn) {
	testHookLink = func(u *user, l *link) {
		if u.num != 2 || u.r.num != 1 {
			return
		}
		if tc, ok := l.nc.(*net.TCPConn); ok {
			require.NoError(t, tc.SetReadBuffer(1024))
		}
		sc.Conn, sc.closed = l.nc, make(chan struct{})
		l.nc = sc
		l.rc = nil
	}
	t.Cleanup(func() { testHookLink = nil })
}

// TestBrokerLossMQTT: mosquitto drops the messages a stalled subscriber's
// queue has no room for (QoS 1: 20 in flight until the subscriber's
// PUBACKs, max_queued_messages behind them), and keeps it connected: the
// ledger counts them lost (not Mark2's alone: the others miss some of
// Mark2's chats too, and at times more), and the run fails with the count.
func TestBrokerLossMQTT(t *testing.T) {
	checkGoroutines(t)
	s := brokertest.Start(t, "mosquitto", brokertest.Conf("max_queued_messages 20", "max_inflight_messages 20"))
	stalledUser(t, 5, time.Second)
	cfg := brokerConfig(TransportMQTT, s.Addr)
	cfg.QoS = 1
	cfg.Rooms, cfg.Users, cfg.Count, cfg.Pause = 1, 10, 200, 2*time.Millisecond
	cfg.StallTimeout = 1500 * time.Millisecond
	d := run(t, cfg)
	require.False(t, d.Passed)
	require.NotNil(t, d.Integrity, "%+v", d.Failures)
	assert.Positive(t, d.Integrity.Lost, "%+v", d.Failures)
	lost := failure(d, results.FailLost)
	require.NotNil(t, lost, "%+v", d.Failures)
	assert.Equal(t, d.Integrity.Lost, lost.Count, "the footnote's count is the ledger's")
	assert.Contains(t, lost.Example, fmt.Sprintf("%d chats lost: ", d.Integrity.Lost))
	assert.Equal(t, int64(2000), d.Counts.Sent)
	t.Logf("lost %d of %d: %s", d.Integrity.Lost, 9*d.Counts.Sent, lost.Example)
}

// TestBrokerSlowConsumerCut: Redis and NATS close the connection of a
// subscriber that falls behind, without a word (Redis past its pub/sub
// output buffer limit, nats-server past max_pending): the run fails within
// seconds, the cut user named and the broker's close said, never a hang.
// Mark2 stops reading. Redis buffers for it only once the kernel's socket
// buffers are full (megabytes on loopback), so another program floods
// the room with large publications; nats-server stalls the publishers
// while a subscriber's pending bytes near max_pending, and cuts it only
// when they pass before that, so its limit is a few messages, and a user
// reading at full speed may be the one cut.
func TestBrokerSlowConsumerCut(t *testing.T) {
	for _, b := range []struct {
		name, protocol string
		conf           []string
		flood          func(addr string, stop <-chan struct{}) error
		log            string // what the broker logs of the cut
	}{
		{"redis-server", TransportRedis, []string{"client-output-buffer-limit pubsub 64kb 32kb 1"}, redisFlood,
			"scheduled to be closed ASAP for overcoming of output buffer limits"},
		{"nats-server", TransportNATS, []string{"max_payload: 256", "max_pending: 512", `write_deadline: "50ms"`}, nil,
			"Slow Consumer Detected"},
	} {
		t.Run(b.name, func(t *testing.T) {
			checkGoroutines(t)
			s := brokertest.Start(t, b.name, brokertest.Conf(b.conf...))
			stalledUser(t, 5, 10*time.Second)
			cfg := brokerConfig(b.protocol, s.Addr)
			cfg.Rooms, cfg.Users, cfg.Count, cfg.Pause = 1, 10, 400, 2*time.Millisecond
			cfg.StallTimeout = 3 * time.Second
			cfg.StrictOrder = false // the flood's publications are counted apart
			var obs Observer = &observer{}
			stop, flooded := make(chan struct{}), make(chan error, 1)
			if b.flood != nil {
				obs = &phaseHook{at: PhaseTimed, f: func() { flooded <- b.flood(s.Addr, stop) }}
			} else {
				flooded <- nil
			}
			begin := time.Now()
			d := runWith(t, context.Background(), cfg, obs)
			close(stop)
			require.NoError(t, <-flooded)
			require.False(t, d.Passed)
			assert.Less(t, time.Since(begin), 10*time.Second, "the cut ends the run, never a hang")
			var cut *results.Failure
			for i := range d.Failures {
				if f := &d.Failures[i]; f.Kind == results.FailClosed || f.Kind == results.FailReset {
					cut = f
					break
				}
			}
			require.NotNil(t, cut, "%+v", d.Failures)
			assert.Regexp(t, "Mark[0-9]+ in Room1: (disconnected from server: the "+b.protocol+" broker closed the connection without an error|read|write)",
				cut.Example)
			assert.Contains(t, s.Log(), b.log, "the broker's log says why")
		})
	}
}

// redisFlood publishes 32 KiB messages on Room1 until stop (8 MiB at
// most), as another program would.
func redisFlood(addr string, stop <-chan struct{}) error {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	payload := strings.Repeat("x", 32<<10)
	cmd := []byte(fmt.Sprintf("*3\r\n$7\r\nPUBLISH\r\n$5\r\nRoom1\r\n$%d\r\n%s\r\n", len(payload), payload))
	go func() { _, _ = io.Copy(io.Discard, c) }() // the replies, until the close
	for i := 0; i < 256; i++ {
		select {
		case <-stop:
			return nil
		default:
		}
		if err := c.SetWriteDeadline(time.Now().Add(5 * time.Second)); err != nil {
			return err
		}
		if _, err := c.Write(cmd); err != nil {
			return err
		}
	}
	return nil
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
