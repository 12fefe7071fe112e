package report

import (
	"cmp"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/perf/benchmath"

	"github.com/volanogo/volanogo/internal/results"
)

// processors builds the processor scalability table: for every row and
// turn-taking step whose runs differ by the server's processor count.
func (b *builder) processors() {
	type rs struct {
		base string
		step int64
	}
	cells := map[rs]map[int]*Cell{}
	for k, c := range b.cells {
		if k.kind != KindTurns || k.cpus <= 0 || c.Missing {
			continue
		}
		key := rs{b.base[k.row], k.step}
		if cells[key] == nil {
			cells[key] = map[int]*Cell{}
		}
		cells[key][k.cpus] = c
	}
	colSet := map[int]bool{}
	var rows []ProcessorRow
	seen := map[string]bool{}
	for _, row := range b.rep.Platforms {
		base := b.base[row]
		if seen[base] {
			continue
		}
		seen[base] = true
		for _, step := range b.steps(KindTurns) {
			byCPUs := cells[rs{base, step}]
			if len(byCPUs) < 2 {
				continue
			}
			pr := ProcessorRow{Platform: base, Connections: step}
			for _, n := range sortedKeys(byCPUs, cmp.Compare[int]) {
				colSet[n] = true
				pr.Cells = append(pr.Cells, &ProcessorCell{CPUs: n, Cell: byCPUs[n]})
			}
			for i := 1; i < len(pr.Cells); i++ {
				prev, cur := pr.Cells[i-1], pr.Cells[i]
				if !prev.Cell.HasScore() || !cur.Cell.HasScore() || prev.Cell.Score <= 0 {
					continue
				}
				g := gainPercent(prev.Cell.Score, cur.Cell.Score, cur.CPUs-prev.CPUs)
				cur.GainPercent = &g
			}
			rows = append(rows, pr)
		}
	}
	if len(rows) == 0 {
		return
	}
	t := &ProcessorTable{Columns: sortedKeys(colSet, cmp.Compare[int])}
	for _, pr := range rows {
		full := make([]*ProcessorCell, len(t.Columns))
		for _, pc := range pr.Cells {
			full[slices.Index(t.Columns, pc.CPUs)] = pc
		}
		pr.Cells = full
		t.Rows = append(t.Rows, pr)
	}
	b.rep.Processors = t
}

// gainPercent is the gain per added processor from score a on m processors
// to score c on m+added: (c/a)^(1/added) − 1, in percent.
func gainPercent(a, c int64, added int) float64 {
	r := float64(c) / float64(a)
	if added > 1 {
		r = math.Pow(r, 1/float64(added))
	}
	return (r - 1) * 100
}

// capacity builds the paced capacity table: the paced (broadcast) sweeps,
// then the private chat ones.
func (b *builder) capacity() {
	t := &CapacityTable{}
	for _, kind := range []string{KindPaced, KindPrivate} {
		for _, row := range b.rep.Platforms {
			if cr := b.capacityRow(row, kind); len(cr.Steps) > 0 {
				t.Rows = append(t.Rows, cr)
			}
		}
	}
	if len(t.Rows) > 0 {
		b.rep.Capacity = t
	}
}

// capacityRow is one platform's sweep of one paced kind; a private chat
// sweep's platform is named so ("fast (private chat)").
func (b *builder) capacityRow(row, kind string) CapacityRow {
	cr := CapacityRow{Platform: row, Kind: kind}
	if kind == KindPrivate {
		cr.Platform += " (private chat)"
	}
	for _, step := range b.steps(kind) {
		c := b.mainCell(row, kind, step)
		if c == nil || c.Missing {
			continue
		}
		counted, _ := b.counted(b.docs[cellKey{row, kind, step, c.CPUs}])
		cs := CapacityStep{Users: step, Runs: len(counted), causes: c.causes, ClientBound: c.ClientBound}
		var pause, in, out, cpu []float64
		for _, d := range counted {
			cr.SLOSeconds = max(cr.SLOSeconds, d.Config.SLOSeconds)
			pause = append(pause, d.Config.PauseSeconds)
			if d.Paced != nil {
				in = append(in, d.Paced.InPerSecond)
				out = append(out, d.Paced.OutPerSecond)
			}
			if d.Server != nil {
				cpu = append(cpu, d.Server.CPUPercent)
			}
			broken := !d.Passed || d.Interrupted || (d.Paced != nil && d.Paced.Broken)
			if broken && !cs.Broken {
				cs.Broken = true
				if d.Paced != nil && d.Paced.Reason != "" {
					cs.Reason = d.Paced.Reason
				} else {
					cs.Reason = describe(causeOf(d).kind)
				}
			}
		}
		cs.PauseSeconds, cs.InPerSecond, cs.OutPerSecond = median(pause), median(in), median(out)
		cs.ServerCPUPercent = -1
		if len(cpu) > 0 {
			cs.ServerCPUPercent = median(cpu)
		}
		if q, ok := b.percentiles(counted, false, pacedHistograms); ok {
			cs.P99 = q.p99
		}
		if cs.Broken && cr.BrokeAt == 0 {
			cr.BrokeAt, cr.Reason = step, cs.Reason
		}
		if !cs.Broken && cr.BrokeAt == 0 {
			cr.Held = step
		}
		cr.Steps = append(cr.Steps, cs)
	}
	return cr
}

