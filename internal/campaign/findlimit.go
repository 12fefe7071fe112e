package campaign

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/volanogo/volanogo/internal/results"
)

// Defaults of a FindLimit search: the Limit to within 5% of itself, in
// at most 8 steps.
const (
	DefaultFindPrecision = 0.05
	DefaultFindProbes    = 8
)

// FindLimit is a search for the largest step, in rooms of Spec.Users
// users, that holds: every run of the step passes under the run rules,
// no paced run breaks, and, with an SLO, no counted run's p99 delivery
// latency is over it. It probes steps between Lo and Hi rooms, halving
// the ratio between the largest that held and the smallest that broke
// (their geometric mean) until it is within Precision or MaxProbes steps
// are made. A step that broke because the server refused connections
// says how many it carried: the next probe is the step just within that.
type FindLimit struct {
	Lo, Hi int
	// Precision is the ratio, less one, within which the search stops
	// (broke ≤ held × (1 + Precision)); default DefaultFindPrecision.
	Precision float64
	// MaxProbes bounds the steps made; default DefaultFindProbes.
	MaxProbes int
	// SLO is the p99 delivery latency past which a turn-taking step
	// broke (0: none; a paced step breaks past Spec.SLO).
	SLO time.Duration
}

// SearchResult is what a FindLimit search found, in rooms: the largest
// step that held (0: none, even Lo broke) and the smallest that broke
// above it (0: none, Hi held), after Probes steps.
type SearchResult struct {
	Held, Broke, Probes int
	// Users is the users per room: Held × Users connections held.
	Users int
	// Precise is set when the two are within Precision of each other
	// (or adjacent), or the search reached Lo or Hi.
	Precise bool

	hint int // the next probe a broken step's carried connections suggest
}

func (f *FindLimit) normalize() error {
	if f.Precision <= 0 {
		f.Precision = DefaultFindPrecision
	}
	if f.MaxProbes <= 0 {
		f.MaxProbes = DefaultFindProbes
	}
	if f.Lo < 1 || f.Hi <= f.Lo {
		return cfgErr("--find-limit: %d..%d is not a range of rooms LO..HI with 1 <= LO < HI", f.Lo, f.Hi)
	}
	return nil
}

// findLimit runs the search, each probe a step under the run rules.
func (r *campaignRun) findLimit(ctx context.Context) error {
	cfg := r.cfg
	f := cfg.FindLimit
	users := cfg.Spec.Users
	sr := &SearchResult{Users: users}
	r.res.Search = sr
	var hint int
	for sr.Probes < f.MaxProbes {
		rooms := f.next(sr, hint)
		if rooms == 0 {
			break
		}
		sr.Probes++
		floor, err := cfg.measureFloor(ctx, rooms)
		if err != nil {
			return err
		}
		search := &results.Search{Lo: f.Lo, Hi: f.Hi, Users: users, Probe: sr.Probes, MaxProbes: f.MaxProbes, SLOSeconds: f.SLO.Seconds()}
		failedBefore := r.failed
		step, stop, err := r.step(ctx, rooms, 0, floor, search)
		if err != nil {
			return err
		}
		if step == nil || stop && r.interrupted {
			break
		}
		r.failed = failedBefore
		r.res.Steps = append(r.res.Steps, *step)
		hint = f.record(sr, rooms, f.held(step, cfg.Spec.Pause > 0), carriedRooms(step, users))
		if stop {
			break
		}
		if f.done(sr) {
			sr.Precise = true
			break
		}
	}
	if sr.Held == 0 && !r.interrupted {
		r.failed = true
	}
	return nil
}

// next is the rooms of the next probe, 0 when the search is over.
func (f *FindLimit) next(sr *SearchResult, hint int) int {
	lo, hi := f.Lo, f.Hi
	if sr.Held > 0 {
		lo = sr.Held
	}
	if sr.Broke > 0 {
		hi = sr.Broke
	}
	if hint > sr.Held && (sr.Broke == 0 || hint < sr.Broke) && hint >= f.Lo {
		return hint
	}
	switch {
	case sr.Held == 0 && sr.Broke == 0:
		return geoMid(lo, hi)
	case sr.Held == 0 && sr.Broke <= f.Lo:
		return 0 // Lo broke: nothing holds in the range
	case sr.Broke == 0 && sr.Held >= f.Hi:
		return 0 // Hi held
	}
	m := geoMid(lo, hi)
	stuck := m <= lo || m >= hi || float64(hi) <= float64(lo)*(1+f.Precision)
	switch {
	case sr.Held == 0 && stuck:
		return f.Lo // the bracket's low end was never tried
	case sr.Broke == 0 && stuck:
		return f.Hi
	case stuck:
		return 0
	}
	return m
}

