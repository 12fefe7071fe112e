//go:build linux

package floor

import (
	"cmp"
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

// checkPaced checks the figures of a paced floor of s, whose users each
// send exactly perUser chats (its duration a multiple of its pause).
func checkPaced(t *testing.T, s Spec, child bool, perUser int64) {
	t.Helper()
	fds := openFDs(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	f, err := Run(ctx, s)
	require.NoError(t, err)
	require.NotNil(t, f.Paced)
	p := f.Paced
	users := int64(cmp.Or(s.Users, DefaultUsers))
	conns := int64(s.Rooms) * users
	assert.Equal(t, EngineEpoll, f.Engine)
	assert.Equal(t, child, f.ChildProcess)
	assert.False(t, f.Exits)
	assert.Zero(t, f.Count)
	assert.Equal(t, s.Pause.Seconds(), p.PauseSeconds)
	assert.Equal(t, s.Duration.Seconds(), p.DurationSeconds)
	assert.True(t, p.Confirms)
	assert.Equal(t, conns*perUser, p.Sent)
	assert.Equal(t, p.Sent*(users-1), p.Delivered)
	assert.Equal(t, p.Sent+p.Delivered, f.Messages)
	require.NotNil(t, p.Delivery)
	require.NotNil(t, p.DeliveryScheduled)
	assert.Equal(t, p.Delivered, p.Delivery.Count)
	assert.Equal(t, p.Delivered, p.DeliveryScheduled.Count)
	assert.Positive(t, p.Delivery.P99)
	assert.Positive(t, p.ServerWakeups)
	assert.LessOrEqual(t, p.ServerWakeups, p.Sent, "a wake-up reads a chat at least")
	assert.GreaterOrEqual(t, p.DeliveryScheduled.P50, p.Delivery.P50)
	assert.GreaterOrEqual(t, p.DeliveryScheduled.Max, p.Delivery.Max)
	// The schedule sets the elapsed time: from the start to the last
	// chat's delivery, the last due before the duration.
	assert.GreaterOrEqual(t, f.ElapsedSeconds, s.Duration.Seconds()-s.Pause.Seconds())
	assert.Positive(t, f.ServerCPUSeconds)
	assert.Positive(t, f.ClientCPUSeconds)
	assert.InDelta(t, f.ServerCPUSeconds/float64(f.Messages)*1e6, f.ServerCPUPerMessageMicros, 1e-9)
	assert.InDelta(t, f.ClientCPUSeconds/float64(f.Messages)*1e6, f.ClientCPUPerMessageMicros, 1e-9)
	assert.InDelta(t, f.ServerCPUSeconds/f.ElapsedSeconds*100, p.ServerCPUPercent, 1e-9)
	assert.InDelta(t, f.ClientCPUSeconds/f.ElapsedSeconds*100, p.ClientCPUPercent, 1e-9)
	assert.InDelta(t, float64(f.Messages)/f.ElapsedSeconds, f.Throughput, 1e-6)
	assert.Equal(t, fds, openFDs(t), "descriptors left open")
}

func TestPaced(t *testing.T) {
	checkPaced(t, Spec{Rooms: 3, Users: 2, Pause: 50 * time.Millisecond, Duration: 500 * time.Millisecond}, false, 10)
	checkPaced(t, Spec{Rooms: 2, Pause: 100 * time.Millisecond, Duration: 300 * time.Millisecond, Seed: 7}, false, 3)
}

func TestPacedChildProcess(t *testing.T) {
	checkPaced(t, Spec{Rooms: 4, Users: 2, Pause: 50 * time.Millisecond, Duration: 200 * time.Millisecond,
		Child: true, ChildCommand: childCommand(t)}, true, 4)
}

func TestPacedSpecErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec Spec
		want string
	}{
		{"negative pause", Spec{Rooms: 1, Pause: -time.Second}, "--pause"},
		{"duration without pause", Spec{Rooms: 1, Duration: time.Second}, "--duration"},
		{"negative duration", Spec{Rooms: 1, Pause: time.Second, Duration: -time.Second}, "--duration"},
		{"count", Spec{Rooms: 1, Pause: time.Second, Count: 3}, "--count"},
		{"uring", Spec{Rooms: 1, Pause: time.Second, Engine: EngineURing}, "--engine"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Run(context.Background(), tc.spec)
			var ce *ConfigError
			require.ErrorAs(t, err, &ce)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	s := Spec{Rooms: 1, Pause: time.Second}
	require.NoError(t, s.normalize())
	assert.Equal(t, DefaultPacedDuration, s.Duration)
	assert.NotZero(t, s.Seed)
	assert.True(t, s.ChatOnly)
	assert.Zero(t, s.Count)
}

func TestPacedInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	_, err := Run(ctx, Spec{Rooms: 2, Users: 2, Pause: 20 * time.Millisecond, Duration: time.Minute})
	assert.ErrorIs(t, err, ErrInterrupted)
}
