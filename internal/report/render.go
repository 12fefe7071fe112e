package report

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/volanogo/volanogo/internal/results"
)

// Formats Render accepts.
var Formats = []string{"text", "markdown", "html", "json", "csv"}

// Render writes the report in format: "text", "markdown" (or "md"),
// "html", "json" or "csv".
func (r *Report) Render(w io.Writer, format string) error {
	bw := bufio.NewWriter(w)
	var err error
	switch format {
	case "text", "":
		err = r.renderText(termWriter{bw})
	case "markdown", "md":
		err = r.renderMarkdown(termWriter{bw})
	case "json":
		enc := json.NewEncoder(bw)
		enc.SetIndent("", "  ")
		err = enc.Encode(r)
	case "csv":
		err = r.renderCSV(bw)
	case "html":
		err = r.renderHTML(bw)
	default:
		return fmt.Errorf("unknown format %q (want %s)", format, strings.Join(Formats, ", "))
	}
	if err != nil {
		return err
	}
	return bw.Flush()
}

// Shared wording.

func (r *Report) ruleText() string {
	o := r.Options
	var first string
	switch o.Discard {
	case 0:
		first = "No run is discarded"
	case 1:
		first = "The first run of every step is discarded"
	default:
		first = fmt.Sprintf("The first %d runs of every step are discarded", o.Discard)
	}
	if o.Best == 1 && o.Of == 1 {
		return first + "; the score is the next run's."
	}
	return fmt.Sprintf("%s; the score is the average of the best %d of the next %d.", first, o.Best, o.Of)
}

const (
	fastIntro   = "Scores are messages per second (sent + received, over the timed phase). Bigger is faster."
	scaleIntro  = "Scores by concurrent connections (rooms × users). Limit: the most connections the server carried (Access done, room entered): \"≥\" when every step held, exact when a step failed with the server refusing the rest, \"~\" an estimate where the steps only bracket the break."
	clientNote  = "* client-bound: the client was the limit: its CPU reached 90% of the processors it could use while the server's stayed under 90% of its own or was not measured (on one machine: while a tenth of the machine was idle); the score measures the client, not the server."
	latIntro    = "Delivery latency, send to arrival, merged from the HDR histograms of the counted runs; for paced steps from the scheduled send, so that a server that falls behind is not flattered (coordinated omission)."
	costIntro   = "CPU per message of the server and of the client; delayed ACKs per message and the share of TCP segments retransmitted (Retrans.), from the kernel's counters of the whole client machine. Medians of the counted runs that passed: the figures to compare servers by when client and server share a machine."
	capIntro    = "Paced (open-loop) steps: each user sends at a fixed pause. A step breaks when connections are refused or dropped, messages are lost, or p99 exceeds the SLO."
	procIntro   = "Score at each server processor count; in parentheses the gain per added processor over the next lower count."
	fanoutIntro = "Fan-out of a broadcast: from the send of a chat to its arrival at the first and at the last of the other users of its room, and the spread between those two arrivals; one value per broadcast that reached everyone, merged from the HDR histograms of the counted runs as delivery latency is. Where the client shares the server's processors, the spread's tail also measures the scheduler: a thread of either side preempted in the middle of a broadcast (the README, under volanogo serve, has figures)."
	stormIntro  = "Reconnect storm: a paced run in which the users drop their connections at once and reconnect with jittered back-off. Recovery is the time from the storm until every dropped user was back in its room and had received a chat sent after its return (median of the counted runs); reconnect is a user's time from its drop to its return. Lost is the most chats any counted run lost that the server had surely delivered; missed sends are the chats dropped users did not send while away. Leaked is what the server still held after a run, the most over every run of the step."
	churnIntro  = "Connection churn: each user repeats connect, Access, EnterRoom, one chat, ExitRoom, close. Sequences and sequences per second are medians over the counted runs. Cold is each user's first sequence, warm the later ones (as the RSVP measurements timed a first execution apart from the next), merged from their HDR histograms; cold/warm is the ratio of the p50s. Leaked is what the server still held after a run against before it (connections, goroutines, file descriptors), the most over every run of the step."
)

