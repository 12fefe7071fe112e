//go:build linux

package floor

import (
	"context"
	"errors"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAutoCount(t *testing.T) {
	assert.Equal(t, 100, AutoCount(50, 20))
	assert.Equal(t, 5, AutoCount(950, 20))
	assert.Equal(t, 1, AutoCount(5000, 20))
	assert.Equal(t, 333, AutoCount(15, 20))
	assert.Equal(t, 1, AutoCount(0, 20))
}

func TestSpecErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec Spec
		want string
	}{
		{"no rooms", Spec{}, "--rooms"},
		{"one user", Spec{Rooms: 1, Users: 1}, "--users"},
		{"negative count", Spec{Rooms: 1, Count: -1}, "--count"},
		{"engine", Spec{Rooms: 1, Engine: "kqueue"}, "--engine"},
		{"too many", Spec{Rooms: 1 << 20, Users: 20}, "too many"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Run(context.Background(), tc.spec)
			var ce *ConfigError
			require.ErrorAs(t, err, &ce)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// openFDs counts this process's descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return len(ents)
}

// checkFloor checks the figures of a floor of s.
func checkFloor(t *testing.T, s Spec, child bool) {
	t.Helper()
	fds := openFDs(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	f, err := Run(ctx, s)
	if s.Engine == EngineURing && err != nil && errors.Is(err, errURingUnavailable) {
		t.Skip(err)
	}
	require.NoError(t, err)
	users := max(s.Users, DefaultUsers*boolInt(s.Users == 0))
	conns := s.Rooms * users
	assert.Equal(t, max(s.Engine, EngineEpoll), f.Engine)
	assert.Equal(t, conns, f.Connections)
	assert.Equal(t, int64(conns*s.Count*users), f.Messages)
	assert.Equal(t, MessageBytes, f.MessageBytes)
	assert.Equal(t, child, f.ChildProcess)
	assert.Equal(t, !s.ChatOnly, f.Exits)
	assert.Positive(t, f.ElapsedSeconds)
	assert.Positive(t, f.ServerCPUSeconds)
	assert.Positive(t, f.ClientCPUSeconds)
	assert.InDelta(t, f.ServerCPUSeconds/float64(f.Messages)*1e6, f.ServerCPUPerMessageMicros, 1e-9)
	assert.InDelta(t, f.ClientCPUSeconds/float64(f.Messages)*1e6, f.ClientCPUPerMessageMicros, 1e-9)
	assert.InDelta(t, float64(f.Messages)/f.ElapsedSeconds, f.Throughput, 1e-6)
	assert.False(t, f.When.IsZero())
	assert.Equal(t, fds, openFDs(t), "descriptors left open")
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestEpoll(t *testing.T) {
	checkFloor(t, Spec{Rooms: 2, Count: 3}, false)
	checkFloor(t, Spec{Rooms: 3, Users: 2, Count: 5}, false)
	checkFloor(t, Spec{Rooms: 2, Count: 3, ChatOnly: true}, false)
}

func TestURing(t *testing.T) {
	checkFloor(t, Spec{Rooms: 2, Count: 3, Engine: EngineURing}, false)
	checkFloor(t, Spec{Rooms: 2, Count: 3, Engine: EngineURing, ChatOnly: true}, false)
}

// childCommand makes the test binary the clients' process.
func childCommand(t *testing.T) []string {
	t.Setenv(childEnv, "1")
	return []string{os.Args[0]}
}

func TestChildProcess(t *testing.T) {
	checkFloor(t, Spec{Rooms: 2, Count: 3, Child: true, ChildCommand: childCommand(t)}, true)
	checkFloor(t, Spec{Rooms: 2, Count: 3, Child: true, ChildCommand: childCommand(t), Engine: EngineURing}, true)
	checkFloor(t, Spec{Rooms: 2, Count: 3, Child: true, ChildCommand: childCommand(t), ChatOnly: true}, true)
}

func TestChildProcessFails(t *testing.T) {
	_, err := Run(context.Background(), Spec{Rooms: 1, Count: 1, Child: true, ChildCommand: []string{"/bin/sh", "-c", "read spec; echo no such luck >&2; exit 3"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the clients' process")
	assert.Contains(t, err.Error(), "no such luck")
}

func TestChildProcessGone(t *testing.T) {
	_, err := Run(context.Background(), Spec{Rooms: 1, Count: 1, Child: true, ChildCommand: []string{"/bin/sh", "-c", "echo gone >&2"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the clients' process")
}

func TestInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Run(ctx, Spec{Rooms: 2, Count: 1})
	assert.ErrorIs(t, err, ErrInterrupted)
}

func TestGOMAXPROCSRestored(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	_, err := Run(context.Background(), Spec{Rooms: 1, Count: 2})
	require.NoError(t, err)
	assert.Equal(t, 1, runtime.GOMAXPROCS(0))
}
