package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volanogo/volanogo/internal/campaign"
	"github.com/volanogo/volanogo/internal/results"
	"github.com/volanogo/volanogo/internal/server"
	"github.com/volanogo/volanogo/internal/swarm"
)

// fakeLoad replaces the engine for the duration of a test and records the
// configuration it is given.
func fakeLoad(t *testing.T, err error) *campaign.Config {
	t.Helper()
	var got campaign.Config
	old := runCampaign
	runCampaign = func(_ context.Context, cfg campaign.Config, _ campaign.Sink) (*campaign.Result, error) {
		got = cfg
		return &campaign.Result{}, err
	}
	oldCheck := checkTarget
	checkTarget = func(context.Context, campaign.Config) error { return nil } // no server behind the fake
	t.Cleanup(func() { runCampaign, checkTarget = old, oldCheck })
	return &got
}

func TestLoadFlags(t *testing.T) {
	t.Chdir(t.TempDir()) // the default -file is written in the working directory
	for _, tc := range []struct {
		args  []string
		code  int
		check func(t *testing.T, c campaign.Config)
		err   string
	}{
		{args: []string{"-rooms", "105"}, check: func(t *testing.T, c campaign.Config) { assert.Equal(t, []int{105}, c.Steps) }},
		{args: []string{"--rooms", "105"}, check: func(t *testing.T, c campaign.Config) { assert.Equal(t, []int{105}, c.Steps) }},
		{args: []string{"-rooms=105"}, check: func(t *testing.T, c campaign.Config) { assert.Equal(t, []int{105}, c.Steps) }},
		{args: []string{"-rooms", "15,30,45"}, check: func(t *testing.T, c campaign.Config) { assert.Equal(t, []int{15, 30, 45}, c.Steps) }},
		{args: []string{"-pause", "2"}, check: func(t *testing.T, c campaign.Config) { assert.Equal(t, 2*time.Second, c.Spec.Pause) }},
		{args: []string{"-pause", "250ms"}, check: func(t *testing.T, c campaign.Config) { assert.Equal(t, 250*time.Millisecond, c.Spec.Pause) }},
		{args: []string{}, check: func(t *testing.T, c campaign.Config) {
			assert.Equal(t, "localhost", c.Host)
			assert.Equal(t, 8000, c.Port)
			assert.Equal(t, 1, c.Start)
			assert.Equal(t, []int{50}, c.Steps)
			assert.Equal(t, 20, c.Spec.Users)
			assert.Equal(t, 100, c.Spec.Count)
			assert.Zero(t, c.Spec.Pause)
			assert.Equal(t, 30*time.Second, c.Spec.StallTimeout)
			assert.Equal(t, time.Second, c.Spec.SLO)
			assert.Zero(t, c.Runs)
			assert.Equal(t, 1, c.Discard)
			assert.Zero(t, c.Procs)
			assert.True(t, c.SplitWhenNeeded, "a step one process cannot hold is split by default")
		}},
		{args: []string{"-host", "example.org", "-port", "8001", "-start", "3", "-users", "5", "-count", "0", "--duration", "5s",
			"-file", "x.log", "-run", "--transport", "ws", "--url", "ws://h:1/chat", "-o", "out/", "--label", "L",
			"--connect-rate", "100", "--connect-concurrency", "4", "--stall-timeout", "2s", "--bind", "127.0.0.2,127.0.0.3",
			"--slo", "50ms", "--server-metrics", "http://h/metrics", "-runs", "4", "--discard", "2", "--quiet"},
			check: func(t *testing.T, c campaign.Config) {
				assert.Equal(t, campaign.Config{Host: "example.org", Port: 8001, Start: 3, Steps: []int{50},
					Spec: swarm.Spec{Users: 5, Count: 0, Duration: 5 * time.Second, ConnectRate: 100, ConnectConcurrency: 4,
						StallTimeout: 2 * time.Second, Bind: []string{"127.0.0.2", "127.0.0.3"}, SLO: 50 * time.Millisecond,
						StormShare: 1, StormBackoff: 50 * time.Millisecond, StormBackoffMax: 2 * time.Second, Engine: swarm.EngineGoroutine,
						MaxPacket: swarm.DefaultMaxPacket},
					Transport: "ws", URL: "ws://h:1/chat", Label: "L", ServerMetrics: "http://h/metrics", Runs: 4, Discard: 2,
					ClientTimeout: 10 * time.Minute, SplitWhenNeeded: true, CommandLine: c.CommandLine}, c)
			}},
		{args: []string{"--serve", "--server-cmd", "x {port}"}, check: func(t *testing.T, c campaign.Config) {
			assert.True(t, c.Serve)
			assert.Equal(t, "x {port}", c.ServerCmd)
			require.Len(t, c.ServeCommand, 6, "this executable's serve, on ports the kernel chooses")
			assert.Equal(t, []string{"serve", "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0"}, c.ServeCommand[1:])
		}},
		{args: []string{"--serve", "--transport", "ws"}, check: func(t *testing.T, c campaign.Config) {
			assert.Contains(t, c.ServeCommand, "--ws-listen")
		}},
		{args: []string{"--client-cmd", "mark.sh -port {port}", "--client-timeout", "1m"}, check: func(t *testing.T, c campaign.Config) {
			assert.Equal(t, "mark.sh -port {port}", c.ClientCmd)
			assert.Equal(t, time.Minute, c.ClientTimeout)
		}},
		{args: []string{"--scenario", "storm", "--storm-at", "5s", "--storm-share", "0.25", "--storm-backoff", "10ms", "--storm-backoff-max", "1s"},
			check: func(t *testing.T, c campaign.Config) {
				assert.Equal(t, "storm", c.Spec.Scenario)
				assert.Equal(t, 5*time.Second, c.Spec.StormAt)
				assert.Equal(t, 0.25, c.Spec.StormShare)
				assert.Equal(t, 10*time.Millisecond, c.Spec.StormBackoff)
				assert.Equal(t, time.Second, c.Spec.StormBackoffMax)
			}},
		{args: []string{"--strict-order", "--batch-reads"}, check: func(t *testing.T, c campaign.Config) {
			assert.True(t, c.Spec.StrictOrder)
			assert.True(t, c.Spec.BatchReads)
			assert.False(t, c.Spec.Strict)
		}},
		{args: []string{"--max-packet", "4096"}, check: func(t *testing.T, c campaign.Config) {
			assert.Equal(t, 4096, c.Spec.MaxPacket)
		}},
		{args: []string{"--max-packet", "100"}, code: 2, err: "--max-packet: 100 bytes is below 1024"},
		{args: []string{"-pause", "10ms", "--publishers", "1"}, check: func(t *testing.T, c campaign.Config) {
			assert.Equal(t, 1, c.Spec.Publishers)
		}},
		{args: []string{"--publishers", "1"}, code: 2, err: "--publishers: paced runs only: give -pause"},
		{args: []string{"-pause", "1s", "--publishers", "1", "--scenario", "storm"}, code: 2, err: "--publishers: paced runs only, not --scenario storm"},
		{args: []string{"-pause", "1s", "--publishers", "21"}, code: 2, err: "--publishers: between 1 and the users of a room, 20 (0: all; got 21)"},
		{args: []string{"--strict"}, check: func(t *testing.T, c campaign.Config) {
			assert.True(t, c.Spec.Strict)
			assert.False(t, c.Spec.StrictOrder, "order is --strict-order's")
		}},
		{args: []string{"-rooms", "abc"}, code: 2, err: "-rooms: value is not an integer (abc)"},
		{args: []string{"-users", "x"}, code: 2, err: "-users: value is not an integer (x)"},
		{args: []string{"-count=1.5"}, code: 2, err: "-count: value is not an integer (1.5)"},
		{args: []string{"-pause", "soon"}, code: 2, err: "-pause: value is not an integer or a duration (soon)"},
		{args: []string{"-users", "1"}, code: 2, err: "-users: value must be at least 2 (1)"},
		{args: []string{"-nope"}, code: 2, err: "unknown"},
		{args: []string{"--nope"}, code: 2, err: "--nope: illegal argument (unknown option)"},
		{args: []string{"-nope"}, code: 2, err: "-nope: illegal argument (unknown option)"},
		{args: []string{"-rooms"}, code: 2, err: "needs an argument"},
		{args: []string{"extra"}, code: 2, err: "unknown command"},
	} {
		t.Run(fmt.Sprint(tc.args), func(t *testing.T) {
			got := fakeLoad(t, nil)
			code, _, errOut := run(t, append([]string{"load"}, tc.args...)...)
			assert.Equal(t, tc.code, code, errOut)
			if tc.err != "" {
				assert.Contains(t, errOut, tc.err)
				assert.Contains(t, errOut, "Run 'volanogo load --help' for usage.")
			}
			if tc.check != nil {
				tc.check(t, *got)
			}
		})
	}
}

