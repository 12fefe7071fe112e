// Package testutil holds the helpers that the tests of several packages
// share: a check that a test leaves no goroutine behind, and a chat server
// on a loopback port. Only tests import it.
package testutil

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volanogo/volanogo/internal/server"
	"github.com/volanogo/volanogo/internal/testutil/leak"
)

// CheckGoroutines fails t if goroutines started during it are still running
// three seconds after its end (see package leak: goroutines are told apart
// by id, and the runtime's and the testing package's own are left out).
func CheckGoroutines(t *testing.T) {
	t.Helper()
	leak.Check(t, 3*time.Second)
}

// Main runs m for a package's TestMain and returns the exit code, failing
// the run if the tests left goroutines behind (leak.Main).
func Main(m *testing.M) int { return leak.Main(m) }

// StartServer starts a chat server on 127.0.0.1:0 (unless cfg says where)
// for the length of t.
func StartServer(t testing.TB, cfg server.Config) *server.Server {
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

// Slack is d, or four times d under the race detector: the budget of a
// timing window that holds on a normal build.
func Slack(d time.Duration) time.Duration {
	if Race {
		return 4 * d
	}
	return d
}