// churn builds the connection-churn table.
func (b *builder) churn() {
	steps := b.steps(KindChurn)
	if len(steps) == 0 {
		return
	}
	t := &ChurnTable{}
	for _, row := range b.rep.Platforms {
		cr := ChurnRow{Platform: row}
		for _, step := range steps {
			c := b.mainCell(row, KindChurn, step)
			if c == nil || c.Missing {
				continue
			}
			all := b.docs[cellKey{row, KindChurn, step, c.CPUs}]
			counted, _ := b.counted(all)
			cs := ChurnStep{Users: step, Runs: len(counted), Failed: c.Failed, causes: c.causes}
			var seqs, rate, count []float64
			for _, d := range counted {
				count = append(count, float64(d.Config.Count))
				if d.Churn != nil {
					seqs = append(seqs, float64(d.Churn.Sequences))
					rate = append(rate, d.Churn.SequencesPerSecond)
				}
			}
			cs.SequencesPerUser = int(median(count))
			cs.Sequences, cs.SequencesPerSecond = int64(math.Round(median(seqs))), median(rate)
			if q, ok := b.mergedHistogram(counted, false, "churn first", func(d *results.Document) *results.Histogram {
				if d.Churn == nil {
					return nil
				}
				return d.Churn.First
			}); ok {
				cs.Cold = &SequenceTimes{Count: q.count, P50: q.p50, P99: q.p99, Max: q.max}
			}
			if q, ok := b.percentiles(counted, false, []string{results.LatencySequence}); ok {
				cs.Warm = &SequenceTimes{Count: q.count, P50: q.p50, P99: q.p99, Max: q.max}
			}
			// A leak in any run is a leak, the discarded one included.
			for _, d := range all {
				conns, gors, fds, ok := leaks(d)
				if !ok {
					continue
				}
				cs.LeakedConnections = maxPtr(cs.LeakedConnections, conns)
				cs.LeakedGoroutines = maxPtr(cs.LeakedGoroutines, gors)
				cs.LeakedFDs = maxPtr(cs.LeakedFDs, fds)
			}
			cr.Steps = append(cr.Steps, cs)
		}
		if len(cr.Steps) > 0 {
			t.Rows = append(t.Rows, cr)
		}
	}
	if len(t.Rows) > 0 {
		b.rep.Churn = t
	}
}

// leaks are what d says the server kept after a churn or storm run; a
// figure is nil when the server did not expose it (its after-run count is
// absent and no leak is recorded), and ok is false when nothing is known.
func leaks(d *results.Document) (conns, gors, fds *int64, ok bool) {
	var l *results.Leaks
	switch {
	case d.Churn != nil:
		l = &d.Churn.Leaks
	case d.Storm != nil:
		l = &d.Storm.Leaks
	}
	s := d.Server
	if l == nil || s == nil {
		return nil, nil, nil, false
	}
	if s.OpenConnections > 0 || s.Goroutines > 0 || s.OpenFDs > 0 || l.LeakedConnections != 0 {
		conns = &l.LeakedConnections
	}
	if s.Goroutines > 0 || l.LeakedGoroutines != 0 {
		gors = &l.LeakedGoroutines
	}
	if s.OpenFDs > 0 || l.LeakedFDs != 0 {
		fds = &l.LeakedFDs
	}
	return conns, gors, fds, conns != nil || gors != nil || fds != nil
}

// storm builds the reconnect-storm table.
func (b *builder) storm() {
	steps := b.steps(KindStorm)
	if len(steps) == 0 {
		return
	}
	t := &StormTable{}
	for _, row := range b.rep.Platforms {
		sr := StormRow{Platform: row}
		for _, step := range steps {
			c := b.mainCell(row, KindStorm, step)
			if c == nil || c.Missing {
				continue
			}
			all := b.docs[cellKey{row, KindStorm, step, c.CPUs}]
			counted, _ := b.counted(all)
			ss := StormStep{Users: step, Runs: len(counted), Failed: c.Failed, causes: c.causes}
			var dropped, back, recovered, attempts, missed, recovery []float64
			for _, d := range counted {
				if g := d.Integrity; g != nil {
					ss.Lost = max(ss.Lost, g.Lost)
				}
				st := d.Storm
				if st == nil {
					continue
				}
				dropped, back = append(dropped, float64(st.Dropped)), append(back, float64(st.Reconnected))
				recovered, attempts = append(recovered, float64(st.Recovered)), append(attempts, float64(st.Attempts))
				missed = append(missed, float64(st.MissedSends))
				switch {
				case st.Dropped > 0 && st.RecoverySeconds > 0:
					recovery = append(recovery, st.RecoverySeconds)
				case st.Dropped > 0:
					ss.NeverRecovered++
				}
			}
			r := func(xs []float64) int64 { return int64(math.Round(median(xs))) }
			ss.Dropped, ss.Reconnected, ss.Recovered, ss.Attempts, ss.MissedSends = r(dropped), r(back), r(recovered), r(attempts), r(missed)
			if len(recovery) > 0 {
				m := median(recovery)
				ss.RecoverySeconds = &m
			}
			if q, ok := b.percentiles(counted, false, []string{results.LatencyReconnect}); ok {
				ss.Reconnect = q.times()
			}
			for _, d := range all {
				conns, gors, fds, ok := leaks(d)
				if !ok {
					continue
				}
				ss.LeakedConnections = maxPtr(ss.LeakedConnections, conns)
				ss.LeakedGoroutines = maxPtr(ss.LeakedGoroutines, gors)
				ss.LeakedFDs = maxPtr(ss.LeakedFDs, fds)
			}
			sr.Steps = append(sr.Steps, ss)
		}
		if len(sr.Steps) > 0 {
			t.Rows = append(t.Rows, sr)
		}
	}
	if len(t.Rows) > 0 {
		b.rep.Storm = t
	}
}

