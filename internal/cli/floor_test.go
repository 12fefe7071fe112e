package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volanogo/volanogo/internal/floor"
	"github.com/volanogo/volanogo/internal/results"
)

var testFloor = results.Floor{Engine: "epoll", Rooms: 15, Users: 20, Connections: 300, Count: 100,
	Messages: 600000, MessageBytes: 80, ElapsedSeconds: 4, Throughput: 150000, ServerCPUSeconds: 3,
	ClientCPUSeconds: 2.4, ServerCPUPerMessageMicros: 5, ClientCPUPerMessageMicros: 4, Exits: true,
	When: time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)}

// fakeFloor replaces the floor's engine for the test, recording its spec.
func fakeFloor(t *testing.T, f results.Floor, err error) *floor.Spec {
	t.Helper()
	got := &floor.Spec{}
	old := runFloor
	runFloor = func(_ context.Context, s floor.Spec) (results.Floor, error) {
		*got = s
		return f, err
	}
	t.Cleanup(func() { runFloor = old })
	return got
}

func TestFloorFlags(t *testing.T) {
	spec := fakeFloor(t, testFloor, nil)
	code, out, errOut := run(t, "floor", "-rooms", "15", "--count", "100", "--engine", "uring")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, floor.Spec{Rooms: 15, Users: 20, Count: 100, Engine: "uring", StallTimeout: floor.DefaultStallTimeout}, *spec)
	assert.Equal(t, "Kernel floor (epoll): 15 rooms, 300 connections, 600000 messages of 80 bytes in 4.000 seconds\n"+
		"  150000 messages per second; server 5.00 µs, client 4.00 µs per message\n", out)

	code, _, _ = run(t, "floor")
	require.Equal(t, 0, code)
	assert.Equal(t, floor.Spec{Rooms: 50, Users: 20, Engine: "epoll", StallTimeout: floor.DefaultStallTimeout}, *spec)

	chatOnly := testFloor
	chatOnly.Exits = false
	spec = fakeFloor(t, chatOnly, nil)
	code, out, _ = run(t, "floor", "--chat-only")
	require.Equal(t, 0, code)
	assert.True(t, spec.ChatOnly)
	assert.Contains(t, out, "Kernel floor (epoll, chats only): 15 rooms")
}

func TestFloorJSON(t *testing.T) {
	fakeFloor(t, testFloor, nil)
	code, out, _ := run(t, "floor", "--json")
	require.Equal(t, 0, code)
	var got results.Floor
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	assert.Equal(t, testFloor, got)
}

func TestFloorUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"floor", "--rooms", "x"},
		{"floor", "--count", "1.5"},
		{"floor", "--bogus"},
		{"floor", "extra"},
		{"floor", "--rooms", "0"},
		{"floor", "--users", "1"},
		{"floor", "--count", "-1"},
		{"floor", "--engine", "kqueue"},
		{"floor", "--pause", "x"},
		{"floor", "--pause", "-1s"},
		{"floor", "--duration", "1s"},
		{"floor", "--pause", "1s", "--duration", "-1s"},
		{"floor", "--pause", "1s", "--count", "3"},
		{"floor", "--pause", "1s", "--engine", "uring"},
		{"floor", "--pause", "1s", "--chat-only"},
	} {
		code, _, errOut := run(t, args...)
		assert.Equal(t, 2, code, "%v: %s", args, errOut)
		assert.Contains(t, errOut, "volanogo floor", "%v", args)
	}
}

func TestFloorFails(t *testing.T) {
	fakeFloor(t, results.Floor{}, errors.New("io_uring unavailable: operation not permitted"))
	code, _, errOut := run(t, "floor", "--engine", "uring")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "io_uring unavailable: operation not permitted")
}

func TestFloorRuns(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the floor is measured on Linux")
	}
	code, out, errOut := run(t, "floor", "--rooms", "1", "--count", "2", "--json")
	require.Equal(t, 0, code, errOut)
	var got results.Floor
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	assert.Equal(t, int64(800), got.Messages)
	assert.Positive(t, got.ServerCPUPerMessageMicros)
	assert.True(t, got.Exits)
}

