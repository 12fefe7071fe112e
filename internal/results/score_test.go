package results

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestMarkScore(t *testing.T) {
	for _, tc := range []struct {
		total, ms int64
		score     int64
		ok        bool
	}{
		{2_000_000, 40_115, 49857, true}, // the protocol sheet's example: 49,856.6
		{600_000, 1_000, 600_000, true},
		{600_000, 2_212, 271248, true}, // 271,247.74
		{5, 2_000, 3, true},            // 2.5 rounds half up (not to even)
		{3, 2_000, 2, true},            // 1.5
		{7, 2_000, 4, true},            // 3.5
		{1, 3_000, 0, true},            // 0.333
		{0, 5_000, 0, true},
		{100, 1_000, 100, true},
		{100, 999, 0, false}, // under a second: no score
		{100, 0, 0, false},
		{100, -5, 0, false},
		{1 << 40, 1_000, math.MaxInt32, true}, // Java's int saturates
		// float32 arithmetic: 16,777,217 is not a float32; it rounds to 16,777,216.
		{16_777_217, 1_000, 16_777_216, true},
	} {
		score, ok := MarkScore(tc.total, tc.ms)
		assert.Equal(t, tc.ok, ok, "%d/%d ms", tc.total, tc.ms)
		assert.Equal(t, tc.score, score, "%d/%d ms", tc.total, tc.ms)
	}
}

func TestJavaRound(t *testing.T) {
	for _, tc := range []struct {
		x    float32
		want int64
	}{
		{0.5, 1}, {1.5, 2}, {2.5, 3}, {-0.5, 0}, {-1.5, -1}, {-2.5, -2},
		{0.49999997, 0}, // Java 7+: not the old floor(x+0.5f) bug giving 1
		{8388609, 8388609}, {float32(math.NaN()), 0},
		{float32(math.Inf(1)), math.MaxInt32}, {float32(math.Inf(-1)), math.MinInt32},
	} {
		assert.Equal(t, tc.want, javaRound(tc.x), "%v", tc.x)
	}
}

func TestFormatMarkSeconds(t *testing.T) {
	for _, tc := range []struct {
		ms   int64
		want string
	}{
		{40_115, "40.115"},
		{1_000, "1.0"},
		{12_500, "12.5"},
		{2_212, "2.212"},
		{100, "0.1"},
		{1, "0.001"},
		{10, "0.01"},
		{0, "0.0"},
		{60_000, "60.0"},
		{123_456, "123.456"},
		{33_333, "33.333"},
		{999_999, "999.999"},
		{1_234_567_890, "1234567.9"}, // float32 has 24 bits: the shortest round-trip form
		{9_999_999_000, "9999999.0"},
		{10_000_000_000, "1.0E7"},
		{12_345_678_000, "1.2345678E7"},
		{-1_500, "-1.5"},
	} {
		assert.Equal(t, tc.want, FormatMarkSeconds(tc.ms), "%d ms", tc.ms)
	}
	assert.Equal(t, "1.0E-4", javaFloatString(0.0001))
	assert.Equal(t, "9.99E-4", javaFloatString(0.000999))
	assert.Equal(t, "NaN", javaFloatString(float32(math.NaN())))
	assert.Equal(t, "Infinity", javaFloatString(float32(math.Inf(1))))
	assert.Equal(t, "-0.0", javaFloatString(float32(math.Copysign(0, -1))))
}