func TestLoadExitCodes(t *testing.T) {
	t.Chdir(t.TempDir()) // the default -file is written in the working directory
	for _, tc := range []struct {
		err  error
		code int
	}{
		{nil, 0},
		{campaign.ErrFailed, 1},
		{campaign.ErrInterrupted, 130},
		{&campaign.ConfigError{Err: errors.New("-count 0 runs forever: give --duration")}, 2},
		{&swarm.ConfigError{Err: errors.New("count 0 runs forever: give a duration")}, 2},
		{errors.New("disk full"), 1},
	} {
		fakeLoad(t, tc.err)
		code, _, errOut := run(t, "load")
		assert.Equal(t, tc.code, code, "%v", tc.err)
		if tc.code == 2 {
			// The error itself (before, the whole usage was printed and
			// this matched the usage's own text).
			assert.Contains(t, errOut, "runs forever: give ")
			assert.Contains(t, errOut, "Run 'volanogo load --help' for usage.")
		}
	}
}

func TestLoadEndToEnd(t *testing.T) {
	s, err := server.New(server.Config{Listen: "127.0.0.1:0"})
	require.NoError(t, err)
	require.NoError(t, s.Start())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
	})
	host, port, _ := net.SplitHostPort(s.Addr().String())
	dir := t.TempDir()
	doc := filepath.Join(dir, "run.json")
	code, out, errOut := run(t, "load", "-host", host, "-port", port, "-rooms", "2", "-users", "3", "-count", "2",
		"-file", filepath.Join(dir, "volano-mark.log"), "-o", doc)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "VolanoMark version = 2.13.4\nMessages sent      = 12\nMessages received  = 24\nTotal messages     = 36\n")
	d, err := results.ReadFile(doc)
	require.NoError(t, err)
	assert.True(t, d.Passed)
	assert.NotEmpty(t, d.CommandLine)

	// Nothing listening: exit 1, said before any run.
	code, out, errOut = run(t, "load", "-host", "127.0.0.1", "-port", "1", "-rooms", "1", "-users", "2", "-count", "1", "-file", "")
	assert.Equal(t, 1, code)
	assert.Empty(t, out)
	assert.Contains(t, errOut, "nothing listens at 127.0.0.1:1 (connection refused)")
}