func TestLoadFloor(t *testing.T) {
	cfg := fakeLoad(t, nil)
	code, _, errOut := run(t, "load", "--floor", "-count", "3", "-file", "")
	require.Equal(t, 0, code, errOut)
	require.NotNil(t, cfg.Floor)
	spec := fakeFloor(t, testFloor, nil)
	var out bytes.Buffer
	f, err := loadFloor(&out, 3, 0, 0)(context.Background(), 15, 20)
	require.NoError(t, err)
	assert.Equal(t, testFloor, f)
	assert.Equal(t, floor.Spec{Rooms: 15, Users: 20, Count: 3}, *spec)
	assert.Contains(t, out.String(), "Kernel floor (epoll): 15 rooms")
	_, err = loadFloor(&out, 0, 0, 0)(context.Background(), 50, 20)
	require.NoError(t, err)
	assert.Equal(t, floor.Spec{Rooms: 50, Users: 20, Count: 100}, *spec, "the floor's own count")
	_, err = loadFloor(&out, 1000, 0, 0)(context.Background(), 50, 20)
	require.NoError(t, err)
	assert.Equal(t, 100, spec.Count, "no more than the floor's own count")

	// A paced run's floor is paced: the run's pause, for its duration,
	// else for its count of pauses.
	_, err = loadFloor(&out, 0, time.Second, 30*time.Second)(context.Background(), 9500, 2)
	require.NoError(t, err)
	assert.Equal(t, floor.Spec{Rooms: 9500, Users: 2, Pause: time.Second, Duration: 30 * time.Second}, *spec)
	_, err = loadFloor(&out, 20, 500*time.Millisecond, 0)(context.Background(), 10, 2)
	require.NoError(t, err)
	assert.Equal(t, floor.Spec{Rooms: 10, Users: 2, Pause: 500 * time.Millisecond, Duration: 10 * time.Second}, *spec)
	_, err = loadFloor(&out, 0, time.Second, 0)(context.Background(), 10, 2)
	require.NoError(t, err)
	assert.Equal(t, floor.Spec{Rooms: 10, Users: 2, Pause: time.Second}, *spec, "the paced floor's own duration")

	cfg = fakeLoad(t, nil)
	code, _, _ = run(t, "load", "-count", "3", "-file", "")
	require.Equal(t, 0, code)
	assert.Nil(t, cfg.Floor)
}

var testPacedFloor = results.Floor{Engine: "epoll", Rooms: 9500, Users: 2, Connections: 19000,
	Messages: 1140000, MessageBytes: 80, ElapsedSeconds: 30.002, Throughput: 37997.5, ServerCPUSeconds: 4.5,
	ClientCPUSeconds: 6, ServerCPUPerMessageMicros: 3.95, ClientCPUPerMessageMicros: 5.26, ChildProcess: true,
	When: time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC),
	Paced: &results.FloorPaced{PauseSeconds: 1, DurationSeconds: 30, Confirms: true, Sent: 570000, Delivered: 570000,
		Delivery:          &results.Histogram{Count: 570000, P50: 80_000, P99: 1_500_000, P999: 4_000_000, Max: 12_000_000},
		DeliveryScheduled: &results.Histogram{Count: 570000, P50: 150_000, P99: 2_500_000, P999: 6_000_000, Max: 20_000_000},
		ServerCPUPercent:  15, ClientCPUPercent: 20, ServerWakeups: 456000}}

func TestFloorPacedFlags(t *testing.T) {
	spec := fakeFloor(t, testPacedFloor, nil)
	code, out, errOut := run(t, "floor", "--rooms", "9500", "--users", "2", "--pause", "1s", "--duration", "30s", "--seed", "5")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, floor.Spec{Rooms: 9500, Users: 2, Engine: "epoll", StallTimeout: floor.DefaultStallTimeout,
		Pause: time.Second, Duration: 30 * time.Second, Seed: 5}, *spec)
	n := runtime.NumCPU()
	assert.Equal(t, "Paced kernel floor (epoll, a chat every 1s per user for 30s, clients in a child process): 9500 rooms, 19000 connections\n"+
		"  570000 chats sent, 570000 delivered (1140000 messages of 80 bytes, and a confirm per chat) in 30.002 seconds\n"+
		"  37998 messages per second; server 3.95 µs, client 5.26 µs per message\n"+
		fmt.Sprintf("  server 15.0%%, client 20.0%% of a processor (%.1f%% and %.1f%% of this machine's %d)\n", 15/float64(n), 20/float64(n), n)+
		"  the server woke 456000 times (1.25 chats a wake-up)\n"+
		"  delivery latency from the send     p50 80.0 µs, p99 1.50 ms, p99.9 4.00 ms, max 12.0 ms\n"+
		"  delivery latency from the schedule p50 150 µs, p99 2.50 ms, p99.9 6.00 ms, max 20.0 ms\n", out)

	// Mark's form: whole seconds.
	code, _, errOut = run(t, "floor", "--rooms", "10", "--users", "2", "--pause", "2")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, 2*time.Second, spec.Pause)
	assert.Zero(t, spec.Duration, "the floor's default")

	code, out, _ = run(t, "floor", "--pause", "1s", "--json")
	require.Equal(t, 0, code)
	var got results.Floor
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	assert.Equal(t, testPacedFloor, got)
}

func TestFloorPacedRuns(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the floor is measured on Linux")
	}
	code, out, errOut := run(t, "floor", "--rooms", "2", "--users", "2", "--pause", "50ms", "--duration", "200ms", "--json")
	require.Equal(t, 0, code, errOut)
	var got results.Floor
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	require.NotNil(t, got.Paced)
	assert.Equal(t, int64(16), got.Paced.Sent)
	assert.Equal(t, int64(16), got.Paced.Delivered)
	assert.Equal(t, int64(32), got.Messages)
	assert.Positive(t, got.Paced.DeliveryScheduled.P99)
	assert.False(t, got.Exits)
}
