package cli

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volanogo/volanogo/internal/broker/brokertest"
	"github.com/volanogo/volanogo/internal/campaign"
	"github.com/volanogo/volanogo/internal/results"
)

// TestLoadBrokerFlags: the target as a URL, --serve naming a broker, the
// broker options, and their usage errors.
func TestLoadBrokerFlags(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, tc := range []struct {
		args  []string
		code  int
		check func(t *testing.T, c campaign.Config)
		err   string
	}{
		{args: []string{"--url", "nats://127.0.0.2:4333", "--room-prefix", "chat."}, check: func(t *testing.T, c campaign.Config) {
			assert.Equal(t, "nats", c.Transport)
			assert.Equal(t, "127.0.0.2", c.Host)
			assert.Equal(t, 4333, c.Port)
			assert.Equal(t, "chat.", c.Prefix)
			assert.Empty(t, c.URL)
		}},
		{args: []string{"--url", "redis://localhost"}, check: func(t *testing.T, c campaign.Config) {
			assert.Equal(t, "redis", c.Transport)
			assert.Equal(t, 6379, c.Port, "Redis's port by default")
		}},
		{args: []string{"--url", "mqtt://h", "--qos", "1"}, check: func(t *testing.T, c campaign.Config) {
			assert.Equal(t, "mqtt", c.Transport)
			assert.Equal(t, 1883, c.Port)
			assert.Equal(t, 1, c.QoS)
		}},
		{args: []string{"--url", "volano://h:8001"}, check: func(t *testing.T, c campaign.Config) {
			assert.Equal(t, "tcp", c.Transport)
			assert.Equal(t, 8001, c.Port)
		}},
		{args: []string{"--transport", "nats", "-host", "h", "-port", "4222"}, check: func(t *testing.T, c campaign.Config) {
			assert.Equal(t, "nats", c.Transport)
		}},
		{args: []string{"--serve", "nats-server", "-count", "5"}, check: func(t *testing.T, c campaign.Config) {
			assert.False(t, c.Serve)
			assert.Equal(t, "nats", c.Transport)
			assert.Equal(t, "nats-server -a 127.0.0.1 -p {port}", c.ServerCmd)
			assert.Equal(t, 5, c.Spec.Count)
		}},
		{args: []string{"--serve=mosquitto", "--qos", "1"}, check: func(t *testing.T, c campaign.Config) {
			assert.Equal(t, "mqtt", c.Transport)
			assert.Equal(t, "mosquitto -c {conf}", c.ServerCmd)
		}},
		{args: []string{"-rooms", "3", "--serve", "redis-server"}, check: func(t *testing.T, c campaign.Config) {
			assert.Equal(t, "redis", c.Transport)
			assert.Equal(t, []int{3}, c.Steps)
		}},
		{args: []string{"--serve"}, check: func(t *testing.T, c campaign.Config) {
			assert.True(t, c.Serve, "--serve alone is volanogo serve")
			assert.Empty(t, c.ServerCmd)
		}},
		{args: []string{"--serve=bogus"}, code: 2, err: `--serve: "bogus" is not nats-server, redis-server, mosquitto`},
		{args: []string{"--serve", "bogus"}, code: 2, err: "unknown command"},
		{args: []string{"--serve", "nats-server", "--server-cmd", "x {port}"}, code: 2, err: "exclude each other"},
		{args: []string{"--serve", "nats-server", "--transport", "mqtt"}, code: 2, err: "speaks nats, not mqtt"},
		{args: []string{"--url", "http://h"}, code: 2, err: `the scheme "http" is not volano, ws, wss, nats, redis or mqtt`},
		{args: []string{"--url", "nats://h:x"}, code: 2, err: "is not a URL"},
	} {
		t.Run(fmt.Sprint(tc.args), func(t *testing.T) {
			got := fakeLoad(t, nil)
			code, _, errOut := run(t, append([]string{"load"}, tc.args...)...)
			assert.Equal(t, tc.code, code, errOut)
			if tc.err != "" {
				assert.Contains(t, errOut, tc.err)
			}
			if tc.check != nil {
				tc.check(t, *got)
			}
		})
	}
}

// TestLoadServeBroker: load --serve nats-server starts a fresh broker per
// run, reads its CPU from /proc and names it, with its version, in the
// documents.
func TestLoadServeBroker(t *testing.T) {
	b := brokertest.Start(t, "nats-server") // skips when it is not installed
	b.Stop()
	dir := t.TempDir()
	code, out, errOut := run(t, "load", "--serve", "nats-server", "-rooms", "2", "-users", "3", "-count", "20", "-runs", "2",
		"-file", "", "-o", dir, "--quiet")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "Messages sent      = 120\nMessages received  = 240\n")
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	require.NoError(t, err)
	require.Len(t, files, 2)
	d, err := results.ReadFile(files[0])
	require.NoError(t, err)
	assert.True(t, d.Passed)
	assert.Equal(t, "nats", d.Config.Transport)
	assert.Equal(t, []string{"/bin/sh", "-c", "exec nats-server -a 127.0.0.1 -p {port}"}, d.Config.ServerCommand)
	assert.Regexp(t, `^nats-server \d+\.\d+\.\d+`, d.Label, "the broker's name and version")
	require.NotNil(t, d.Server, "the broker's usage from /proc")
	assert.Equal(t, "proc", d.Server.Source)
	assert.Positive(t, d.Server.RSSStartBytes)
}
