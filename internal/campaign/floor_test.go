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

// TestFloorRecorded: Config.Floor is measured once per room count, before
// the runs, and every document carries every floor.
func TestFloorRecorded(t *testing.T) {
	checkGoroutines(t)
	s := startServer(t, server.Config{})
	cfg := tcpConfig(t, s.Addr().String())
	cfg.Steps, cfg.Spec.Users, cfg.Spec.Count, cfg.Runs = []int{1, 2, 1}, 3, 2, 1
	rec := &recorder{}
	var calls [][2]int
	cfg.Floor = func(_ context.Context, rooms, users int) (results.Floor, error) {
		assert.Empty(t, rec.docs, "the floor comes before the runs")
		calls = append(calls, [2]int{rooms, users})
		return results.Floor{Engine: "epoll", Rooms: rooms, Users: users, ServerCPUPerMessageMicros: float64(rooms)}, nil
	}
	_, err := Run(context.Background(), cfg, rec)
	require.NoError(t, err, rec.out())
	assert.Equal(t, [][2]int{{1, 3}, {2, 3}}, calls)
	require.Len(t, rec.docs, 3)
	for _, d := range rec.docs {
		require.Len(t, d.Environment.Floor, 2)
		assert.Equal(t, 1, d.Environment.Floor[0].Rooms)
		assert.Equal(t, 2, d.Environment.Floor[1].Rooms)
		require.NoError(t, d.Validate())
	}
	// The machine's environment is untouched.
	assert.Empty(t, Environment().Floor)
}

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

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	cfg.Floor = func(ctx context.Context, _, _ int) (results.Floor, error) { return results.Floor{}, ctx.Err() }
	_, err = Run(ctx, cfg, rec)
	assert.ErrorIs(t, err, ErrInterrupted)
}
