package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volanogo/volanogo/internal/server"
	"github.com/volanogo/volanogo/internal/testutil"
)

// TestSmoke runs every attack at a tiny size against an in-process server,
// so that the suite cannot rot: each attack runs, reports a row and is
// held (throughput aside: windows this short measure nothing).
func TestSmoke(t *testing.T) {
	// The server's deadlines and buffers are shrunk so that the attacks
	// that wait for them end in a blink.
	s := testutil.StartServer(t, server.Config{WSListen: "127.0.0.1:0", MetricsListen: "127.0.0.1:0",
		AccessTimeout: testutil.Slack(time.Second), HandshakeTimeout: testutil.Slack(time.Second),
		ViolationHold: testutil.Slack(time.Second), SendBuffer: 4096, SocketSendBuffer: 4096, MaxRooms: 3})
	cfg := Config{
		Target:   s.Addr().String(),
		WS:       "ws://" + s.WSAddr().String() + "/chat",
		Metrics:  "http://" + s.MetricsAddr().String() + "/metrics",
		Duration: 50 * time.Millisecond, Wait: testutil.Slack(5 * time.Second), Window: 50 * time.Millisecond,
		Drip: 20 * time.Millisecond, Conns: 6, Rooms: 6, Privates: 200,
		// conn-flood and slowloris-silent spread their 6 connections over
		// two helper processes: this test binary (see TestMain).
		PerProc: 4, Self: os.Args[0],
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
	for _, r := range rows {
		assert.Equal(t, Held, r.Verdict, "%s: %s", r.Attack, r.Why)
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
		{"--target", "a:1", "--rooms", "19000"},
	} {
		var out, errOut bytes.Buffer
		assert.Equal(t, 2, run(context.Background(), args, &out, &errOut), "%v", args)
		assert.NotEmpty(t, errOut.String(), "%v", args)
	}
}