func maxPtr(cur, v *int64) *int64 {
	switch {
	case v == nil:
		return cur
	case cur == nil || *v > *cur:
		x := *v
		return &x
	}
	return cur
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

var (
	turnHistograms  = []string{results.LatencyDelivery}
	pacedHistograms = []string{results.LatencyDeliveryScheduled, results.LatencyDelivery}
)

// latency builds the latency table from the main cells.
func (b *builder) latency() {
	t := &LatencyTable{}
	for _, row := range b.rep.Platforms {
		for _, kind := range []string{KindTurns, KindPaced, KindPrivate} {
			names := turnHistograms
			if kind != KindTurns {
				names = pacedHistograms
			}
			for _, step := range b.steps(kind) {
				c := b.mainCell(row, kind, step)
				if c == nil || c.Missing {
					continue
				}
				counted, _ := b.counted(b.docs[cellKey{row, kind, step, c.CPUs}])
				q, ok := b.percentiles(counted, kind == KindTurns, names)
				if !ok {
					continue
				}
				lr := LatencyRow{Platform: row, Kind: kind, Step: step, Histogram: q.name,
					Count: q.count, P50: q.p50, P99: q.p99, P999: q.p999, Max: q.max, GC: gcPauses(counted)}
				for _, f := range []struct {
					name string
					to   **Times
				}{{results.LatencyFanoutFirst, &lr.FanoutFirst}, {results.LatencyFanoutLast, &lr.FanoutLast},
					{results.LatencyFanoutSpread, &lr.FanoutSpread}} {
					if q, ok := b.percentiles(counted, kind == KindTurns, []string{f.name}); ok {
						*f.to = q.times()
					}
				}
				t.Rows = append(t.Rows, lr)
			}
		}
	}
	if len(t.Rows) > 0 {
		b.rep.Latency = t
	}
}

// cost builds the per-message cost table from the main cells: the medians
// over the passed counted runs of each figure, over the runs that have it.
func (b *builder) cost() {
	t := &CostTable{}
	for _, row := range b.rep.Platforms {
		for _, kind := range []string{KindTurns, KindPaced, KindPrivate} {
			for _, step := range b.steps(kind) {
				c := b.mainCell(row, kind, step)
				if c == nil || c.Missing {
					continue
				}
				counted, _ := b.counted(b.docs[cellKey{row, kind, step, c.CPUs}])
				r := CostRow{Platform: row, Kind: kind, Step: step,
					ServerMicros:          medianOf(counted, ifPassed(serverCPUPerMessage)),
					ClientMicros:          medianOf(counted, ifPassed(clientCPUPerMessage)),
					DelayedACKsPerMessage: medianOf(counted, ifPassed(delayedACKsPerMessage)),
					RetransmittedPercent:  medianOf(counted, ifPassed(retransmittedPercent)),
					EfficiencyServer:      medianOf(counted, ifPassed(efficiencyServer)),
					EfficiencyClient:      medianOf(counted, ifPassed(efficiencyClient))}
				if r.ServerMicros == nil && r.ClientMicros == nil && r.DelayedACKsPerMessage == nil &&
					r.RetransmittedPercent == nil {
					continue
				}
				t.Rows = append(t.Rows, r)
			}
		}
	}
	if len(t.Rows) > 0 {
		b.rep.Cost = t
	}
}

// medianOf is the median of get over the documents that have the figure,
// nil when none has it.
func medianOf(docs []*results.Document, get func(*results.Document) (float64, bool)) *float64 {
	vs := values(docs, get)
	if len(vs) == 0 {
		return nil
	}
	m := median(vs)
	return &m
}

func serverCPUPerMessage(d *results.Document) (float64, bool) {
	if d.Server == nil || d.Server.CPUPerMessageMicros <= 0 {
		return 0, false
	}
	return d.Server.CPUPerMessageMicros, true
}

func clientCPUPerMessage(d *results.Document) (float64, bool) {
	return d.Client.CPUPerMessageMicros, d.Client.CPUPerMessageMicros > 0
}

func delayedACKsPerMessage(d *results.Document) (float64, bool) {
	if d.TCP == nil || d.Counts.Total <= 0 {
		return 0, false
	}
	return float64(d.TCP.DelayedACKs) / float64(d.Counts.Total), true
}

func retransmittedPercent(d *results.Document) (float64, bool) { return d.TCP.RetransmittedPercent() }

func efficiencyServer(d *results.Document) (float64, bool) {
	e, _ := results.Efficiency(d)
	return e.Server, e.Server > 0
}

func efficiencyClient(d *results.Document) (float64, bool) {
	e, _ := results.Efficiency(d)
	return e.Client, e.Client > 0
}

// compare builds the side-by-side comparison of two rows.
func (b *builder) compare() error {
	a, c := b.opt.Compare[0], b.opt.Compare[1]
	for _, name := range []string{a, c} {
		if _, ok := b.rows[name]; !ok {
			return &CompareError{Name: name, Platforms: b.rep.Platforms}
		}
	}
	th := benchmath.DefaultThresholds
	t := &CompareTable{A: a, B: c, Alpha: th.CompareAlpha, Threshold: b.opt.Threshold}
	powerless := map[[2]int]bool{}
	for _, kind := range []string{KindTurns, KindPaced, KindPrivate, KindChurn, KindStorm} {
		for _, step := range b.steps(kind) {
			ca, cb := b.mainCell(a, kind, step), b.mainCell(c, kind, step)
			if ca == nil || cb == nil {
				continue
			}
			_, da := b.counted(b.docs[cellKey{a, kind, step, ca.CPUs}])
			_, db := b.counted(b.docs[cellKey{c, kind, step, cb.CPUs}])
			for _, m := range metrics {
				if m.kind != "" && m.kind != kind {
					continue
				}
				va, vb := values(da, m.get), values(db, m.get)
				if len(va) == 0 || len(vb) == 0 {
					continue
				}
				sa, sb := benchmath.NewSample(va, &th), benchmath.NewSample(vb, &th)
				ma := benchmath.AssumeNothing.Summary(sa, 0.95).Center
				mb := benchmath.AssumeNothing.Summary(sb, 0.95).Center
				// A figure the report shows elsewhere is shown here as it
				// is there (the score under the run rule, latency merged
				// from the histograms, the cost table's medians); the U
				// test still compares the runs.
				fa, okA, strict := b.shownFigure(m.name, a, kind, step)
				fb, okB, _ := b.shownFigure(m.name, c, kind, step)
				switch {
				case okA && okB:
					ma, mb = fa, fb
				case strict:
					continue
				}
				cmpr := benchmath.AssumeNothing.Compare(sa, sb)
				for _, w := range cmpr.Warnings {
					// Too few samples is said below, with the figures.
					if !strings.HasPrefix(w.Error(), "need ") {
						t.Warnings = appendNew(t.Warnings, w.Error())
					}
				}
				r := CompareRow{Kind: kind, Step: step, Metric: m.name, Unit: m.unit, A: ma, B: mb,
					NA: len(va), NB: len(vb), P: cmpr.P, Delta: cmpr.FormatDelta(ma, mb),
					MinP: minUTestP(len(va), len(vb))}
				r.Powerless = r.MinP > t.Alpha
				if r.Powerless {
					powerless[[2]int{r.NA, r.NB}] = true
				}
				if ma != 0 {
					r.Ratio = mb / ma
					r.Change = (mb - ma) / ma * 100
				}
				if r.Delta != "~" && ma != mb {
					if (mb > ma) == m.higherBetter {
						r.Better = "B"
					} else {
						r.Better = "A"
					}
				}
				if th := b.opt.Threshold; th != nil && r.Better == "A" && math.Abs(r.Change) > *th {
					r.Regression = true
				}
				t.Rows = append(t.Rows, r)
			}
		}
	}
	for _, n := range sortedKeys(powerless, func(x, y [2]int) int { return cmp.Or(cmp.Compare(x[0], y[0]), cmp.Compare(x[1], y[1])) }) {
		t.Warnings = append(t.Warnings, powerlessNote(n[0], n[1], t.Alpha))
	}
	b.rep.Compare = t
	return nil
}

// shownFigure is the figure another table of the report shows for metric
// name of row at a step, so that the comparison quotes the same value; ok
// is false when none shows it. strict says that the metric has no other
// value to show: a step without a score has no score to compare.
func (b *builder) shownFigure(name, row, kind string, step int64) (v float64, ok, strict bool) {
	ms := func(ns int64) (float64, bool, bool) { return float64(ns) / 1e6, ns > 0, false }
	switch name {
	case "score":
		c := b.mainCell(row, kind, step)
		if c == nil || !c.HasScore() {
			return 0, false, true
		}
		return float64(c.Score), true, true
	case "delivery p50", "delivery p99":
		if t := b.rep.Latency; t != nil {
			for _, r := range t.Rows {
				if r.Platform == row && r.Kind == kind && r.Step == step {
					if name == "delivery p50" {
						return ms(r.P50)
					}
					return ms(r.P99)
				}
			}
		}
	case "server CPU/msg", "client CPU/msg":
		if t := b.rep.Cost; t != nil {
			for _, r := range t.Rows {
				if r.Platform == row && r.Kind == kind && r.Step == step {
					p := r.ServerMicros
					if name == "client CPU/msg" {
						p = r.ClientMicros
					}
					if p != nil {
						return *p, true, false
					}
				}
			}
		}
	case "out":
		if t := b.rep.Capacity; t != nil {
			for _, r := range t.Rows {
				if r.Kind != kind || (r.Platform != row && r.Platform != row+" (private chat)") {
					continue
				}
				for _, st := range r.Steps {
					if st.Users == step {
						return st.OutPerSecond, true, false
					}
				}
			}
		}
	case "sequences", "cold p50", "warm p50":
		if t := b.rep.Churn; t != nil {
			for _, r := range t.Rows {
				if r.Platform != row {
					continue
				}
				for _, st := range r.Steps {
					switch {
					case st.Users != step:
					case name == "sequences":
						return st.SequencesPerSecond, st.SequencesPerSecond > 0, false
					case name == "cold p50" && st.Cold != nil:
						return ms(st.Cold.P50)
					case name == "warm p50" && st.Warm != nil:
						return ms(st.Warm.P50)
					}
				}
			}
		}
	case "recovery":
		if t := b.rep.Storm; t != nil {
			for _, r := range t.Rows {
				for _, st := range r.Steps {
					if r.Platform == row && st.Users == step && st.RecoverySeconds != nil {
						return *st.RecoverySeconds, true, false
					}
				}
			}
		}
	}
	return 0, false, false
}

// minUTestP is the smallest two-sided p-value of the Mann–Whitney U test
// with n1 and n2 samples: every sample of one side above every sample of
// the other, 2 of the C(n1+n2, n1) orderings as extreme.
func minUTestP(n1, n2 int) float64 {
	if n1 <= 0 || n2 <= 0 {
		return 1
	}
	c := 1.0
	for i := 1; i <= n1; i++ {
		c = c * float64(n2+i) / float64(i)
	}
	return math.Min(1, 2/c)
}

// minRunsASide is the fewest runs a side, equal on both sides, with which
// the U test can find a difference at alpha.
func minRunsASide(alpha float64) int {
	n := 1
	for minUTestP(n, n) > alpha {
		n++
	}
	return n
}

// powerlessNote says that na runs of A and nb of B can show no
// significant difference.
func powerlessNote(na, nb int, alpha float64) string {
	k := minRunsASide(alpha)
	return fmt.Sprintf("Too few runs for significance: with %s of A and %d of B the smallest possible p-value is %s, above alpha %s, "+
		"so no difference can be significant (\"~\") however large; at least %d runs a side are needed (load -runs %d: the first is discarded)",
		plural(na, "run"), nb, strconv.FormatFloat(minUTestP(na, nb), 'f', 3, 64), strconv.FormatFloat(alpha, 'f', -1, 64), k, k+1)
}

// metric is one figure compared run by run.
type metric struct {
	name, unit   string
	kind         string // "" for every kind
	higherBetter bool
	get          func(d *results.Document) (float64, bool)
}

var metrics = []metric{
	{"score", "msg/s", KindTurns, true, func(d *results.Document) (float64, bool) {
		return float64(d.Score), d.Passed && d.Score > 0
	}},
	{"out", "msg/s", KindPaced, true, func(d *results.Document) (float64, bool) {
		if d.Paced == nil {
			return 0, false
		}
		return d.Paced.OutPerSecond, true
	}},
	{"sequences", "seq/s", KindChurn, true, func(d *results.Document) (float64, bool) {
		if d.Churn == nil || !d.Passed {
			return 0, false
		}
		return d.Churn.SequencesPerSecond, true
	}},
	{"cold p50", "ms", KindChurn, false, func(d *results.Document) (float64, bool) {
		if d.Churn == nil || d.Churn.First == nil || d.Churn.First.Count == 0 || !d.Passed {
			return 0, false
		}
		return float64(d.Churn.First.P50) / 1e6, true
	}},
	{"warm p50", "ms", KindChurn, false, func(d *results.Document) (float64, bool) {
		h := d.Latency[results.LatencySequence]
		if h == nil || h.Count == 0 || !d.Passed {
			return 0, false
		}
		return float64(h.P50) / 1e6, true
	}},
	{"recovery", "s", KindStorm, false, func(d *results.Document) (float64, bool) {
		if d.Storm == nil || d.Storm.RecoverySeconds <= 0 {
			return 0, false
		}
		return d.Storm.RecoverySeconds, true
	}},
	{"delivery p50", "ms", "", false, func(d *results.Document) (float64, bool) {
		h := d.Latency[results.LatencyDelivery]
		if h == nil || h.Count == 0 || !d.Passed {
			return 0, false
		}
		return float64(h.P50) / 1e6, true
	}},
	{"delivery p99", "ms", "", false, func(d *results.Document) (float64, bool) {
		h := d.Latency[results.LatencyDelivery]
		if h == nil || h.Count == 0 || !d.Passed {
			return 0, false
		}
		return float64(h.P99) / 1e6, true
	}},
	{"server CPU/msg", "µs", "", false, ifPassed(serverCPUPerMessage)},
	{"client CPU/msg", "µs", "", false, ifPassed(clientCPUPerMessage)},
}

// ifPassed is get restricted to the runs that passed.
func ifPassed(get func(*results.Document) (float64, bool)) func(*results.Document) (float64, bool) {
	return func(d *results.Document) (float64, bool) {
		if !d.Passed {
			return 0, false
		}
		return get(d)
	}
}

func values(docs []*results.Document, get func(*results.Document) (float64, bool)) []float64 {
	var vs []float64
	for _, d := range docs {
		if v, ok := get(d); ok {
			vs = append(vs, v)
		}
	}
	return vs
}

// environments lists what each row ran on.
func (b *builder) environments() {
	for _, row := range b.rep.Platforms {
		docs := b.rows[row]
		d := docs[0]
		e := d.Environment
		env := Environment{
			Platform: row, Hostname: e.Hostname, OS: osName(e), Kernel: e.Kernel,
			CPU: e.CPUModel, CPUs: e.CPUs, MemoryBytes: e.MemoryBytes, GoVersion: e.GoVersion,
			GOMAXPROCS: e.GOMAXPROCS, OpenFilesSoft: e.OpenFilesSoft, OpenFilesHard: e.OpenFilesHard,
			EphemeralPorts: e.EphemeralPorts, TCPCongestion: e.TCPCongestion, LoopbackQuickACK: e.LoopbackQuickACK,
			Runs: len(docs),
		}
		hosts, serverHosts := map[string]bool{}, map[string]bool{}
		var nets []*results.Network
		for _, d := range docs {
			hosts[d.Environment.Hostname] = true
			if d.Shards > 0 {
				env.Sharded++
				env.Shards += d.Shards
			}
			env.Transports = appendNew(env.Transports, d.Config.Transport)
			env.Engines = appendNew(env.Engines, d.Engines())
			if len(d.Config.ServerCommand) > 0 {
				env.ServerCommands = appendNew(env.ServerCommands, shellJoin(d.Config.ServerCommand))
			}
			if s := d.Server; s != nil {
				env.Server = appendNew(env.Server, serverLine(s, d.Config.ServerCPUs))
			}
			if si := d.ServerInfo; si != nil {
				env.Servers = appendNew(env.Servers, si.Name())
				if e := si.Environment; e != nil {
					if env.ServerMachine == nil {
						env.ServerMachine = machineOf(*e)
					}
					serverHosts[e.Hostname] = true
				}
			}
			if n := d.Network; n != nil {
				nets = append(nets, n)
			}
			env.Tools = appendNew(env.Tools, toolLine(d.Tool))
		}
		env.Network = networkLines(nets)
		env.CommandLines = collapseCommands(docs)
		env.Machines = len(hosts)
		env.ServerMachines = len(serverHosts)
		slices.Sort(env.Transports)
		slices.Sort(env.Server)
		slices.Sort(env.Engines)
		slices.Sort(env.Tools)
		b.rep.Environments = append(b.rep.Environments, env)
	}
}

func machineOf(e results.Environment) *Machine {
	return &Machine{Hostname: e.Hostname, OS: osName(e), Kernel: e.Kernel, CPU: e.CPUModel, CPUs: e.CPUs,
		MemoryBytes: e.MemoryBytes, GoVersion: e.GoVersion, GOMAXPROCS: e.GOMAXPROCS,
		OpenFilesSoft: e.OpenFilesSoft, OpenFilesHard: e.OpenFilesHard, TCPCongestion: e.TCPCongestion}
}

// networkLines describes the paths a platform's runs measured, a line
// each: runs over the same path (how its round trip was measured, the
// interface, its speed, loopback or not) share one line, the median of
// their round trips with its range, rather than a line each that differs
// only in the measured figures.
func networkLines(nets []*results.Network) []string {
	type path struct {
		method, iface string
		mbps          int64
		loopback      bool
	}
	var order []path
	runs := map[path][]*results.Network{}
	for _, n := range nets {
		p := path{n.Method, n.Interface, n.LinkMbps, n.Loopback}
		if _, ok := runs[p]; !ok {
			order = append(order, p)
		}
		runs[p] = append(runs[p], n)
	}
	var lines []string
	for _, p := range order {
		ns := runs[p]
		first := networkLine(ns[0])
		if !slices.ContainsFunc(ns[1:], func(n *results.Network) bool { return networkLine(n) != first }) {
			lines = append(lines, first) // one run, or runs that measured the same
			continue
		}
		rtts := make([]float64, len(ns))
		fastest := ns[0].RTTMinSeconds
		for i, n := range ns {
			rtts[i] = n.RTTSeconds
			fastest = min(fastest, n.RTTMinSeconds)
		}
		lines = append(lines, fmt.Sprintf("RTT %s (%s, median of %d runs, %s to %s; fastest %s)%s",
			fmtNanos(int64(median(rtts)*1e9)), methodName(p.method), len(ns), fmtNanos(int64(slices.Min(rtts)*1e9)),
			fmtNanos(int64(slices.Max(rtts)*1e9)), fmtNanos(int64(fastest*1e9)), pathOf(ns[0])))
	}
	return lines
}

// methodName says how a round trip was measured (results.Network.Method).
func methodName(m string) string {
	switch m {
	case "ping":
		return "protocol ping"
	case "connect":
		return "TCP connect"
	}
	return m
}

// networkLine describes a measured path: "RTT 212 µs (protocol ping,
// median of 10; fastest 180 µs), eth0 at 10,000 Mbit/s".
func networkLine(n *results.Network) string {
	s := "RTT " + fmtNanos(int64(n.RTTSeconds*1e9)) + " (" + methodName(n.Method)
	if n.RTTSamples > 1 {
		s += ", median of " + strconv.Itoa(n.RTTSamples) + "; fastest " + fmtNanos(int64(n.RTTMinSeconds*1e9))
	}
	return s + ")" + pathOf(n)
}

// pathOf is a network line's interface part: ", eth0 (device speed 100
// Mbit/s)", and whether the path is loopback.
func pathOf(n *results.Network) string {
	var s string
	switch {
	case n.Interface != "" && n.LinkMbps > 0:
		s += ", " + n.Interface + " (device speed " + group(n.LinkMbps) + " Mbit/s)"
	case n.Interface != "":
		s += ", " + n.Interface + " (link speed unknown)"
	}
	if n.Loopback {
		s += ", loopback"
	}
	return s
}

func osName(e results.Environment) string {
	switch {
	case e.Distribution != "":
		return e.Distribution
	case e.OS == "" && e.Arch == "":
		return "unknown system"
	}
	return e.OS + "/" + e.Arch
}

func serverLine(s *results.ServerUsage, restricted int) string {
	var parts []string
	if restricted > 0 {
		parts = append(parts, "restricted to "+plural(restricted, "CPU"))
	} else if s.CPUs > 0 {
		parts = append(parts, plural(s.CPUs, "CPU"))
	}
	if s.GOMAXPROCS > 0 {
		parts = append(parts, "GOMAXPROCS "+strconv.Itoa(s.GOMAXPROCS))
	}
	if s.Source != "" {
		parts = append(parts, "figures from "+s.Source)
	}
	return strings.Join(parts, ", ")
}

func toolLine(t results.Tool) string {
	s := cmp.Or(t.Name, "volanogo") + " " + cmp.Or(t.Version, "(unknown version)")
	var extra []string
	if t.Commit != "" {
		extra = append(extra, "commit "+t.Commit)
	}
	if t.GoVersion != "" {
		extra = append(extra, t.GoVersion)
	}
	if len(extra) > 0 {
		s += " (" + strings.Join(extra, ", ") + ")"
	}
	return s
}

func appendNew(xs []string, s string) []string {
	if s == "" || slices.Contains(xs, s) {
		return xs
	}
	return append(xs, s)
}

// shellJoin prints argv so that a shell reads it back.
func shellJoin(argv []string) string {
	parts := make([]string, len(argv))
	for i, a := range argv {
		if a != "" && !strings.ContainsFunc(a, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=,+@%", r))
		}) {
			parts[i] = a
			continue
		}
		parts[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(parts, " ")
}

// stepName is "1,500 connections" or "4,000 users" (paced, churn and
// storm).
func stepName(kind string, step int64) string {
	if kind == KindPaced || kind == KindPrivate || kind == KindChurn || kind == KindStorm {
		return group(step) + " users"
	}
	return group(step) + " connections"
}

// footnotes letters the causes in the order the tables cite them and
// fills in every Notes field.
func (b *builder) footnotes() {
	where := map[cause][]string{}
	cite := func(causes []cause, at string) []string {
		var ls []string
		for _, c := range causes {
			k := c.shape()
			l, ok := b.letters[k]
			if !ok {
				l = letter(len(b.causes))
				b.letters[k] = l
				b.causes = append(b.causes, c)
			}
			ls = appendNew(ls, l)
			where[k] = appendNew(where[k], at)
		}
		slices.Sort(ls)
		return ls
	}
	cell := func(row string, c *Cell) {
		if c == nil {
			return
		}
		at := row + " at " + stepName(c.Kind, c.Step)
		if c.CPUs > 0 && b.opt.By != ByCPUs && c.CPUs != b.main[stepKey{row, c.Kind, c.Step}] {
			at += " on " + plural(c.CPUs, "CPU")
		}
		c.Notes = cite(c.causes, at)
		for i := range c.Runs {
			c.Runs[i].Notes = cite(c.Runs[i].causes, at)
		}
	}
	if t := b.rep.Fast; t != nil {
		for _, r := range t.Rows {
			cell(r.Platform, r.Cell)
		}
	}
	if t := b.rep.Scale; t != nil {
		for i := range t.Rows {
			r := &t.Rows[i]
			for _, c := range r.Cells {
				cell(r.Platform, c)
			}
			r.Limit.Notes = cite(r.Limit.causes, r.Platform+" at its limit")
		}
	}
	if t := b.rep.Processors; t != nil {
		for _, r := range t.Rows {
			for _, pc := range r.Cells {
				if pc != nil {
					cell(r.Platform, pc.Cell)
				}
			}
		}
	}
	if t := b.rep.Search; t != nil {
		for _, r := range t.Rows {
			for i := range r.Probes {
				p := &r.Probes[i]
				p.Notes = cite(p.causes, r.Platform+" at "+stepName(r.Kind, p.Step)+" (search)")
			}
		}
	}
	if t := b.rep.Capacity; t != nil {
		for _, r := range t.Rows {
			for i := range r.Steps {
				s := &r.Steps[i]
				s.Notes = cite(s.causes, r.Platform+" at "+stepName(r.Kind, s.Users))
			}
		}
	}
	if t := b.rep.Churn; t != nil {
		for _, r := range t.Rows {
			for i := range r.Steps {
				s := &r.Steps[i]
				s.Notes = cite(s.causes, r.Platform+" at "+stepName(KindChurn, s.Users)+" (churn)")
			}
		}
	}
	if t := b.rep.Storm; t != nil {
		for _, r := range t.Rows {
			for i := range r.Steps {
				s := &r.Steps[i]
				s.Notes = cite(s.causes, r.Platform+" at "+stepName(KindStorm, s.Users)+" (storm)")
			}
		}
	}
	for i, c := range b.causes {
		var text string
		switch c.kind {
		case kindShort:
			text = "Ran under 1 second: no score (raise -count)."
		case kindNoScore:
			text = "Passed, but the result document has no score."
		case kindBroken:
			text = "Broke: " + c.example + "."
		case kindInterrupted:
			text = "Interrupted before the end of the run."
		case kindReordered:
			text = c.example
		case kindWarning:
			text = "Warning: " + strings.TrimSuffix(c.example, ".") + "."
		case kindRetried:
			text = c.example
		default:
			text = failureText(c)
		}
		b.rep.Footnotes = append(b.rep.Footnotes, Footnote{Letter: letter(i), Kind: c.kind,
			Example: c.example, Text: text, Where: where[c.shape()]})
	}
	for _, c := range b.cells {
		if c.ClientBound {
			b.rep.ClientBound = true
		}
	}
}

// shape is the footnote a cause shares: a failure's with its numbers left
// out (the user, the room, the ports, how many the server refused), so
// that one cause is one note however many runs had it, as the Volano
// Report quoted each once, with the first run's text; the report's own
// notes (no score, a broken step's reason, reordering, warnings, tries)
// as they are.
func (c cause) shape() cause {
	switch c.kind {
	case kindShort, kindNoScore, kindBroken, kindInterrupted, kindReordered, kindWarning, kindRetried:
		return c
	}
	return cause{kind: c.kind, example: digits.ReplaceAllString(c.example, "#"), server: digits.ReplaceAllString(c.server, "#")}
}

var digits = regexp.MustCompile(`[0-9]+`)

// failureText is a failure's footnote: the server's own cause first when
// it gave one, then what the client saw ("Failed with "4 connections
// refused (max_connections)" at the server; the client saw "connection
// reset by peer" (Mark16 in Room8: ...)."), else the client's alone.
func failureText(c cause) string {
	client := fmt.Sprintf("%q", describe(c.kind))
	if c.example != "" {
		client += " (" + c.example + ")"
	}
	if c.server == "" {
		return "Failed with " + client + "."
	}
	return fmt.Sprintf("Failed with \"%s\" at the server; the client saw %s.", c.server, client)
}

// letter is a, b, … z, aa, ab, …
func letter(i int) string {
	s := ""
	for {
		s = string(rune('a'+i%26)) + s
		i = i/26 - 1
		if i < 0 {
			return s
		}
	}
}

// collapseCommands lists the distinct client command lines of docs, in
// order of first appearance. Lines that differ in one argument only (a
// sweep: -rooms 15, -rooms 30, …) become one line with that argument as N
// and its values after it. Lines that differ in a few values (a script's
// runs: -rooms, -count, --run-id and -o change together) become one line
// with a variable for each, named after its flag.
func collapseCommands(docs []*results.Document) []CommandLine {
	var argvs [][]string
	seen := map[string]bool{}
	for _, d := range docs {
		if len(d.CommandLine) == 0 {
			continue
		}
		k := strings.Join(d.CommandLine, "\x00")
		if !seen[k] {
			seen[k] = true
			argvs = append(argvs, d.CommandLine)
		}
	}
	used := make([]bool, len(argvs))
	var out []CommandLine
	for i, a := range argvs {
		if used[i] {
			continue
		}
		if c, ok := collapseValues(argvs, used, i); ok {
			out = append(out, c)
			continue
		}
		used[i] = true
		out = append(out, CommandLine{Command: shellJoin(a)})
	}
	return out
}

// flagOf is the flag of an argument: "-rooms" of "-rooms" and of
// "-rooms=15", "" of a value (which may be negative: "-1" is a value).
func flagOf(arg string) string {
	if len(arg) < 2 || arg[0] != '-' || arg[1] >= '0' && arg[1] <= '9' || arg[1] == '.' {
		return ""
	}
	flag, _, _ := strings.Cut(arg, "=")
	return flag
}

// maxCommandVars is how many arguments lines may differ in and still be
// shown as one.
const maxCommandVars = 4

// collapseValues gathers the unused lines after argvs[i] that differ from
// it only in the values of at most maxCommandVars arguments (never in a
// flag), and makes them one line: with N for the argument when there is
// one, with a variable per argument when there are more; false when no
// other line qualifies.
func collapseValues(argvs [][]string, used []bool, i int) (CommandLine, bool) {
	a := argvs[i]
	var positions []int
	group := []int{i}
	for j := i + 1; j < len(argvs); j++ {
		b := argvs[j]
		if used[j] || len(b) != len(a) {
			continue
		}
		union := slices.Clone(positions)
		ok := true
		for k := range a {
			if a[k] == b[k] {
				continue
			}
			if f := flagOf(a[k]); f != flagOf(b[k]) || f != "" && (!strings.Contains(a[k], "=") || !strings.Contains(b[k], "=")) {
				ok = false
				break
			}
			if !slices.Contains(union, k) {
				union = append(union, k)
			}
		}
		if ok && len(union) <= maxCommandVars {
			positions = union
			group = append(group, j)
		}
	}
	if len(group) < 2 {
		return CommandLine{}, false
	}
	slices.Sort(positions)
	for _, j := range group {
		used[j] = true
	}
	argv := slices.Clone(a)
	if len(positions) == 1 {
		pos := positions[0]
		flag := flagOf(a[pos])
		c := CommandLine{}
		for _, j := range group {
			c.N = append(c.N, strings.TrimPrefix(argvs[j][pos], flag+"="))
		}
		argv[pos] = "N"
		if flag != "" {
			argv[pos] = flag + "=N"
		}
		c.Command = shellJoin(argv)
		return c, true
	}
	vars := make([]CommandVars, len(positions))
	taken := map[string]bool{}
	for n, pos := range positions {
		flag, name := flagOf(a[pos]), ""
		switch {
		case flag != "":
			name = strings.TrimLeft(flag, "-")
		case pos > 0 && strings.HasPrefix(a[pos-1], "-") && !strings.Contains(a[pos-1], "="):
			name = strings.TrimLeft(a[pos-1], "-")
		}
		name = strings.ToUpper(name)
		if name == "" || taken[name] {
			name = fmt.Sprintf("N%d", n+1)
		}
		taken[name] = true
		argv[pos] = name
		if flag != "" {
			argv[pos] = flag + "=" + name
		}
		vars[n].Name = name
		for _, j := range group {
			vars[n].Values = append(vars[n].Values, strings.TrimPrefix(argvs[j][pos], flag+"="))
		}
	}
	return CommandLine{Command: shellJoin(argv), Vars: vars}, true
}
