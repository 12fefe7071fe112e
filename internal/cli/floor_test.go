package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
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
	f, err := loadFloor(&out, 3)(context.Background(), 15, 20)
	require.NoError(t, err)
	assert.Equal(t, testFloor, f)
	assert.Equal(t, floor.Spec{Rooms: 15, Users: 20, Count: 3}, *spec)
	assert.Contains(t, out.String(), "Kernel floor (epoll): 15 rooms")
	_, err = loadFloor(&out, 0)(context.Background(), 50, 20)
	require.NoError(t, err)
	assert.Equal(t, floor.Spec{Rooms: 50, Users: 20, Count: 100}, *spec, "the floor's own count")
	_, err = loadFloor(&out, 1000)(context.Background(), 50, 20)
	require.NoError(t, err)
	assert.Equal(t, 100, spec.Count, "no more than the floor's own count")

	cfg = fakeLoad(t, nil)
	code, _, _ = run(t, "load", "-count", "3", "-file", "")
	require.Equal(t, 0, code)
	assert.Nil(t, cfg.Floor)
}
