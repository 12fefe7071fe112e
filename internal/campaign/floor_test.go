package campaign

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volanogo/volanogo/internal/results"
	"github.com/volanogo/volanogo/internal/server"
)

// TestFloorRecorded: Config.Floor is measured before each step's runs,
// at its room count, and each document carries its own step's floor.
func TestFloorRecorded(t *testing.T) {
	checkGoroutines(t)
	s := startServer(t, server.Config{})
	cfg := tcpConfig(t, s.Addr().String())
	cfg.Steps, cfg.Spec.Users, cfg.Spec.Count, cfg.Runs = []int{1, 2, 1}, 3, 2, 2
	rec := &recorder{}
	var calls [][2]int
	cfg.Floor = func(_ context.Context, rooms, users int) (results.Floor, error) {
		assert.Len(t, rec.docs, 2*len(calls), "each floor comes just before its step's runs")
		calls = append(calls, [2]int{rooms, users})
		return results.Floor{Engine: "epoll", Rooms: rooms, Users: users, ServerCPUPerMessageMicros: float64(len(calls))}, nil
	}
	_, err := Run(context.Background(), cfg, rec)
	require.NoError(t, err, rec.out())
	assert.Equal(t, [][2]int{{1, 3}, {2, 3}, {1, 3}}, calls)
	require.Len(t, rec.docs, 6)
	for i, d := range rec.docs {
		require.Len(t, d.Environment.Floor, 1)
		f := d.Environment.Floor[0]
		assert.Equal(t, d.Step, f.Rooms)
		assert.InDelta(t, float64(i/2+1), f.ServerCPUPerMessageMicros, 0, "run %d carries the floor read before its step", i)
		require.NoError(t, d.Validate())
	}
	// The machine's environment is untouched.
	assert.Empty(t, Environment().Floor)
}

// TestFloorFails: a floor that cannot be measured stops the campaign
// there, naming --floor: before any run when it is the first step's.
func TestFloorFails(t *testing.T) {
	cfg := Config{Steps: []int{1}}
	cfg.Spec.Count = 1
	rec := &recorder{}
	cfg.Floor = func(context.Context, int, int) (results.Floor, error) {
		return results.Floor{}, errors.New("io_uring unavailable")
	}
	_, err := Run(context.Background(), cfg, rec)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--floor: io_uring unavailable")
	assert.Empty(t, rec.docs)

	// at the second step: the first step's runs are kept
	s := startServer(t, server.Config{})
	cfg2 := tcpConfig(t, s.Addr().String())
	cfg2.Steps, cfg2.Spec.Users, cfg2.Spec.Count, cfg2.Runs = []int{1, 2}, 2, 2, 1
	cfg2.Floor = func(_ context.Context, rooms, _ int) (results.Floor, error) {
		if rooms == 2 {
			return results.Floor{}, errors.New("too many open files")
		}
		return results.Floor{Engine: "epoll", Rooms: rooms, Users: 2, ServerCPUPerMessageMicros: 1}, nil
	}
	rec2 := &recorder{}
	res, err := Run(context.Background(), cfg2, rec2)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--floor: too many open files")
	assert.Len(t, rec2.docs, 1)
	require.NotNil(t, res)
	assert.Len(t, res.Steps, 1)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	cfg.Floor = func(ctx context.Context, _, _ int) (results.Floor, error) { return results.Floor{}, ctx.Err() }
	_, err = Run(ctx, cfg, rec)
	assert.ErrorIs(t, err, ErrInterrupted)
}
