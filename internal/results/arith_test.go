package results

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSig3(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		want string
	}{
		{0, "0.00"}, {1.234, "1.23"}, {9.994, "9.99"}, {9.998, "10.0"}, {12.34, "12.3"},
		{99.94, "99.9"}, {99.96, "100"}, {1234.4, "1234"}, {-12.34, "-12.3"}, {-99.96, "-100"},
	} {
		assert.Equal(t, tc.want, Sig3(tc.v), "%v", tc.v)
	}
}

func TestFormatNanos(t *testing.T) {
	for _, tc := range []struct {
		ns   int64
		want string
	}{
		{0, "0 ns"}, {812, "812 ns"}, {999, "999 ns"}, {1000, "1.00 µs"}, {1250, "1.25 µs"},
		{99_960, "100 µs"}, {999_400, "999 µs"}, {999_999, "1.00 ms"}, {1_250_000, "1.25 ms"},
		{40_115_000_000, "40.1 s"}, {999_700_000, "1.00 s"},
	} {
		assert.Equal(t, tc.want, FormatNanos(tc.ns), "%d", tc.ns)
	}
}

func TestCPUPerMessage(t *testing.T) {
	assert.Equal(t, 1.5, CPUPerMessage(3, 2_000_000))
	assert.Zero(t, CPUPerMessage(3, 0))
	assert.Zero(t, CPUPerMessage(3, -1))
}

func TestDerive(t *testing.T) {
	d := &Document{Counts: Counts{Sent: 100000, Received: 1900000}, ElapsedSeconds: 40.115,
		Client: Usage{CPUUserSeconds: 1, CPUSystemSeconds: 2}, Server: &ServerUsage{CPUSeconds: 4}}
	d.Derive()
	assert.Equal(t, int64(2000000), d.Counts.Total)
	assert.True(t, d.Passed)
	assert.Equal(t, int64(49857), d.Score, "the protocol sheet's example")
	assert.InDelta(t, 2000000/40.115, d.Throughput, 1e-6)
	assert.Equal(t, 1.5, d.Client.CPUPerMessageMicros)
	assert.Equal(t, 2.0, d.Server.CPUPerMessageMicros)

	d.Failures = []Failure{{Kind: FailLost, Count: 1}}
	d.Derive()
	assert.False(t, d.Passed)
	assert.Zero(t, d.Score, "a failed run has no score")

	d.Failures = nil
	d.Paced = &Paced{}
	d.Derive()
	assert.True(t, d.Passed)
	assert.Zero(t, d.Score, "a paced run has no Mark score")

	short := &Document{Counts: Counts{Sent: 10, Received: 10}, ElapsedSeconds: 0.999}
	short.Derive()
	assert.True(t, short.Passed)
	assert.Zero(t, short.Score, "under one second: no score")
}

func TestRunRule(t *testing.T) {
	run := func(n int, score int64, passed bool) *Document {
		return &Document{Run: n, Score: score, Passed: passed}
	}
	for _, tc := range []struct {
		name    string
		rule    RunRule
		runs    []*Document
		counted []int
		relaxed bool
		tally   Tally
	}{
		{"the Volano rule", DefaultRunRule,
			[]*Document{run(1, 999, true), run(2, 100, true), run(3, 300, true), run(4, 200, true), run(5, 5000, true)},
			[]int{2, 3, 4}, false,
			Tally{Counted: 3, Passed: 3, Scores: []int64{100, 200, 300}, Min: 100, Max: 300, Score: 250, Median: 200}},
		{"rounding half up", DefaultRunRule,
			[]*Document{run(1, 0, true), run(2, 100, true), run(3, 101, true)},
			[]int{2, 3}, false,
			Tally{Counted: 2, Passed: 2, Scores: []int64{100, 101}, Min: 100, Max: 101, Score: 101, Median: 100.5}},
		{"one failed of three still scores", DefaultRunRule,
			[]*Document{run(1, 0, true), run(2, 100, true), run(3, 0, false), run(4, 300, true)},
			[]int{2, 3, 4}, false,
			Tally{Counted: 3, Passed: 2, Scores: []int64{100, 300}, Min: 100, Max: 300, Score: 200, Median: 200}},
		{"two failed of three: no score", DefaultRunRule,
			[]*Document{run(1, 0, true), run(2, 100, true), run(3, 0, false), run(4, 0, false)},
			[]int{2, 3, 4}, false,
			Tally{Counted: 3, Passed: 1, Scores: []int64{100}, Failed: true}},
		{"under a second is no score, not a score of 0", DefaultRunRule,
			[]*Document{run(1, 0, true), run(2, 100, true), run(3, 0, true), run(4, 0, true)},
			[]int{2, 3, 4}, false,
			Tally{Counted: 3, Passed: 3, Scores: []int64{100}, NoScore: true}},
		{"a single run", RunRule{Best: 2, Of: 3},
			[]*Document{run(1, 500, true)},
			[]int{1}, false,
			Tally{Counted: 1, Passed: 1, Scores: []int64{500}, Min: 500, Max: 500, Score: 500, Median: 500}},
		{"the discard would leave nothing", DefaultRunRule,
			[]*Document{run(1, 500, true)},
			[]int{1}, true,
			Tally{Counted: 1, Passed: 1, Scores: []int64{500}, Min: 500, Max: 500, Score: 500, Median: 500}},
		{"marked discarded", RunRule{Best: 2, Of: 3},
			[]*Document{{Run: 1, Score: 9, Passed: true, Discarded: true}, run(2, 100, true)},
			[]int{2}, false,
			Tally{Counted: 1, Passed: 1, Scores: []int64{100}, Min: 100, Max: 100, Score: 100, Median: 100}},
	} {
		counted, _, relaxed := tc.rule.Counted(tc.runs)
		var nums []int
		for _, d := range counted {
			nums = append(nums, d.Run)
		}
		assert.Equal(t, tc.counted, nums, tc.name)
		assert.Equal(t, tc.relaxed, relaxed, tc.name)
		assert.Equal(t, tc.tally, tc.rule.Tally(counted), tc.name)
	}
}