// compareVerdict is the outcome of the gate of a comparison ("" without
// a threshold).
func compareVerdict(t *CompareTable) string {
	if t.Threshold == nil {
		return ""
	}
	th := strconv.FormatFloat(*t.Threshold, 'f', -1, 64) + "%"
	if regs := t.Regressions(); len(regs) > 0 {
		var parts []string
		for _, r := range regs {
			parts = append(parts, fmt.Sprintf("%s at %s (%s, p=%.3f)", r.Metric, stepCell(r.Kind, r.Step), signedPercent(r.Change), r.P))
		}
		return fmt.Sprintf("Verdict: B is significantly worse than A by more than %s in %s: %s.", th,
			plural(len(regs), "metric"), strings.Join(parts, "; "))
	}
	if t.Powerless() {
		return "Verdict: none possible: the runs are too few for any difference to be significant, so the " + th + " gate cannot fail."
	}
	return "Verdict: no metric of B is significantly worse than A by more than " + th + "."
}

// signedPercent prints a change: "+12.0%", "−7.12%" (three significant
// digits, a true minus sign).
func signedPercent(x float64) string {
	if x < 0 {
		return "−" + sig3(-x) + "%"
	}
	return "+" + sig3(x) + "%"
}

func compareIntro(t *CompareTable) string {
	return fmt.Sprintf("A = %s (old), B = %s (new). Each figure as the tables above show it (the score under the run rule, latency merged from the histograms, the medians of the counted runs), else the median of the runs after the discard; delta %% is B against A, \"~\" when the Mann–Whitney U test over the runs after the discard finds no significant difference (alpha %.2f).",
		t.A, t.B, t.Alpha)
}

// fmtNanos prints a duration in ns with three significant digits ("–"
// when unknown).
func fmtNanos(ns int64) string {
	if ns <= 0 {
		return "–"
	}
	return results.FormatNanos(ns)
}

