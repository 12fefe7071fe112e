package results

import (
	"math"
	"slices"
	"strconv"
)

// The arithmetic of results: every figure that is derived from a
// document's counts, and the run rule, is defined here once, for
// `volanogo load`'s summary and for `volanogo report` alike.

// CPUPerMessage is cpuSeconds spread over messages, in microseconds (0
// when there are no messages).
func CPUPerMessage(cpuSeconds float64, messages int64) float64 {
	if messages <= 0 {
		return 0
	}
	return cpuSeconds / float64(messages) * 1e6
}

// ElapsedMillis is the timed phase in whole milliseconds, as Mark measures
// it.
func (d *Document) ElapsedMillis() int64 { return int64(math.Floor(d.ElapsedSeconds*1000 + 0.5)) }

// IsTurns reports whether the document is of a turn-taking run: the only
// kind with Mark's score.
func (d *Document) IsTurns() bool {
	return d.Paced == nil && d.Churn == nil && d.Storm == nil &&
		d.Config.Scenario != ScenarioPaced && d.Config.Scenario != ScenarioChurn && d.Config.Scenario != ScenarioStorm &&
		d.Config.Scenario != ScenarioPrivate
}

// Derive fills what follows from a document's counts, elapsed time and
// failures: Counts.Total, Throughput, Passed (no failure and not
// interrupted), Score (Mark's, for a turn-taking run that passed and
// lasted a second; otherwise 0) and the client's and server's CPU per
// message. Whoever changes those inputs calls it again.
func (d *Document) Derive() {
	c := &d.Counts
	c.Total = c.Sent + c.Received
	d.Throughput = 0
	if d.ElapsedSeconds > 0 {
		d.Throughput = float64(c.Total) / d.ElapsedSeconds
	}
	d.Passed = len(d.Failures) == 0 && !d.Interrupted
	d.Score = 0
	if s, ok := MarkScore(c.Total, d.ElapsedMillis()); ok && d.Passed && d.IsTurns() {
		d.Score = s
	}
	d.Client.CPUPerMessageMicros = CPUPerMessage(d.Client.CPUUserSeconds+d.Client.CPUSystemSeconds, c.Total)
	if d.Server != nil {
		d.Server.CPUPerMessageMicros = CPUPerMessage(d.Server.CPUSeconds, c.Total)
	}
}

// RunRule is the Volano Report's run rule: of a step's runs, in run order,
// the first Discard are dropped (and so is any run marked Discarded), the
// first Of of the rest are counted, and the score is the average of the
// best Best scores among the counted runs that passed, rounded half up.
type RunRule struct {
	Discard, Best, Of int
}

// DefaultRunRule is the Volano Report's: one run discarded, the best two
// of the next three.
var DefaultRunRule = RunRule{Discard: 1, Best: 2, Of: 3}

// Counted applies the discard and Of to runs (in run order): counted are
// the runs the score is made of, all every run after the discard (for
// comparisons). When the positional discard would leave nothing, the runs
// not marked Discarded are kept after all and relaxed is true.
func (r RunRule) Counted(runs []*Document) (counted, all []*Document, relaxed bool) {
	var unmarked []*Document
	for i, d := range runs {
		if d.Discarded {
			continue
		}
		unmarked = append(unmarked, d)
		if i >= r.Discard {
			all = append(all, d)
		}
	}
	if len(all) == 0 && len(unmarked) > 0 {
		all, relaxed = unmarked, true
	}
	counted = all
	if r.Of > 0 && len(counted) > r.Of {
		counted = counted[:r.Of]
	}
	return counted, all, relaxed
}

// RunPassed is whether a run counts as passed for the run rule: it passed,
// was not interrupted and, paced, did not break.
func RunPassed(d *Document) bool {
	return d.Passed && !d.Interrupted && (d.Paced == nil || !d.Paced.Broken)
}

// HasScore is whether a passed run has a score to average: a turn-taking
// run under one second has none (Mark prints none), which is not a score
// of 0. Runs of other kinds count with their score of 0.
func HasScore(d *Document) bool { return d.Score > 0 || !d.IsTurns() }

// Tally is the run rule applied to the counted runs of one step.
type Tally struct {
	Counted, Passed int
	// Scores are the scores of the counted runs that passed and have one,
	// in ascending order; Min and Max are its ends.
	Scores   []int64
	Min, Max int64
	// Score is the average of the best Best scores, rounded half up, and
	// Median the median of Scores; both 0 unless the tally has a score.
	Score  int64
	Median float64
	// Failed: fewer counted runs passed than the score needs (min(Best,
	// Counted), at least one). NoScore: enough passed, but too few of them
	// have a score.
	Failed, NoScore bool
}

// HasScore reports whether the tally gave a score.
func (t Tally) HasScore() bool { return !t.Failed && !t.NoScore }

// Tally scores the counted runs (see Counted).
func (r RunRule) Tally(counted []*Document) Tally {
	t := Tally{Counted: len(counted)}
	for _, d := range counted {
		if !RunPassed(d) {
			continue
		}
		t.Passed++
		if HasScore(d) {
			t.Scores = append(t.Scores, d.Score)
		}
	}
	best := max(r.Best, 1)
	need := min(best, len(counted))
	switch {
	case t.Passed < need || t.Passed == 0:
		t.Failed = true
		return t
	case len(t.Scores) < need:
		t.NoScore = true
		return t
	}
	slices.Sort(t.Scores)
	n := len(t.Scores)
	t.Min, t.Max = t.Scores[0], t.Scores[n-1]
	if n%2 == 1 {
		t.Median = float64(t.Scores[n/2])
	} else {
		t.Median = (float64(t.Scores[n/2-1]) + float64(t.Scores[n/2])) / 2
	}
	var sum float64
	for _, s := range t.Scores[max(0, n-best):] {
		sum += float64(s)
	}
	t.Score = RoundHalfUp(sum / float64(min(n, best)))
	return t
}

// RoundHalfUp rounds x to the nearest integer, halves up.
func RoundHalfUp(x float64) int64 { return int64(math.Floor(x + 0.5)) }

// Sig3 formats v with three significant digits and no exponent: 1234 is
// "1234", 12.34 is "12.3", 1.234 is "1.23"; a value that rounds up into
// the next decade takes that decade's form (99.96 is "100", 9.998 is
// "10.0").
func Sig3(v float64) string {
	switch a := math.Abs(v); {
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		s := strconv.FormatFloat(v, 'f', 1, 64)
		if r, _ := strconv.ParseFloat(s, 64); math.Abs(r) >= 100 {
			return strconv.FormatFloat(v, 'f', 0, 64)
		}
		return s
	}
	s := strconv.FormatFloat(v, 'f', 2, 64)
	if r, _ := strconv.ParseFloat(s, 64); math.Abs(r) >= 10 {
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return s
}

// FormatNanos formats a duration of ns nanoseconds with three significant
// digits and its unit ("812 ns", "1.25 ms", "40.1 s"); a value that rounds
// up to 1000 of a unit takes the next one (999,999 ns is "1.00 ms").
func FormatNanos(ns int64) string {
	if ns > -1000 && ns < 1000 {
		return strconv.FormatInt(ns, 10) + " ns"
	}
	v := float64(ns) / 1e3
	for _, unit := range []string{"µs", "ms"} {
		if s := Sig3(v); math.Abs(v) < 999.5 {
			return s + " " + unit
		}
		v /= 1e3
	}
	return Sig3(v) + " s"
}
