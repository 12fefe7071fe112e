package campaign

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volanogo/volanogo/internal/broker"
	"github.com/volanogo/volanogo/internal/broker/brokertest"
	"github.com/volanogo/volanogo/internal/swarm"
)

// TestServeBrokers: each broker program --serve knows, started per run
// from its command (mosquitto's with its configuration file, removed
// after), measured from /proc, named with its version.
func TestServeBrokers(t *testing.T) {
	for _, b := range broker.Servers {
		t.Run(b.Name, func(t *testing.T) {
			brokertest.Start(t, b.Name).Stop() // skips when it is not installed
			checkGoroutines(t)
			t.Setenv("TMPDIR", t.TempDir())
			cfg := Config{ServerCmd: b.Command, Transport: b.Protocol, Steps: []int{2}, Runs: 2,
				Spec: swarm.Spec{Users: 3, Count: 5, StallTimeout: 5 * time.Second}}
			rec := &recorder{}
			_, err := Run(context.Background(), cfg, rec)
			require.NoError(t, err)
			require.Len(t, rec.docs, 2)
			for _, d := range rec.docs {
				require.True(t, d.Passed, "%+v", d.Failures)
				assert.Equal(t, b.Protocol, d.Config.Transport)
				assert.Equal(t, int64(30+60), d.Counts.Total)
				require.NotNil(t, d.Server)
				assert.Equal(t, "proc", d.Server.Source)
				assert.Regexp(t, `^`+b.Name+` \d+\.\d+\.\d+`, d.Label)
				require.NotNil(t, d.ServerInfo, "one server, one row")
				assert.Equal(t, b.Name, d.ServerInfo.Product)
				assert.Regexp(t, `^\d+\.\d+\.\d+`, d.ServerInfo.Version)
				assert.Empty(t, d.ServerInfo.Flags, "--serve's command has only addresses")
				require.NoError(t, d.Validate())
			}
			left, err := filepath.Glob(filepath.Join(os.Getenv("TMPDIR"), "volanogo-*"))
			require.NoError(t, err)
			assert.Empty(t, left, "the configuration files go with their servers")
		})
	}
}
