package server

import (
	"runtime"
	"strconv"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volanogo/volanogo/internal/results"
)

// TestEnvironmentInfo: the server says its machine and runtime in one
// info series, whose labels read back into the environment a client
// records (results.EnvironmentFromInfo).
func TestEnvironmentInfo(t *testing.T) {
	s, err := New(Config{})
	require.NoError(t, err)
	mf := gatherFamily(t, s, "volanogo_server_environment_info")
	require.Len(t, mf.GetMetric(), 1)
	m := mf.GetMetric()[0]
	assert.Equal(t, 1.0, m.GetGauge().GetValue())
	labels := map[string]string{}
	for _, l := range m.GetLabel() {
		labels[l.GetName()] = l.GetValue()
	}
	assert.Len(t, labels, len(results.EnvironmentInfoLabels))
	env := results.EnvironmentFromInfo(labels)
	assert.Equal(t, runtime.GOOS, env.OS)
	assert.Equal(t, runtime.GOARCH, env.Arch)
	assert.Equal(t, runtime.Version(), env.GoVersion)
	assert.Equal(t, runtime.NumCPU(), env.CPUs)
	assert.Equal(t, runtime.GOMAXPROCS(0), env.GOMAXPROCS)
	if runtime.GOOS == "linux" {
		assert.NotEmpty(t, env.Kernel)
		assert.Positive(t, env.MemoryBytes)
		assert.NotZero(t, env.OpenFilesSoft)
	}
	problems, err := testutil.GatherAndLint(s.Registry(), "volanogo_server_environment_info", "volanogo_gc_pause_seconds")
	require.NoError(t, err)
	assert.Empty(t, problems)
}

// TestGCPauseHistogram: the runtime's GC pauses are a histogram whose
// count grows with each collection, with buckets fine enough for a p99
// (four to a power of two between 1 µs and 4 s).
func TestGCPauseHistogram(t *testing.T) {
	s, err := New(Config{})
	require.NoError(t, err)
	before := gatherFamily(t, s, "volanogo_gc_pause_seconds").GetMetric()[0].GetHistogram()
	runtime.GC()
	runtime.GC()
	h := gatherFamily(t, s, "volanogo_gc_pause_seconds").GetMetric()[0].GetHistogram()
	assert.GreaterOrEqual(t, h.GetSampleCount(), before.GetSampleCount()+2, "two collections, two pauses at least each")
	bs := h.GetBucket()
	require.Greater(t, len(bs), 60, "the runtime's buckets between 1 µs and 4 s")
	assert.InDelta(t, 1e-6, bs[0].GetUpperBound(), 1e-6)
	assert.LessOrEqual(t, bs[len(bs)-1].GetUpperBound(), 4.0)
	for i := 1; i < len(bs); i++ {
		ratio := bs[i].GetUpperBound() / bs[i-1].GetUpperBound()
		assert.LessOrEqual(t, ratio, 1.34, "bucket %d: %s", i, strconv.FormatFloat(bs[i].GetUpperBound(), 'g', -1, 64))
		assert.GreaterOrEqual(t, bs[i].GetCumulativeCount(), bs[i-1].GetCumulativeCount())
	}
	assert.LessOrEqual(t, bs[len(bs)-1].GetCumulativeCount(), h.GetSampleCount())
}

func gatherFamily(t *testing.T, s *Server, name string) *dto.MetricFamily {
	t.Helper()
	fams, err := s.Registry().Gather()
	require.NoError(t, err)
	for _, f := range fams {
		if f.GetName() == name {
			return f
		}
	}
	require.Failf(t, "no metric family", "%s", name)
	return nil
}
