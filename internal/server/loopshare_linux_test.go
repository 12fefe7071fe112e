package server

import (
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPickLoop: a new connection goes to the first loop with fewer than
// fill, else to the one with the fewest (the first of those).
func TestPickLoop(t *testing.T) {
	for _, tc := range []struct {
		conns []int32
		fill  int
		want  int
	}{
		{[]int32{0, 0}, 1, 0},
		{[]int32{1, 0}, 1, 1},
		{[]int32{1, 1}, 1, 0},
		{[]int32{5, 3, 4}, 1, 1},
		{[]int32{7, 0}, 8, 0},
		{[]int32{8, 0}, 8, 1},
		{[]int32{8, 8}, 8, 0},
		{[]int32{9, 8}, 8, 1},
		{[]int32{2, 9, 8}, 4, 0},
		{[]int32{4, 9, 8}, 4, 0},
		{[]int32{5, 3, 3}, 4, 1},
	} {
		loops := make([]*loopShare, len(tc.conns))
		for i, n := range tc.conns {
			loops[i] = new(loopShare)
			loops[i].conns.Store(n)
		}
		assert.Same(t, loops[tc.want], pickLoop(loops, tc.fill), "%v fill %d", tc.conns, tc.fill)
	}
}

// TestLoopFill: on both event-loop engines, connections fill a loop up
// to Config.LoopFill before the next gets any, each engine's default is
// as documented (epoll spreads them, uring fills a ring 8192 deep), the
// metrics show each loop's connections, and a loop's count falls back as
// its connections close, whether or not they got past the Access.
func TestLoopFill(t *testing.T) {
	for _, tc := range []struct {
		engine string
		fill   int
		want   []int32 // the loops' connections after six
	}{
		{EngineEpoll, 0, []int32{3, 3}},
		{EngineEpoll, 4, []int32{4, 2}},
		{EngineURing, 0, []int32{6, 0}},
		{EngineURing, 1, []int32{3, 3}},
		{EngineURing, 4, []int32{4, 2}},
	} {
		t.Run(fmt.Sprintf("%s/%d", tc.engine, tc.fill), func(t *testing.T) {
			if why := engineUnavailable(tc.engine); why != "" {
				t.Skip(why)
			}
			s := startServer(t, Config{Engine: tc.engine, Loops: 2, LoopFill: tc.fill})
			counts := s.loopConns
			var cs []*client
			for i := range 6 {
				c := dial(t, s)
				if i%2 == 0 {
					c.access("Fill")
				}
				cs = append(cs, c)
			}
			waitFor(t, "six connections on the loops", func() bool {
				var sum int32
				for _, n := range counts() {
					sum += n
				}
				return sum == 6
			})
			assert.Equal(t, tc.want, counts())
			expected := "# HELP volanogo_loop_connections Connections each event loop (ring) of the epoll or uring engine holds, by loop (none on the goroutine engine).\n# TYPE volanogo_loop_connections gauge\n"
			for i, n := range tc.want {
				expected += fmt.Sprintf("volanogo_loop_connections{loop=\"%d\"} %d\n", i, n)
			}
			assert.NoError(t, testutil.GatherAndCompare(s.Registry(), strings.NewReader(expected), "volanogo_loop_connections"))
			for _, c := range cs {
				require.NoError(t, c.c.Close())
			}
			waitFor(t, "the loops' counts", func() bool {
				for _, n := range counts() {
					if n != 0 {
						return false
					}
				}
				return true
			})
			c := dial(t, s)
			c.access("Fill")
			assert.Equal(t, int32(1), counts()[0], "a new connection fills the first loop again")
		})
	}
}

// TestLoopConnectionsMetricGoroutine: the goroutine engine has no loops,
// so no volanogo_loop_connections series.
func TestLoopConnectionsMetricGoroutine(t *testing.T) {
	s := startServer(t, Config{Engine: EngineGoroutine})
	c := dial(t, s)
	c.access("Fill")
	n, err := testutil.GatherAndCount(s.Registry(), "volanogo_loop_connections")
	require.NoError(t, err)
	assert.Zero(t, n)
}
