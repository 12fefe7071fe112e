package report

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/volanogo/volanogo/internal/results"
)

// kindRetried is the note of a run that load --retry made again.
const kindRetried = "retried"

// ordinals name tries: "first", "second", ...
var ordinals = []string{"first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth"}

func ordinal(n int) string {
	if n >= 1 && n <= len(ordinals) {
		return ordinals[n-1]
	}
	return fmt.Sprintf("%dth", n)
}

// retryCause is the note of a run that failed before a try that stood
// (results.Retry): "Failed on the first try with ... ; worked on the
// second." as the Volano Report said; false for a run made once.
func retryCause(d *results.Document) (cause, bool) {
	r := d.Retry
	if r == nil || r.Attempt < 2 || r.Superseded {
		return cause{}, false
	}
	var text string
	if n := len(r.Earlier); n > 0 {
		f := r.Earlier[0]
		what := fmt.Sprintf("%q", describe(f.Kind))
		if f.Server != "" {
			what = "\"" + f.Server + "\" at the server"
		}
		if f.Example != "" {
			what += " (" + f.Example + ")"
		}
		if n == 1 {
			text = "Failed on the first try with " + what
		} else {
			text = fmt.Sprintf("Failed on the first %d tries, the first with %s", n, what)
		}
	} else {
		text = fmt.Sprintf("Failed on the first %d tries", r.Attempt-1)
	}
	if results.RunPassed(d) {
		text += "; made again on a fresh server, it worked on the " + ordinal(r.Attempt) + " try."
	} else {
		text += fmt.Sprintf("; it failed on every one of its %d tries.", r.Attempt)
	}
	return cause{kind: kindRetried, example: text}, true
}

// retryNotes adds to each cell the notes of its runs that were made
// again, discarded runs included: a platform that needed a second try
// says so wherever it did.
func (b *builder) retryNotes() {
	for k, c := range b.cells {
		for _, d := range b.docs[k] {
			if cs, ok := retryCause(d); ok && !slices.Contains(c.causes, cs) {
				c.causes = append(c.causes, cs)
			}
		}
	}
}

// GCPauses are the server's garbage-collector pauses over the timed
// phase of a cell's counted runs that have them (results.ServerUsage).
type GCPauses struct {
	Runs int `json:"runs"`
	// Pauses is the median of the runs' pauses; P99 and Max the largest
	// p99 and longest pause of any of the runs, ns.
	Pauses int64 `json:"pauses"`
	P99    int64 `json:"p99_ns"`
	Max    int64 `json:"max_ns"`
}

// gcPauses is what the counted runs of a cell say of the server's GC
// pauses; nil when none says.
func gcPauses(docs []*results.Document) *GCPauses {
	var g GCPauses
	var counts []float64
	for _, d := range docs {
		s := d.Server
		if s == nil || s.GCPauseP99Seconds <= 0 {
			continue
		}
		g.Runs++
		counts = append(counts, float64(s.GCPauses))
		g.P99 = max(g.P99, int64(s.GCPauseP99Seconds*1e9))
		g.Max = max(g.Max, int64(s.GCPauseMaxSeconds*1e9))
	}
	if g.Runs == 0 {
		return nil
	}
	g.Pauses = int64(median(counts))
	return &g
}

const pauseIntro = "The server's Go garbage-collector pauses over the timed phase (volanogo serve's volanogo_gc_pause_seconds): pauses per run (median), the largest p99 and the longest pause of the counted runs, beside the delivery p99. A pause stops the whole server, as the RSVP measurements saw the JVM's collector stop its messages. Bucket bounds: within a fifth."

var pauseColumns = []string{"Platform", "Step", "GC pauses", "GC p99", "GC max", "Delivery p99"}

// pauseRows are the latency rows with GC pauses.
func (t *LatencyTable) pauseRows() []LatencyRow {
	var out []LatencyRow
	for _, r := range t.Rows {
		if r.GC != nil {
			out = append(out, r)
		}
	}
	return out
}

func pauseCells(r LatencyRow) []string {
	return []string{r.Platform, stepCell(r.Kind, r.Step), group(r.GC.Pauses), "≤ " + fmtNanos(r.GC.P99), "≤ " + fmtNanos(r.GC.Max), fmtNanos(r.P99)}
}

// SearchTable is load --find-limit's searches, one per platform: the
// steps tried in order and the Limit they found.
type SearchTable struct {
	Rows []SearchRow `json:"rows"`
}

// SearchRow is one platform's search.
type SearchRow struct {
	Platform string `json:"platform"`
	Kind     string `json:"kind"`
	// Lo and Hi are the range searched, in rooms of Users users.
	Lo, Hi, Users int
	// SLOSeconds is the p99 objective (0: the run rules alone).
	SLOSeconds float64       `json:"slo_seconds,omitempty"`
	Probes     []SearchProbe `json:"probes"`
	// Held is the largest step that held and Broke the smallest that
	// broke above it, in connections (turns) or users (paced); 0: none.
	Held  int64 `json:"held"`
	Broke int64 `json:"broke,omitempty"`
	// Within is Broke/Held − 1: how far apart the two are.
	Within float64 `json:"within,omitempty"`
}

