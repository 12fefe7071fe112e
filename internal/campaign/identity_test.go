package campaign

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volanogo/volanogo/internal/results"
	"github.com/volanogo/volanogo/internal/swarm"
)

// TestMaxConnectionsOneServer sweeps a server that takes 30 connections:
// 20 hold, 40 fail having carried 30 exactly, and both runs record one
// server (product, engine, flags, its machine), the failure naming the
// server's own reason.
func TestMaxConnectionsOneServer(t *testing.T) {
	checkGoroutines(t)
	serveArgv(t, false)
	cfg := Config{ServerCmd: os.Args[0] + " --listen 127.0.0.1:{port} --metrics-listen 127.0.0.1:0 --max-connections 30",
		Steps: []int{1, 2}, Runs: 1, ServerLabels: map[string]string{"site": "lab"},
		Spec: swarm.Spec{Users: 20, Count: 3, StallTimeout: 5 * time.Second}}
	rec := &recorder{}
	res, err := Run(context.Background(), cfg, rec)
	require.ErrorIs(t, err, ErrFailed, rec.out())
	require.Len(t, res.Steps, 2)
	ok, failed := res.Steps[0].Docs[0], res.Steps[1].Docs[0]
	require.True(t, ok.Passed, "%+v", ok.Failures)
	require.False(t, failed.Passed)
	require.NotNil(t, failed.Connections.Carried)
	assert.Equal(t, int64(30), *failed.Connections.Carried, "%+v", failed.Connections)
	assert.Equal(t, ok.Label, failed.Label, "one server, one label")
	for _, d := range []*results.Document{ok, failed} {
		si := d.ServerInfo
		require.NotNil(t, si)
		assert.Equal(t, "volanogo serve", si.Product)
		assert.Equal(t, "goroutine", si.Engine)
		assert.NotEmpty(t, si.Version)
		assert.Equal(t, []string{"--max-connections", "30"}, si.Flags)
		assert.Equal(t, map[string]string{"site": "lab"}, si.Labels)
		require.NotNil(t, si.Environment, "the server said its machine")
		assert.Positive(t, si.Environment.CPUs)
		require.NotNil(t, d.Network, "the round trip, measured before the run")
		assert.True(t, d.Network.Loopback)
		assert.Positive(t, d.Network.RTTSeconds)
	}
	assert.Equal(t, ok.ServerInfo.Name(), failed.ServerInfo.Name())
	require.NotEmpty(t, failed.Failures)
	assert.Contains(t, failed.Failures[0].Server, "refused (max_connections)")
}

// TestServerAccount: the server's closes and refusals between two
// samples, by reason, without the closes the client itself caused.
func TestServerAccount(t *testing.T) {
	a := serverSample{ok: true, reasons: map[string]float64{"refused:max_connections": 2, "closed:eof": 5}}
	b := serverSample{ok: true, reasons: map[string]float64{"refused:max_connections": 54, "closed:eof": 90,
		"closed:read_error": 3, "closed:slow_consumer": 1, "accept:emfile": 0, "request:max_private": 4}}
	assert.Equal(t, "52 connections refused (max_connections); 1 connection closed (slow_consumer); 4 requests refused (max_private)",
		serverAccount(a, b))
	assert.Empty(t, serverAccount(a, a))
	assert.Empty(t, serverAccount(a, serverSample{}), "no sample, no account")
	full := serverSample{ok: true, openFDs: 199, maxFDs: 200}
	assert.Equal(t, "out of open files: 199 open, its open-files limit is 200", serverAccount(serverSample{}, full))
}

// TestErrorLines: a spawned server's output is quoted by its error lines
// only, the last three, each bounded and escaped.
func TestErrorLines(t *testing.T) {
	out := strings.Join([]string{
		"Server started on port 8000",
		"java.net.SocketException: Too many open files",
		"\tat java.net.PlainSocketImpl.accept(Native Method)",
		"ERROR one",
		"WARN level=warn something",
		"info: fine",
		"fatal: \x1b[31mred\x1b[0m " + strings.Repeat("x", 300),
	}, "\n")
	got := errorLines(out)
	assert.NotContains(t, got, "Server started")
	assert.NotContains(t, got, "Too many open files", "only the last three")
	assert.Contains(t, got, "ERROR one / WARN level=warn something / fatal: \\x1b[31mred")
	assert.NotContains(t, got, "\x1b")
	assert.Less(t, len([]rune(got)), 3*(maxErrorLine+10))
	assert.Empty(t, errorLines("all is well\nlistening"))
}

// TestCommandIdentity: a server command names the server and its flags,
// less its addresses.
func TestCommandIdentity(t *testing.T) {
	for _, c := range []struct {
		argv    string
		product string
		flags   []string
	}{
		{"./volanogo serve --listen 127.0.0.1:{port} --metrics-listen 127.0.0.1:0 --max-connections 150 --engine=epoll",
			"volanogo serve", []string{"--max-connections", "150", "--engine=epoll"}},
		{"java -Xmx1g -cp lib COM.volano.Main -port {port}", "java COM.volano.Main", []string{"-Xmx1g", "-cp", "lib"}},
		{"nats-server -a 127.0.0.1 -p {port} --max_payload 4096", "nats-server", []string{"-a", "127.0.0.1", "--max_payload", "4096"}},
		{"/usr/bin/redis-server --port {port} --save ''", "redis-server", []string{"--save", "''"}},
	} {
		si := commandIdentity(strings.Fields(c.argv))
		require.NotNil(t, si, c.argv)
		assert.Equal(t, c.product, si.Product, c.argv)
		assert.Equal(t, c.flags, si.Flags, c.argv)
	}
	assert.Nil(t, commandIdentity(nil))
}