// group prints n with thousands separators: 141,200.
func group(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// pluralWord is word, or word+"s" unless n is 1.
func pluralWord(n int64, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// sig3 prints v with three significant digits (results.Sig3).
func sig3(v float64) string { return results.Sig3(v) }

// fmtRate prints a rate rounded to a whole number, with thousands
// separators.
func fmtRate(v float64) string { return group(int64(math.Round(v))) }

// fmtMedian prints a cell's median: whole, or with its half.
func fmtMedian(c *Cell) string {
	if !c.HasScore() {
		return ""
	}
	whole := math.Floor(c.Median)
	s := group(int64(whole))
	if frac := c.Median - whole; frac > 0 {
		s += strings.TrimPrefix(strconv.FormatFloat(frac, 'f', -1, 64), "0")
	}
	return s
}

func fmtCPU(p float64) string {
	if p < 0 {
		return "–"
	}
	return strconv.FormatFloat(p, 'f', 0, 64) + "%"
}

func fmtBytes(n int64) string {
	if n <= 0 {
		return "unknown"
	}
	const gib = 1 << 30
	if n >= gib {
		return strconv.FormatFloat(float64(n)/gib, 'f', 1, 64) + " GiB"
	}
	return strconv.FormatFloat(float64(n)/(1<<20), 'f', 0, 64) + " MiB"
}

func fmtPause(s float64) string {
	return strconv.FormatFloat(s, 'f', -1, 64) + " s"
}

func fmtP(p float64) string {
	if p < 0 {
		return ""
	}
	return "p=" + strconv.FormatFloat(p, 'f', 3, 64)
}

func fmtRatio(x float64) string {
	if x == 0 {
		return ""
	}
	return strconv.FormatFloat(x, 'f', 2, 64)
}

func fmtCompare(v float64, unit string) string {
	if unit == "msg/s" {
		return fmtRate(v)
	}
	return sig3(v)
}

// costColumns are the columns of the cost table, every format alike; the
// intro says that the figures are per message.
// With documents that carry the machine's floor, an efficiency column
// follows (see costColumnsOf).
var costColumns = []string{"Platform", "Step", "Server CPU", "Client CPU", "Delayed ACKs", "Retrans."}

// costIntroOf is the intro of the cost table t.
func costIntroOf(t *CostTable) string {
	if t != nil && t.hasEfficiency() {
		return costIntro + " " + efficiencyIntro
	}
	return costIntro
}

// efficiencyIntro explains the efficiency column.
const efficiencyIntro = "Efficiency is the kernel floor of the client's machine (volanogo floor, recorded by load --floor: bare system calls relaying the same traffic) divided by the CPU per message, for each side: 1 would cost no more than the floor, 0.25 four times as much; where a document carries several readings of the floor (measured before and after its runs, as bench/engines.sh does), their mean. It compares runs made on different machines."

// costEfficiency is the heading of the efficiency column.
const costEfficiency = "Efficiency (server/client)"

// hasEfficiency reports whether a row of t has an efficiency.
func (t *CostTable) hasEfficiency() bool {
	for _, r := range t.Rows {
		if r.EfficiencyServer != nil || r.EfficiencyClient != nil {
			return true
		}
	}
	return false
}

// costColumnsOf are the columns of the cost table t.
func costColumnsOf(t *CostTable) []string {
	if t != nil && t.hasEfficiency() {
		return append(costColumns[:len(costColumns):len(costColumns)], costEfficiency)
	}
	return costColumns
}

// costCells is one row of the cost table t; "–" for an unknown figure.
func costCells(t *CostTable, row CostRow) []string {
	f := func(v *float64, unit string) string {
		if v == nil {
			return "–"
		}
		return strconv.FormatFloat(*v, 'f', 2, 64) + unit
	}
	cells := []string{row.Platform, stepCell(row.Kind, row.Step), f(row.ServerMicros, " µs"), f(row.ClientMicros, " µs"),
		f(row.DelayedACKsPerMessage, ""), f(row.RetransmittedPercent, "%")}
	if t.hasEfficiency() {
		cells = append(cells, f(row.EfficiencyServer, "")+" / "+f(row.EfficiencyClient, ""))
	}
	return cells
}

// capacityHeadline is one platform's outcome of the paced test.
func capacityHeadline(cr CapacityRow) string {
	s := cr.Platform + ": held " + group(cr.Held) + " users"
	if cr.BrokeAt > 0 {
		s += "; broke at " + group(cr.BrokeAt) + " users"
		if cr.Reason != "" {
			s += ": " + cr.Reason
		}
	} else {
		s += " (no step broke)"
	}
	return s
}

// stepCell is a step in a table that mixes kinds: "1,000 users (churn)"
// for a churn or storm step, else its stepName.
func stepCell(kind string, step int64) string {
	if kind == KindChurn || kind == KindStorm || kind == KindPrivate {
		return stepName(kind, step) + " (" + kind + ")"
	}
	return stepName(kind, step)
}

// churnColumns are the columns of a churn step, text and markdown alike.
var churnColumns = []string{"Users", "Sequences", "Seq/s", "Cold p50", "Cold p99", "Warm p50", "Warm p99", "Cold/warm", "Leaked", "Outcome"}

func churnCells(s ChurnStep) []string {
	times := func(t *SequenceTimes) (string, string) {
		if t == nil {
			return "–", "–"
		}
		return fmtNanos(t.P50), fmtNanos(t.P99)
	}
	c50, c99 := times(s.Cold)
	w50, w99 := times(s.Warm)
	return []string{group(s.Users), group(s.Sequences), fmtRate(s.SequencesPerSecond),
		c50, c99, w50, w99, fmtTimes(s.ColdWarm()), leakText(s), churnOutcome(s)}
}

// fmtTimes prints a ratio as "3.8×", "–" when unknown.
func fmtTimes(x float64) string {
	if x <= 0 {
		return "–"
	}
	return sig3(x) + "×"
}

// leakText is a step's leaks: "none", "2 conns, 2 FDs", or "–" when the
// server exposed none of the figures.
func leakText(s ChurnStep) string {
	var parts []string
	known := false
	for _, l := range []struct {
		v          *int64
		one, other string
	}{{s.LeakedConnections, "conn", "conns"}, {s.LeakedGoroutines, "goroutine", "goroutines"}, {s.LeakedFDs, "FD", "FDs"}} {
		if l.v == nil {
			continue
		}
		known = true
		switch {
		case *l.v == 1:
			parts = append(parts, "1 "+l.one)
		case *l.v > 1:
			parts = append(parts, group(*l.v)+" "+l.other)
		}
	}
	switch {
	case !known:
		return "–"
	case len(parts) == 0:
		return "none"
	}
	return strings.Join(parts, ", ")
}

// churnOutcome is "ok", "failed" and the footnote letters: "ok (e)".
func churnOutcome(s ChurnStep) string { return stepOutcome(s.Failed, s.Notes) }

// churnHeadline is one platform's outcome of the churn test: whether the
// server leaked, and which figures it did not expose.
func churnHeadline(cr ChurnRow) string {
	var leaked []string
	var unknown []string
	for _, s := range cr.Steps {
		if s.Leaked() {
			leaked = append(leaked, leakText(s)+" at "+stepName(KindChurn, s.Users))
		}
		for _, u := range []struct {
			v    *int64
			name string
		}{{s.LeakedConnections, "connections"}, {s.LeakedGoroutines, "goroutines"}, {s.LeakedFDs, "file descriptors"}} {
			if u.v == nil && !slices.Contains(unknown, u.name) {
				unknown = append(unknown, u.name)
			}
		}
	}
	h := cr.Platform + ": "
	switch {
	case len(leaked) > 0:
		h += "left behind " + strings.Join(leaked, "; ")
	case len(unknown) == 3:
		h += "leaks unknown (the server exposed no counts after the runs)"
		return h
	default:
		h += "no leak after any run"
	}
	if len(unknown) > 0 {
		h += " (" + strings.Join(unknown, " and ") + " not exposed by the server)"
	}
	return h
}

// fanoutColumns are the columns of the fan-out table.
var fanoutColumns = []string{"Platform", "Step", "Broadcasts", "First p50", "First p99", "Last p50", "Last p99", "Spread p50", "Spread p99"}

// fanoutCells is one row of the fan-out table.
func fanoutCells(row LatencyRow) []string {
	pp := func(t *Times) (string, string) {
		if t == nil {
			return "–", "–"
		}
		return fmtNanos(t.P50), fmtNanos(t.P99)
	}
	f50, f99 := pp(row.FanoutFirst)
	l50, l99 := pp(row.FanoutLast)
	s50, s99 := pp(row.FanoutSpread)
	n := int64(0)
	for _, t := range []*Times{row.FanoutFirst, row.FanoutLast, row.FanoutSpread} {
		if t != nil {
			n = max(n, t.Count)
		}
	}
	return []string{row.Platform, stepCell(row.Kind, row.Step), group(n), f50, f99, l50, l99, s50, s99}
}

// fanoutRows are the latency rows that have fan-out figures.
func (t *LatencyTable) fanoutRows() []LatencyRow {
	var out []LatencyRow
	for _, r := range t.Rows {
		if r.HasFanout() {
			out = append(out, r)
		}
	}
	return out
}

// stormColumns are the columns of a storm step.
var stormColumns = []string{"Users", "Dropped", "Back", "Recovered", "Recovery", "Reconnect p50", "Reconnect p99", "Lost", "Missed sends", "Leaked", "Outcome"}

func stormCells(s StormStep) []string {
	r50, r99 := "–", "–"
	if s.Reconnect != nil {
		r50, r99 = fmtNanos(s.Reconnect.P50), fmtNanos(s.Reconnect.P99)
	}
	return []string{group(s.Users), group(s.Dropped), group(s.Reconnected), group(s.Recovered), recoveryText(s),
		r50, r99, group(s.Lost), group(s.MissedSends), leakText(s.leaks()), stepOutcome(s.Failed, s.Notes)}
}

// recoveryText is "2.95 s", "never", or "2.95 s; never in 1 of 3 runs".
func recoveryText(s StormStep) string {
	var t string
	if s.RecoverySeconds != nil {
		t = sig3(*s.RecoverySeconds) + " s"
	}
	switch {
	case s.NeverRecovered == 0 && t == "":
		return "–"
	case s.NeverRecovered == 0:
		return t
	case t == "":
		return "never"
	}
	return t + "; never in " + strconv.Itoa(s.NeverRecovered) + " of " + plural(s.Runs, "run")
}

// leaks are the step's leak figures as a churn step holds them.
func (s StormStep) leaks() ChurnStep {
	return ChurnStep{LeakedConnections: s.LeakedConnections, LeakedGoroutines: s.LeakedGoroutines, LeakedFDs: s.LeakedFDs}
}

// stormHeadline is one platform's outcome of the storm test.
func stormHeadline(sr StormRow) string {
	var parts []string
	for _, s := range sr.Steps {
		p := "at " + stepName(KindStorm, s.Users) + " "
		switch {
		case s.RecoverySeconds != nil && s.NeverRecovered == 0:
			p += "recovered in " + sig3(*s.RecoverySeconds) + " s"
		case s.RecoverySeconds != nil:
			p += "recovered in " + sig3(*s.RecoverySeconds) + " s, but never in " + strconv.Itoa(s.NeverRecovered) + " of " + plural(s.Runs, "run")
		case s.Dropped == 0:
			p += "no user dropped"
		default:
			p += "never recovered"
		}
		if s.Lost > 0 {
			p += ", lost up to " + group(s.Lost) + " " + pluralWord(s.Lost, "chat")
		} else {
			p += ", lost nothing"
		}
		c := s.leaks()
		if c.Leaked() {
			p += ", left behind " + leakText(c)
		}
		parts = append(parts, p)
	}
	return sr.Platform + ": " + strings.Join(parts, "; ")
}

// stepOutcome is "ok", "failed" and the footnote letters: "ok (e)".
func stepOutcome(failed bool, notes []string) string {
	o := "ok"
	if failed {
		o = "failed"
	}
	if len(notes) > 0 {
		o += " (" + strings.Join(notes, ", ") + ")"
	}
	return o
}

// machineLines describe a machine: the system, the processor, the
// runtime and its limits.
func machineLines(m Machine, machines int, ports string, quickACK bool) (system, cpu, runtime string) {
	system = m.OS
	if m.Kernel != "" {
		system += ", kernel " + m.Kernel
	}
	if m.Hostname != "" {
		system = m.Hostname + ": " + system
	}
	if machines > 1 {
		system += " (" + strconv.Itoa(machines) + " machines; the first shown)"
	}
	cpu = m.CPU
	if cpu == "" {
		cpu = "unknown CPU"
	}
	if m.CPUs > 0 {
		cpu += " × " + strconv.Itoa(m.CPUs)
	}
	cpu += ", " + fmtBytes(m.MemoryBytes) + " memory"
	var limits []string
	if m.GoVersion != "" {
		limits = append(limits, m.GoVersion)
	}
	if m.GOMAXPROCS > 0 {
		limits = append(limits, "GOMAXPROCS "+strconv.Itoa(m.GOMAXPROCS))
	}
	if m.OpenFilesSoft > 0 {
		limits = append(limits, "open files "+group(m.OpenFilesSoft)+"/"+group(m.OpenFilesHard))
	}
	if ports != "" {
		limits = append(limits, "ports "+strings.Join(strings.Fields(ports), "–"))
	}
	if m.TCPCongestion != "" {
		limits = append(limits, "TCP "+m.TCPCongestion)
	}
	if quickACK {
		limits = append(limits, "loopback quickack")
	}
	return system, cpu, strings.Join(limits, "; ")
}

// clientMachine is the client side of an environment as a Machine.
func (e Environment) clientMachine() Machine {
	return Machine{Hostname: e.Hostname, OS: e.OS, Kernel: e.Kernel, CPU: e.CPU, CPUs: e.CPUs, MemoryBytes: e.MemoryBytes,
		GoVersion: e.GoVersion, GOMAXPROCS: e.GOMAXPROCS, OpenFilesSoft: e.OpenFilesSoft, OpenFilesHard: e.OpenFilesHard,
		TCPCongestion: e.TCPCongestion}
}

// sideBySide is the client's and the server's machine, facet by facet
// (system, processor, runtime), when the server said its own; nil
// otherwise.
func sideBySide(e Environment) [][3]string {
	if e.ServerMachine == nil {
		return nil
	}
	cs, cc, cr := machineLines(e.clientMachine(), e.Machines, e.EphemeralPorts, e.LoopbackQuickACK)
	ss, sc, sr := machineLines(*e.ServerMachine, e.ServerMachines, "", false)
	return [][3]string{{"System", cs, ss}, {"Processor", cc, sc}, {"Runtime", cr, sr}}
}

// envLines are an environment as label/value pairs; with the server's
// machine known, the first pairs set each facet of the client beside the
// server's ("Client", "Server", "Processor", "Server CPU", ...).
func envLines(e Environment) [][2]string {
	var out [][2]string
	if sbs := sideBySide(e); sbs != nil {
		labels := map[string][2]string{"System": {"Client", "Server"}, "Processor": {"Processor", "Server CPU"},
			"Runtime": {"Runtime", "Server runtime"}}
		for _, f := range sbs {
			l := labels[f[0]]
			if f[1] != "" {
				out = append(out, [2]string{l[0], f[1]})
			}
			if f[2] != "" {
				out = append(out, [2]string{l[1], f[2]})
			}
		}
	} else {
		client, cpu, limits := machineLines(e.clientMachine(), e.Machines, e.EphemeralPorts, e.LoopbackQuickACK)
		out = [][2]string{{"Client", client}, {"Processor", cpu}}
		if limits != "" {
			out = append(out, [2]string{"Runtime", limits})
		}
	}
	return append(out, envRest(e)...)
}

// envRest are the pairs of an environment after its machines.
func envRest(e Environment) [][2]string {
	var out [][2]string
	for _, s := range e.Servers {
		out = append(out, [2]string{"Identity", s})
	}
	for _, n := range e.Network {
		out = append(out, [2]string{"Network", n})
	}
	if len(e.Transports) > 0 {
		out = append(out, [2]string{"Transport", strings.Join(e.Transports, ", ")})
	}
	for _, s := range e.Server {
		out = append(out, [2]string{"Server", s})
	}
	if len(e.Engines) > 0 {
		out = append(out, [2]string{"Engines", strings.Join(e.Engines, "; ")})
	}
	runs := plural(e.Runs, "run")
	if e.Sharded > 0 {
		runs += fmt.Sprintf(" (%s merged from %d shards)", plural(e.Sharded, "run"), e.Shards)
	}
	out = append(out, [2]string{"Runs", runs})
	for _, t := range e.Tools {
		out = append(out, [2]string{"Tool", t})
	}
	return out
}