// SearchProbe is one step the search tried.
type SearchProbe struct {
	Probe int   `json:"probe"`
	Rooms int   `json:"rooms"`
	Step  int64 `json:"step"`
	Held  bool  `json:"held"`
	// Carried is the most connections a run of the step carried (nil:
	// not recorded).
	Carried *int64 `json:"carried,omitempty"`
	// P99 is the delivery p99 of the step's counted runs (paced: from
	// the schedule), ns.
	P99   int64    `json:"p99_ns"`
	Notes []string `json:"notes,omitempty"`
	Why   string   `json:"why,omitempty"`

	causes []cause
}

// search builds the table of the runs that a --find-limit search made.
func (b *builder) search() {
	t := &SearchTable{}
	for _, row := range b.rep.Platforms {
		var sr *SearchRow
		probes := map[int]*SearchProbe{}
		for _, d := range b.rows[row] {
			s := d.Search
			if s == nil || superseded(d) {
				continue
			}
			kind := kindOf(d)
			if sr == nil {
				sr = &SearchRow{Platform: row, Kind: kind, Lo: s.Lo, Hi: s.Hi, Users: s.Users, SLOSeconds: s.SLOSeconds}
				if kind == KindPaced {
					sr.SLOSeconds = max(sr.SLOSeconds, d.Config.SLOSeconds)
				}
			}
			p := probes[s.Probe]
			if p == nil {
				p = &SearchProbe{Probe: s.Probe, Rooms: d.Config.Rooms, Step: stepOf(d, kind)}
				probes[s.Probe] = p
			}
			if c := d.Connections.Carried; c != nil && (p.Carried == nil || *c > *p.Carried) {
				v := *c
				p.Carried = &v
			}
		}
		if sr == nil {
			continue
		}
		for _, n := range sortedKeys(probes, cmp.Compare[int]) {
			p := probes[n]
			c := b.mainCell(row, sr.Kind, p.Step)
			if c == nil {
				continue
			}
			counted, _ := b.counted(b.docs[cellKey{row, sr.Kind, p.Step, c.CPUs}])
			names := turnHistograms
			if sr.Kind == KindPaced {
				names = pacedHistograms
			}
			if q, ok := b.percentiles(counted, false, names); ok {
				p.P99 = q.p99
			}
			p.Held, p.Why = probeHeld(c, counted, sr)
			p.causes = c.causes
			sr.Probes = append(sr.Probes, *p)
		}
		for _, p := range sr.Probes {
			if p.Held && p.Step > sr.Held {
				sr.Held = p.Step
			}
		}
		for _, p := range sr.Probes {
			if !p.Held && p.Step > sr.Held && (sr.Broke == 0 || p.Step < sr.Broke) {
				sr.Broke = p.Step
			}
		}
		if sr.Held > 0 && sr.Broke > 0 {
			sr.Within = float64(sr.Broke)/float64(sr.Held) - 1
		}
		t.Rows = append(t.Rows, *sr)
	}
	if len(t.Rows) > 0 {
		b.rep.Search = t
	}
}

// probeHeld says whether a probed step held, as the search judged it: the
// run rules, no paced run broken, no counted run's p99 over the SLO; and
// why not.
func probeHeld(c *Cell, counted []*results.Document, sr *SearchRow) (bool, string) {
	if c.Failed {
		return false, "failed"
	}
	for _, d := range counted {
		if d.Paced != nil && d.Paced.Broken {
			return false, "broke"
		}
		if sr.SLOSeconds > 0 && sr.Kind == KindTurns {
			if h := d.Latency[results.LatencyDelivery]; h != nil && h.Count > 0 && float64(h.P99) > sr.SLOSeconds*1e9 {
				return false, "p99 " + fmtNanos(h.P99) + " over the SLO of " + time.Duration(sr.SLOSeconds*1e9).String()
			}
		}
	}
	return true, ""
}

// searchIntro describes the search table.
const searchIntro = "load --find-limit: the steps a search tried, in order, each under the run rules; a step held when its runs passed, no paced run broke and no counted run's p99 passed the SLO. A step that broke because the server refused connections says how many it carried, and the search tries the step just within it next."

var searchColumns = []string{"Try", "Rooms", "Step", "Carried", "p99", "Outcome"}

func searchCells(sr SearchRow, p SearchProbe) []string {
	carried := "–"
	if p.Carried != nil {
		carried = group(*p.Carried)
	}
	o := "held"
	if !p.Held {
		o = "broke"
		if p.Why != "" && p.Why != "failed" && p.Why != "broke" {
			o += ": " + p.Why
		}
	}
	if len(p.Notes) > 0 {
		o += " (" + strings.Join(p.Notes, ", ") + ")"
	}
	return []string{group(int64(p.Probe)), group(int64(p.Rooms)), stepCell(sr.Kind, p.Step), carried, fmtNanos(p.P99), o}
}

// searchHeadline says what a search found.
func searchHeadline(sr SearchRow) string {
	unit := " connections"
	if sr.Kind != KindTurns {
		unit = " users"
	}
	s := fmt.Sprintf("%s: %s..%s rooms of %d", sr.Platform, group(int64(sr.Lo)), group(int64(sr.Hi)), sr.Users)
	if sr.SLOSeconds > 0 {
		s += ", SLO p99 " + time.Duration(sr.SLOSeconds*1e9).String()
	}
	switch {
	case sr.Held == 0:
		s += ": no step held"
	case sr.Broke == 0:
		s += ": every step held, up to " + group(sr.Held) + unit
	default:
		s += fmt.Sprintf(": held %s%s, broke at %s (within %.1f%%)", group(sr.Held), unit, group(sr.Broke), 100*sr.Within)
	}
	return s + fmt.Sprintf(", %d steps", len(sr.Probes))
}
