package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volanogo/volanogo/internal/server"
	"github.com/volanogo/volanogo/internal/testutil"
)

// TestSmoke runs every attack at a tiny size against an in-process server,
// so that the suite cannot rot: each attack runs and reports a row, the
// server lives through all of them, and the attacks that need no timeout
// of the server to be closed are held.
func TestSmoke(t *testing.T) {
	s := testutil.StartServer(t, server.Config{WSListen: "127.0.0.1:0", MetricsListen: "127.0.0.1:0"})
	cfg := Config{
		Target:   s.Addr().String(),
		WS:       "ws://" + s.WSAddr().String() + "/chat",
		Metrics:  "http://" + s.MetricsAddr().String() + "/metrics",
		Duration: 50 * time.Millisecond, Wait: 200 * time.Millisecond, Window: 50 * time.Millisecond,
		Drip: 20 * time.Millisecond, Conns: 6, Rooms: 6, Privates: 200,
		Timeout: testutil.Slack(5 * time.Second),
		// Windows this short measure nothing: only the verdict's other
		// grounds are checked.
		Tolerance: 0.999,
	}
	ctx, cancel := context.WithTimeout(context.Background(), testutil.Slack(60*time.Second))
	defer cancel()
	var progress bytes.Buffer
	rows, err := Run(ctx, cfg, &progress)
	t.Log("\n" + progress.String())
	require.NoError(t, err)
	require.Len(t, rows, len(attacks()))
	closedAtOnce := map[string]bool{"garbage": true, "truncated": true, "unknown-id": true, "huge-counts": true,
		"huge-names": true, "ws-oversized": true, "ws-text": true, "ws-unmasked": true, "ws-bad-origin": true,
		"metrics-cardinality": true, "unknown-type": true}
	for _, r := range rows {
		assert.NotEqual(t, Failed, r.Verdict, "%s: %s", r.Attack, r.Why)
		assert.NotEqual(t, Skipped, r.Verdict, r.Attack)
		if closedAtOnce[r.Attack] {
			assert.Equal(t, Held, r.Verdict, "%s: %s", r.Attack, r.Why)
		}
	}
	var table bytes.Buffer
	WriteTable(&table, rows)
	for _, a := range attacks() {
		assert.Contains(t, table.String(), a.name)
	}
	assert.True(t, strings.HasPrefix(table.String(), "attack "), table.String())
}

// TestFlags: bad flags exit 2 with a hint.
func TestFlags(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"--target", "a:1", "--serve"},
		{"--target", "a:1", "--only", "nosuch"},
		{"--target", "a:1", "--tolerance", "1"},
		{"--bogus"},
		{"--target", "a:1", "extra"},
	} {
		var out, errOut bytes.Buffer
		assert.Equal(t, 2, run(context.Background(), args, &out, &errOut), "%v", args)
		assert.NotEmpty(t, errOut.String(), "%v", args)
	}
}