// record notes a probe's outcome and returns the hint for the next:
// after a step that broke having carried fewer connections than it
// asked, the step just within what it carried (carried, in rooms; 0:
// none); after such a step held, the one above it, where the server's
// limit lies.
func (f *FindLimit) record(sr *SearchResult, rooms int, held bool, carried int) (hint int) {
	wasHint := sr.hint == rooms
	sr.hint = 0
	if held {
		sr.Held = rooms
		if wasHint && (sr.Broke == 0 || rooms+1 < sr.Broke) {
			sr.hint = rooms + 1
		}
	} else {
		sr.Broke = rooms
		sr.hint = carried
	}
	return sr.hint
}

// done reports whether the search has found the Limit to its precision.
func (f *FindLimit) done(sr *SearchResult) bool {
	switch {
	case sr.Held >= f.Hi:
		return true
	case sr.Broke > 0 && sr.Broke <= f.Lo:
		return true
	case sr.Held > 0 && sr.Broke > 0:
		return sr.Broke-sr.Held <= 1 || float64(sr.Broke) <= float64(sr.Held)*(1+f.Precision)
	}
	return false
}

// held says whether a probe held: its runs passed, no paced run broke,
// and no counted run's p99 delivery latency passed the SLO.
func (f *FindLimit) held(s *Step, paced bool) bool {
	if !s.Passed {
		return false
	}
	for _, d := range s.Docs {
		if d.Paced != nil && d.Paced.Broken {
			return false
		}
		if f.SLO > 0 && !paced && !d.Discarded {
			if h := d.Latency[results.LatencyDelivery]; h != nil && h.Count > 0 && time.Duration(h.P99) > f.SLO {
				return false
			}
		}
	}
	return true
}

// geoMid is the geometric mean of a and b, rounded, strictly between
// them when there is room.
func geoMid(a, b int) int {
	m := int(math.Round(math.Sqrt(float64(a) * float64(b))))
	if m <= a && a+1 < b {
		m = a + 1
	}
	if m >= b && b-1 > a {
		m = b - 1
	}
	return m
}

// carriedRooms is the step just within what a broken step carried when
// the server refused connections in its set-up (the most any of its runs
// carried, in whole rooms), 0 when it carried them all or did not say.
func carriedRooms(s *Step, users int) int {
	var most int64 = -1
	for _, d := range s.Docs {
		if c := d.Connections.Carried; c != nil && *c > most {
			most = *c
		}
	}
	if most < 0 || users < 1 || most >= int64(s.Rooms*users) {
		return 0
	}
	return int(most) / users
}

// Text says what the search found: "the largest step that held is 50
// rooms (1,000 connections); 51 broke; 4 steps".
func (sr *SearchResult) Text() string {
	switch {
	case sr.Held == 0 && sr.Broke > 0:
		return fmt.Sprintf("no step held: %d rooms (%d connections) broke; %d steps", sr.Broke, sr.Broke*sr.Users, sr.Probes)
	case sr.Held == 0:
		return fmt.Sprintf("no step held; %d steps", sr.Probes)
	case sr.Broke == 0:
		return fmt.Sprintf("every step held, up to %d rooms (%d connections); %d steps", sr.Held, sr.Held*sr.Users, sr.Probes)
	}
	s := fmt.Sprintf("the largest step that held is %d rooms (%d connections); %d rooms broke; %d steps", sr.Held, sr.Held*sr.Users, sr.Broke, sr.Probes)
	if !sr.Precise {
		s += fmt.Sprintf(" (the most allowed: the Limit lies between them, %.0f%% apart)", 100*(float64(sr.Broke)/float64(sr.Held)-1))
	}
	return s
}
