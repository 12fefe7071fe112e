package results

import (
	"math"
	"strconv"
	"strings"
)

// MarkVersion is the VolanoMark version: what Mark prints and sends in its
// Access requests, and what volanogo's client does too.
const MarkVersion = "2.13.4"

// MarkScore is Mark's "Average throughput" (protocol sheet §10.5): seconds
// = float32(elapsedMillis) / 1000 and score = Java Math.round(float32(total)
// / seconds), all in 32-bit float arithmetic, rounding half up and
// saturating at Java's int range as Math.round(float) does. ok is false when
// seconds < 1: Mark then prints "Elapsed time < 1 second" and no score.
// Example: MarkScore(2000000, 40115) = 49857.
func MarkScore(total int64, elapsedMillis int64) (score int64, ok bool) {
	seconds := float32(elapsedMillis) / 1000
	if !(seconds >= 1) {
		return 0, false
	}
	return javaRound(float32(total) / seconds), true
}

// javaRound is Java's Math.round(float): floor(x + 1/2) computed exactly,
// NaN to 0, saturating at Integer.MIN_VALUE and MAX_VALUE.
func javaRound(x float32) int64 {
	if x != x {
		return 0
	}
	r := math.Floor(float64(x) + 0.5) // exact: a float32 plus 1/2 fits a float64
	switch {
	case r >= math.MaxInt32:
		return math.MaxInt32
	case r <= math.MinInt32:
		return math.MinInt32
	}
	return int64(r)
}

// FormatMarkSeconds formats float32(ms)/1000 as Java's Float.toString does,
// which is how Mark prints the elapsed time: the shortest decimal that reads
// back as the same float32, with at least one digit after the point
// ("40.115", "1.0", "12.5"); below 10^-3 or from 10^7 up, Java's computerised
// scientific notation ("1.0E7", "1.234E-4").
func FormatMarkSeconds(ms int64) string {
	return javaFloatString(float32(ms) / 1000)
}

func javaFloatString(f float32) string {
	switch {
	case f != f:
		return "NaN"
	case math.IsInf(float64(f), 1):
		return "Infinity"
	case math.IsInf(float64(f), -1):
		return "-Infinity"
	case f == 0:
		if math.Signbit(float64(f)) {
			return "-0.0"
		}
		return "0.0"
	}
	e := strconv.FormatFloat(float64(f), 'e', -1, 32) // e.g. "4.0115e+01"
	mant, exps, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(exps)
	if exp >= -3 && exp < 7 {
		s := strconv.FormatFloat(float64(f), 'f', -1, 32)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	return mant + "E" + strconv.Itoa(exp)
}
