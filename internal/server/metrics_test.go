package server

import (
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volanogo/volanogo/pkg/protocol"
)

func TestMetrics(t *testing.T) { forEngines(t, testMetrics) }

func testMetrics(t *testing.T, engine string) {
	s := startServer(t, Config{Engine: engine, MetricsListen: "127.0.0.1:0", Rooms: []string{"Lobby"}})
	a, b := aliceAndBob(t, s, "M")
	a.send(chat("M", "alice", "one"))
	a.expect()
	b.expect()
	// The chat is counted once relayed, which its readers may beat.
	waitFor(t, "the chat counted", func() bool { return s.counters.deliveries.Load() == 1 })
	bad := dial(t, s)
	bad.sendRaw([]byte{0xff, 0xff, 0, 0, 0, 1})
	bad.expectClosed()
	waitFor(t, "protocol close", func() bool { return s.counters.closed[ReasonProtocol].Load() == 1 })

	expected := `
# HELP volanogo_chat_deliveries_total Chat indications queued to receivers.
# TYPE volanogo_chat_deliveries_total counter
volanogo_chat_deliveries_total 1
# HELP volanogo_chats_total Public chat messages accepted and relayed.
# TYPE volanogo_chats_total counter
volanogo_chats_total 1
# HELP volanogo_connections_open Connections open now.
# TYPE volanogo_connections_open gauge
volanogo_connections_open 2
# HELP volanogo_rooms Public rooms, permanent and dynamic.
# TYPE volanogo_rooms gauge
volanogo_rooms 2
# HELP volanogo_users Users in public rooms (one per connection per room).
# TYPE volanogo_users gauge
volanogo_users 2
`
	require.NoError(t, testutil.GatherAndCompare(s.Registry(), strings.NewReader(expected),
		"volanogo_chats_total", "volanogo_chat_deliveries_total", "volanogo_connections_open", "volanogo_rooms", "volanogo_users"))

	got, err := s.Registry().Gather()
	require.NoError(t, err)
	values := map[string]float64{}
	for _, mf := range got {
		for _, m := range mf.GetMetric() {
			key := mf.GetName()
			for _, l := range m.GetLabel() {
				key += "{" + l.GetName() + "=" + l.GetValue() + "}"
			}
			if c := m.GetCounter(); c != nil {
				values[key] = c.GetValue()
			}
		}
	}
	assert.Equal(t, 3.0, values["volanogo_connections_accepted_total{transport=tcp}"])
	assert.Equal(t, 1.0, values["volanogo_connections_closed_total{reason=protocol}"])
	assert.Equal(t, 2.0, values["volanogo_packets_received_total{packet=Access}"])
	assert.Equal(t, 1.0, values["volanogo_packets_received_total{packet=Chat}"])
	assert.Equal(t, 2.0, values["volanogo_packets_sent_total{packet=Chat}"], "one confirm, one indication")
	assert.Positive(t, values["volanogo_sent_bytes_total{packet=EnterRoom}"])
	assert.Contains(t, values, "process_cpu_seconds_total")

	problems, err := testutil.GatherAndLint(s.Registry())
	require.NoError(t, err)
	assert.Empty(t, problems)

	// and over HTTP, as load and Prometheus read it
	cl := http.Client{Timeout: 5 * time.Second}
	resp, err := cl.Get("http://" + s.MetricsAddr().String() + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	assert.Contains(t, string(body), "process_resident_memory_bytes")
	assert.Contains(t, string(body), `volanogo_connections_closed_total{reason="slow_consumer"} 0`)
}

// TestSlowConsumer: a member that stops reading is cut off once its
// waiting bytes pass the send buffer, and the room goes on.
func TestSlowConsumer(t *testing.T) { forEngines(t, testSlowConsumer) }

func testSlowConsumer(t *testing.T, engine string) {
	s := startServer(t, Config{Engine: engine, SendBuffer: 64 << 10})
	a := dial(t, s)
	a.access("Slow")
	a.enter("Slow", "talker")
	sl := dial(t, s)
	require.NoError(t, sl.c.(interface{ SetReadBuffer(int) error }).SetReadBuffer(4096))
	sl.access("Slow")
	sl.enter("Slow", "sleeper")
	a.expect()
	text := strings.Repeat("x", 200)
	chatB, err := chat("Slow", "talker", text).AppendPacket(nil)
	require.NoError(t, err)
	deadline := time.Now().Add(20 * time.Second)
	sent, cutOff := 0, false
	for !cutOff {
		require.True(t, time.Now().Before(deadline), "slow consumer never cut off after %d chats", sent)
		a.sendRaw(chatB)
		sent++
		// the talker is never held up: every chat is confirmed, and the
		// sleeper's exit arrives among the confirms once it is cut off
		for confirmed := false; !confirmed; {
			switch p := a.expect().(type) {
			case *protocol.Chat:
				require.Equal(t, protocol.Confirm, p.Type)
				confirmed = true
			case *protocol.ExitRoom:
				assert.Equal(t, &protocol.ExitRoom{Type: protocol.Indication, RoomName: "Slow", UserName: "sleeper"}, p)
				cutOff = true
			default:
				t.Fatalf("unexpected %#v", p)
			}
		}
	}
	waitFor(t, "slow-consumer close counted", func() bool { return s.counters.closed[ReasonSlowConsumer].Load() == 1 })
	a.sendRaw(chatB)
	assert.Equal(t, protocol.Confirm, a.expect().PacketType())
	t.Logf("cut off after %d chats of %d bytes", sent, len(chatB))
}

// TestPipelinedRequests: a client that sends 30,000 requests at once and
// reads its replies as fast as it can is served, not cut off as a slow
// consumer: a loop that handles more of its input than its replies can
// keep up with must stop reading it, not count the backlog against it.
func TestPipelinedRequests(t *testing.T) { forEngines(t, testPipelinedRequests) }

func testPipelinedRequests(t *testing.T, engine string) {
	s := startServer(t, Config{Engine: engine, MaxPrivate: Off, RequestRate: Off})
	c := dial(t, s)
	c.access("Pipe")
	c.enter("Pipe", "talker")
	const requests, batch = 30000, 1000
	req, err := (&protocol.EnterPrivate{Type: protocol.Request, RoomName: "Pipe", FromName: "talker", ToName: "talker"}).AppendPacket(nil)
	require.NoError(t, err)
	b := make([]byte, 0, batch*len(req))
	for range batch {
		b = append(b, req...)
	}
	wrote := make(chan error, 1)
	go func() {
		for range requests / batch {
			if _, err := c.c.Write(b); err != nil {
				wrote <- err
				return
			}
		}
		wrote <- nil
	}()
	for i := range requests {
		p, err := c.next(10 * time.Second)
		require.NoError(t, err, "reply %d of %d", i+1, requests)
		require.Equal(t, protocol.IDEnterPrivate, p.PacketID(), "reply %d", i+1)
	}
	require.NoError(t, <-wrote)
	assert.Zero(t, s.counters.closed[ReasonSlowConsumer].Load())
}

// TestMetricsInfo: the server says the engine it uses and its version in
// volanogo_server_info, which volanogo load records.
func TestMetricsInfo(t *testing.T) { forEngines(t, testMetricsInfo) }

func testMetricsInfo(t *testing.T, engine string) {
	s := startServer(t, Config{Engine: engine})
	expected := `
# HELP volanogo_server_info The server: the engine serving its TCP chat connections and its version (always 1).
# TYPE volanogo_server_info gauge
volanogo_server_info{engine="` + s.Engine() + `",version="` + version() + `"} 1
`
	require.NoError(t, testutil.GatherAndCompare(s.Registry(), strings.NewReader(expected), "volanogo_server_info"))
	assert.Equal(t, engine, s.Engine())
	assert.NotEmpty(t, version())
}

// TestMetricsCoalesce: the epoll engine's coalescing window is in the
// metrics, which volanogo load records with the run (0 without one).
func TestMetricsCoalesce(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("--coalesce is the epoll engine's")
	}
	for _, d := range []time.Duration{0, 250 * time.Microsecond} {
		s := startServer(t, Config{Engine: EngineEpoll, Coalesce: d})
		expected := fmt.Sprintf(`
# HELP volanogo_server_coalesce_seconds How long an epoll loop waits after a round of few events before it looks for more (serve --coalesce; 0: no wait).
# TYPE volanogo_server_coalesce_seconds gauge
volanogo_server_coalesce_seconds %g
`, d.Seconds())
		require.NoError(t, testutil.GatherAndCompare(s.Registry(), strings.NewReader(expected), "volanogo_server_coalesce_seconds"))
	}
}
