// Package loadtext is the text `volanogo load` prints: Mark's six result
// lines byte for byte, volanogo's lines after them, the summary of a
// campaign's steps under the run rule, and the environment header of the
// -file log. It formats documents and steps; it never decides a figure
// (package results does) and writes only to the writer it is given.
package loadtext

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/volanogo/volanogo/internal/buildinfo"
	"github.com/volanogo/volanogo/internal/campaign"
	"github.com/volanogo/volanogo/internal/results"
	"github.com/volanogo/volanogo/internal/swarm"
)

// EnvironmentHeader is what Mark writes to its -file before the results
// (there, the JVM's properties): the machine, the platform the swarm's
// Access requests carry, and the command line.
func EnvironmentHeader(w io.Writer, e results.Environment, p swarm.Platform, commandLine []string) {
	bi := buildinfo.Get()
	fmt.Fprintf(w, "volanogo load %s (%s, %s/%s)\n", orDevel(bi.Version), e.GoVersion, e.OS, e.Arch)
	fmt.Fprintf(w, "java.vendor = %s\n", p.Vendor)
	fmt.Fprintf(w, "java.vendor.url = %s\n", p.VendorURL)
	fmt.Fprintf(w, "java.version = %s\n", p.Version)
	fmt.Fprintf(w, "java.class.version = %s\n", p.ClassVersion)
	fmt.Fprintf(w, "os.name = %s\n", p.OSName)
	fmt.Fprintf(w, "os.version = %s\n", p.OSVersion)
	fmt.Fprintf(w, "os.arch = %s\n", p.OSArch)
	fmt.Fprintf(w, "host.name = %s\n", e.Hostname)
	if e.Distribution != "" {
		fmt.Fprintf(w, "os.distribution = %s\n", e.Distribution)
	}
	fmt.Fprintf(w, "cpu.model = %s\n", e.CPUModel)
	fmt.Fprintf(w, "cpu.count = %d\n", e.CPUs)
	fmt.Fprintf(w, "memory.bytes = %d\n", e.MemoryBytes)
	fmt.Fprintf(w, "go.maxprocs = %d\n", e.GOMAXPROCS)
	fmt.Fprintf(w, "open.files = %d (hard %d)\n", e.OpenFilesSoft, e.OpenFilesHard)
	if e.EphemeralPorts != "" {
		fmt.Fprintf(w, "ephemeral.ports = %s\n", e.EphemeralPorts)
	}
	if e.TCPCongestion != "" {
		fmt.Fprintf(w, "tcp.congestion = %s\n", e.TCPCongestion)
	}
	if e.LoopbackQuickACK {
		fmt.Fprintln(w, "loopback.quickack = 1")
	}
	if len(commandLine) > 0 {
		fmt.Fprintf(w, "command.line = %s\n", strings.Join(commandLine, " "))
	}
	fmt.Fprintln(w)
}

func orDevel(s string) string {
	if s == "" {
		return "devel"
	}
	return s
}

// MarkLines writes Mark's six result lines (protocol sheet §10.5),
// byte for byte as Mark prints them; when the timed phase lasted under a
// second the last two are Mark's "Elapsed time       < 1 second".
func MarkLines(w io.Writer, sent, received, elapsedMs int64) {
	total := sent + received
	fmt.Fprintf(w, "VolanoMark version = %s\n", results.MarkVersion)
	fmt.Fprintf(w, "Messages sent      = %d\n", sent)
	fmt.Fprintf(w, "Messages received  = %d\n", received)
	fmt.Fprintf(w, "Total messages     = %d\n", total)
	score, ok := results.MarkScore(total, elapsedMs)
	if !ok {
		fmt.Fprintf(w, "Elapsed time       < 1 second\n")
		return
	}
	secs := results.FormatMarkSeconds(elapsedMs)
	unit := " seconds"
	if secs == "1.0" {
		unit = " second"
	}
	fmt.Fprintf(w, "Elapsed time       = %s%s\n", secs, unit)
	fmt.Fprintf(w, "Average throughput = %d messages per second\n", score)
}

// RunHeading is the line before a run's result when a campaign has
// several runs.
func RunHeading(w io.Writer, r campaign.RunInfo) {
	note := ""
	if r.Discarded {
		note = " (discarded)"
	}
	if r.Attempt > 1 {
		note += fmt.Sprintf(", try %d (--retry: the last failed)", r.Attempt)
	}
	fmt.Fprintf(w, "Rooms %d%s, run %d of %d%s\n", r.Rooms, cpusNote(r.CPUs), r.Run, r.Runs, note)
}

// SweepStopped is the line that says a paced sweep stopped at a broken
// step.
func SweepStopped(w io.Writer, s campaign.Step) {
	fmt.Fprintf(w, "The sweep stops at %d rooms%s: the step broke (--keep-going runs the next steps).\n\n", s.Rooms, cpusNote(s.CPUs))
}

func cpusNote(cpus int) string {
	if cpus <= 0 {
		return ""
	}
	return fmt.Sprintf(", server CPUs %d", cpus)
}

// Run writes one run's result in full (the -file log, load -v): Mark's
// lines (churn: their counterpart in sequences), then volanogo's.
func Run(w io.Writer, d *results.Document) { run(w, d, true) }

// RunShort writes the lines of Run as load prints them by default: their
// main figures, each line within Width columns for ordinary values (a
// Wrap writer folds the rest); the -file log and -v keep the full lines.
func RunShort(w io.Writer, d *results.Document) { run(w, d, false) }

func run(w io.Writer, d *results.Document, full bool) {
	if NoneGotIn(d) {
		noneGotIn(w, d)
		return
	}
	ms := d.ElapsedMillis()
	if d.Churn != nil {
		writeChurnLines(w, d, ms, full)
	} else {
		MarkLines(w, d.Counts.Sent, d.Counts.Received, ms)
	}
	if d.Shards > 0 {
		fmt.Fprintf(w, "Shards             = %d processes, merged\n", d.Shards)
	}
	pct := percentiles
	if !full {
		pct = percentilesShort
	}
	if h := d.Latency[results.LatencyDelivery]; h != nil && h.Count > 0 {
		fmt.Fprintf(w, "Delivery latency   = %s\n", pct(h))
	}
	if h := d.Latency[results.LatencyDeliveryScheduled]; h != nil && h.Count > 0 {
		fmt.Fprintf(w, "From schedule      = %s\n", pct(h))
	}
	if h := d.Latency[results.LatencyResponse]; h != nil && h.Count > 0 {
		fmt.Fprintf(w, "Echo round trip    = %s\n", pct(h))
	}
	if h := d.Latency[results.LatencyTurn]; h != nil && h.Count > 0 {
		fmt.Fprintf(w, "Turn time          = %s\n", pct(h))
	}
	if line := fanoutLine(d, full); line != "" {
		fmt.Fprintf(w, "Fan-out            = %s\n", line)
	}
	c := d.Connections
	carried := ""
	if c.Carried != nil && *c.Carried != c.Established {
		carried = fmt.Sprintf(", %d carried (Access done, room entered)", *c.Carried)
		if !full {
			carried = fmt.Sprintf(", %d in rooms", *c.Carried)
		}
	}
	rate := ""
	if c.ConnectRate > 0 && d.Config.ConnectRate > 0 {
		rate = fmt.Sprintf(", %.0f a second of the %.0f asked", c.ConnectRate, d.Config.ConnectRate)
	}
	switch {
	case len(d.Config.ClientCommand) > 0 && c.Attempted == 0:
		// An external client (--client-cmd) made the connections; it
		// reports none of them, so 0 of 0 would mislead.
		fmt.Fprintf(w, "Connections        = made by the client command (not counted), set-up %.3f s\n", d.SetupSeconds)
	case full:
		fmt.Fprintf(w, "Connections        = %d established of %d attempted%s, peak %d, set-up %.3f s%s\n",
			c.Established, c.Attempted, carried, c.Peak, d.SetupSeconds, rate)
	default:
		fmt.Fprintf(w, "Connections        = %d of %d%s, peak %d, set-up %.3f s%s\n",
			c.Established, c.Attempted, carried, c.Peak, d.SetupSeconds, rate)
	}
	cl := d.Client
	if full {
		fmt.Fprintf(w, "Client CPU         = %.2f s user, %.2f s system, %s per message, peak RSS %s\n",
			cl.CPUUserSeconds, cl.CPUSystemSeconds, micros(cl.CPUPerMessageMicros), mib(cl.PeakRSSBytes))
	} else {
		cpu := ""
		if e := d.ElapsedSeconds; e > 0 {
			cpu = fmt.Sprintf(", %.0f%% of one processor", (cl.CPUUserSeconds+cl.CPUSystemSeconds)/e*100)
		}
		fmt.Fprintf(w, "Client CPU         = %s per message%s, RSS %s\n", micros(cl.CPUPerMessageMicros), cpu, mib(cl.PeakRSSBytes))
	}
	if s := d.Server; s != nil {
		if full {
			fmt.Fprintf(w, "Server CPU         = %.2f s (%s), %s per message, RSS %s -> %s\n",
				s.CPUSeconds, cpuShare(s.CPUPercent, serverMachineCPUs(d)), micros(s.CPUPerMessageMicros), mib(s.RSSStartBytes), mib(s.RSSEndBytes))
		} else {
			fmt.Fprintf(w, "Server CPU         = %s per message, %.0f%% of one processor, RSS %s\n",
				micros(s.CPUPerMessageMicros), s.CPUPercent, mib(s.RSSEndBytes))
		}
		if s.GCPauseP99Seconds > 0 {
			fmt.Fprintf(w, "Server GC pauses   = %d, p99 <= %s, max <= %s\n", s.GCPauses,
				fmtDur(int64(s.GCPauseP99Seconds*1e9)), fmtDur(int64(s.GCPauseMaxSeconds*1e9)))
		}
		if s.CoalesceSeconds > 0 {
			what := " (serve --coalesce: an epoll loop waits so long after a round of few events)"
			if !full {
				what = " (serve --coalesce)"
			}
			fmt.Fprintf(w, "Server coalescing  = %s%s\n", time.Duration(s.CoalesceSeconds*float64(time.Second)), what)
		}
	}
	if t := d.TCP; t != nil {
		fmt.Fprintf(w, "TCP (kernel)       = %s\n", tcpLine(t, full))
	}
	if g := d.Integrity; g != nil {
		fmt.Fprintf(w, "Integrity          = %s\n", integrityLine(g, full))
		if o := g.Outside; o != nil {
			fmt.Fprintf(w, "Other users        = %s seen by the run's users (counted apart)\n", outsideLine(o))
			if o.FirstOther != "" {
				fmt.Fprintf(w, "First other packet = %s\n", o.FirstOther)
			}
		}
		if g.FirstReordered != "" {
			fmt.Fprintf(w, "First reordered    = %s\n", g.FirstReordered)
		}
	}
	if p := d.Paced; p != nil {
		fmt.Fprintf(w, "Paced              = %d users, in %.1f/s, out %.1f/s\n", p.ConcurrentUsers, p.InPerSecond, p.OutPerSecond)
		if p.Broken {
			fmt.Fprintf(w, "Step broken        = %s\n", p.Reason)
		}
	}
	for _, f := range d.Failures {
		fmt.Fprintf(w, "Failure            = %s (%d): %s\n", f.Kind, f.Count, f.Explained())
	}
	for _, x := range d.Warnings {
		fmt.Fprintf(w, "Warning            = %s\n", x)
	}
	if st := d.Storm; st != nil {
		fmt.Fprintf(w, "Storm              = %s\n", stormLine(d))
	}
	if d.Churn != nil {
		fmt.Fprintf(w, "Server after run   = %s\n", leakLine(d, d.Churn.Leaks, full))
	} else if d.Storm != nil {
		fmt.Fprintf(w, "Server after run   = %s\n", leakLine(d, d.Storm.Leaks, full))
	}
	if d.Interrupted {
		fmt.Fprintln(w, "Test interrupted.")
	} else if !d.Passed {
		fmt.Fprintln(w, "Test failed.")
	}
}

// NoneGotIn reports whether a failed run got no user into a room, so that
// it measured nothing.
func NoneGotIn(d *results.Document) bool {
	if d == nil || d.Passed || d.Interrupted || d.Counts.Total > 0 || len(d.Failures) == 0 {
		return false
	}
	if c := d.Connections.Carried; c != nil {
		return *c == 0
	}
	return d.Connections.Established == 0
}

// noneGotIn writes a run that got no user into a room: its connections and
// why, not Mark's lines of zeros.
func noneGotIn(w io.Writer, d *results.Document) {
	c := d.Connections
	fmt.Fprintf(w, "No user got into a room (%d of %d connections established): nothing was measured.\n", c.Established, c.Attempted)
	for _, f := range d.Failures {
		fmt.Fprintf(w, "Failure            = %s (%d): %s\n", f.Kind, f.Count, f.Explained())
	}
	for _, x := range d.Warnings {
		fmt.Fprintf(w, "Warning            = %s\n", x)
	}
	fmt.Fprintln(w, "Test failed.")
}

// integrityLine is the ledger in one line: loss, duplication and
// corruption, then reordering in the room and per sender.
func integrityLine(g *results.Integrity, full bool) string {
	if !full && g.Lost == 0 && g.Duplicated == 0 && g.Corrupted == 0 && g.Reordered == 0 && g.SenderReordered == 0 && g.InFlight == 0 {
		return "nothing lost, duplicated, corrupted or reordered"
	}
	line := fmt.Sprintf("%d lost, %d duplicated, %d corrupted", g.Lost, g.Duplicated, g.Corrupted)
	if g.Reordered > 0 {
		share, _ := g.ReorderedShare()
		unit := "chats"
		if g.MaxDisplacement == 1 {
			unit = "chat"
		}
		line += fmt.Sprintf("; %d reordered (%d of %d receivers, %s%%; at most %d %s late)",
			g.Reordered, g.ReceiversReordered, g.Receivers, percent(share), g.MaxDisplacement, unit)
	} else {
		line += ", 0 reordered"
	}
	line += fmt.Sprintf(", %d out of sender order", g.SenderReordered)
	if g.InFlight > 0 {
		line += fmt.Sprintf("; %d in flight when the room stalled (not counted lost)", g.InFlight)
	}
	return line
}

// outsideLine is what other users sent the run's users: chats, entries
// and exits, then whispers, beeps, private sessions and other packets
// when there were any.
func outsideLine(o *results.Outside) string {
	line := fmt.Sprintf("%d chats, %d entries, %d exits", o.Chats, o.Entered, o.Exited)
	for _, c := range []struct {
		n    int64
		what string
	}{{o.Whispers, "whispers"}, {o.Beeps, "beeps"}, {o.PrivateEntered, "private sessions opened"},
		{o.PrivateChats, "private chats"}, {o.PrivateExited, "private sessions closed"}, {o.Other, "other packets"}} {
		if c.n > 0 {
			line += fmt.Sprintf(", %d %s", c.n, c.what)
		}
	}
	return line
}

// fanoutLine is the broadcasts' fan-out: to the first and the last
// receiver, and the spread between them ("" when not measured); short, the
// p99s only.
func fanoutLine(d *results.Document, full bool) string {
	first, last, spread := d.Latency[results.LatencyFanoutFirst], d.Latency[results.LatencyFanoutLast], d.Latency[results.LatencyFanoutSpread]
	if first == nil || last == nil || spread == nil || first.Count == 0 {
		return ""
	}
	if !full {
		return fmt.Sprintf("p99: first %s, last %s, spread %s", fmtDur(first.P99), fmtDur(last.P99), fmtDur(spread.P99))
	}
	return fmt.Sprintf("first p50 %s, p99 %s; last p50 %s, p99 %s; spread p50 %s, p99 %s (%d broadcasts)",
		fmtDur(first.P50), fmtDur(first.P99), fmtDur(last.P50), fmtDur(last.P99), fmtDur(spread.P50), fmtDur(spread.P99), first.Count)
}

func percent(v float64) string {
	if v >= 10 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

// tcpLine is the kernel's TCP counters of a run in one line: segments
// (both sides on loopback), retransmissions, and the timers' work.
func tcpLine(t *results.TCPCounters, full bool) string {
	retrans := ""
	if pct, ok := t.RetransmittedPercent(); ok && t.Retransmitted > 0 {
		retrans = fmt.Sprintf(" (%.2f%%)", pct)
	}
	if !full {
		return fmt.Sprintf("%d of %d segments resent%s, %d delayed ACKs", t.Retransmitted, t.SegmentsOut, retrans, t.DelayedACKs)
	}
	return fmt.Sprintf("%d segments out, %d retransmitted%s, %d delayed ACKs, %d loss probes (whole network namespace)",
		t.SegmentsOut, t.Retransmitted, retrans, t.DelayedACKs, t.LossProbes)
}

func percentiles(h *results.Histogram) string {
	return fmt.Sprintf("p50 %s, p90 %s, p99 %s, p99.9 %s, max %s",
		fmtDur(h.P50), fmtDur(h.P90), fmtDur(h.P99), fmtDur(h.P999), fmtDur(h.Max))
}

// percentilesShort is percentiles without the p90, to fit 80 columns.
func percentilesShort(h *results.Histogram) string {
	return fmt.Sprintf("p50 %s, p99 %s, p99.9 %s, max %s", fmtDur(h.P50), fmtDur(h.P99), fmtDur(h.P999), fmtDur(h.Max))
}

func fmtDur(ns int64) string { return results.FormatNanos(ns) }

func micros(us float64) string {
	if us <= 0 {
		return "- µs"
	}
	return fmt.Sprintf("%.2f µs", us)
}

func mib(b int64) string {
	if b <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
}

// Summary writes the steps of a campaign under the run rule: each run's
// result and CPU per message, and each turn-taking step's score.
func Summary(w io.Writer, steps []campaign.Step) { summary(w, steps, true) }

// SummaryShort is Summary as load prints it by default, within 80 columns
// for ordinary values.
func SummaryShort(w io.Writer, steps []campaign.Step) { summary(w, steps, false) }

func summary(w io.Writer, steps []campaign.Step, full bool) {
	fmt.Fprintln(w, "Summary")
	for _, s := range steps {
		fmt.Fprintf(w, "Rooms %d%s (%d connections):\n", s.Rooms, cpusNote(s.CPUs), s.Rooms*usersOf(s))
		for _, d := range s.Docs {
			status := fmt.Sprintf("%d messages per second", d.Score)
			if !full {
				status = fmt.Sprintf("%d msg/s", d.Score)
			}
			switch {
			case d.Interrupted:
				status = "interrupted"
			case !d.Passed:
				status = "failed"
				if len(d.Failures) > 0 {
					status += " (" + d.Failures[0].Kind + ")"
				}
			case d.Churn != nil:
				status = fmt.Sprintf("%.1f sequences per second", d.Churn.SequencesPerSecond)
			case d.Paced != nil:
				status = fmt.Sprintf("%d users, in %.1f/s, out %.1f/s", d.Paced.ConcurrentUsers, d.Paced.InPerSecond, d.Paced.OutPerSecond)
				if h := d.Latency[results.LatencyDeliveryScheduled]; h != nil && h.Count > 0 {
					status += ", p99 " + fmtDur(h.P99)
				}
				if d.Server != nil && full {
					status += fmt.Sprintf(", server CPU %s", cpuShare(d.Server.CPUPercent, serverMachineCPUs(d)))
				} else if d.Server != nil {
					status += fmt.Sprintf(", server CPU %.0f%%", d.Server.CPUPercent)
				}
				if d.Paced.Broken {
					status += ", broken: " + d.Paced.Reason
				}
			case d.Score == 0 && full:
				status = "no score (under 1 second)"
			case d.Score == 0:
				status = "no score (under 1 s)"
			}
			if d.Discarded {
				status += " (discarded)"
			}
			if rt := d.Retry; rt != nil && rt.Attempt > 1 {
				status += fmt.Sprintf(" (try %d)", rt.Attempt)
			}
			extra := ""
			if !full && d.Server != nil && d.Server.CPUPerMessageMicros > 0 {
				extra = fmt.Sprintf("; CPU/msg: server %.2f, client %s", d.Server.CPUPerMessageMicros, micros(d.Client.CPUPerMessageMicros))
			} else if d.Server != nil && d.Server.CPUPerMessageMicros > 0 {
				extra = fmt.Sprintf("; server %s, client %s per message", micros(d.Server.CPUPerMessageMicros), micros(d.Client.CPUPerMessageMicros))
			} else if d.Client.CPUPerMessageMicros > 0 {
				extra = fmt.Sprintf("; client %s per message", micros(d.Client.CPUPerMessageMicros))
			}
			fmt.Fprintf(w, "  run %d: %s%s\n", d.Run, status, extra)
		}
		if len(s.Docs) == 0 || !s.Docs[0].IsTurns() {
			continue
		}
		switch t := s.Tally; {
		case t.HasScore():
			unit := "messages per second"
			if !full {
				unit = "msg/s"
			}
			fmt.Fprintf(w, "  score (%s) = %d %s, median %.0f\n", ruleWords(s), t.Score, unit, t.Median)
		case t.NoScore:
			fmt.Fprintf(w, "  score = ---- (too few counted runs lasted a second: raise -count)\n")
		default:
			fmt.Fprintf(w, "  score = ---- (too few runs passed)\n")
		}
	}
}

// ruleWords says how the step's score was made, from its tally: of how many
// counted runs the best were averaged, and the runs after those, which the
// rule leaves out (-runs past the discard and three).
func ruleWords(s campaign.Step) string {
	t := s.Tally
	words := fmt.Sprintf("best %d of %d", min(results.DefaultRunRule.Best, len(t.Scores)), t.Counted)
	if t.Counted == 1 {
		words = "1 counted run"
	}
	kept := 0
	for _, d := range s.Docs {
		if !d.Discarded {
			kept++
		}
	}
	if left := kept - t.Counted; left > 0 {
		words += fmt.Sprintf("; the last %d not counted", left)
	}
	return words
}

func usersOf(s campaign.Step) int {
	if len(s.Docs) == 0 {
		return 0
	}
	return s.Docs[0].Config.Users
}

// writeChurnLines is Mark's result lines for the churn scenario, in
// sequences.
func writeChurnLines(w io.Writer, d *results.Document, ms int64, full bool) {
	pct, cold := percentiles, " (each user's first: cold)"
	if !full {
		pct, cold = percentilesShort, " (cold)"
	}
	c := d.Churn
	fmt.Fprintf(w, "VolanoMark version = %s\n", results.MarkVersion)
	fmt.Fprintf(w, "Sequences          = %d (connect, Access, EnterRoom, chat, ExitRoom, close)\n", c.Sequences)
	fmt.Fprintf(w, "Messages sent      = %d\n", d.Counts.Sent)
	fmt.Fprintf(w, "Messages received  = %d\n", d.Counts.Received)
	if ms < 1 {
		fmt.Fprintf(w, "Elapsed time       < 1 millisecond\n")
	} else {
		fmt.Fprintf(w, "Elapsed time       = %s seconds\n", results.FormatMarkSeconds(ms))
		fmt.Fprintf(w, "Average rate       = %.1f sequences per second\n", c.SequencesPerSecond)
	}
	if h := c.First; h != nil && h.Count > 0 {
		fmt.Fprintf(w, "First sequence     = %s%s\n", pct(h), cold)
	}
	if h := d.Latency[results.LatencySequence]; h != nil && h.Count > 0 {
		fmt.Fprintf(w, "Later sequences    = %s (warm)\n", pct(h))
	}
}

// leakLine says what a churn or storm run left behind on the server.
func leakLine(d *results.Document, l results.Leaks, full bool) string {
	if d.Server == nil {
		return "unknown (no server metrics: --server-metrics or --serve)"
	}
	s := fmt.Sprintf("%d connections, %+d goroutines, %+d descriptors left behind", l.LeakedConnections, l.LeakedGoroutines, l.LeakedFDs)
	if !l.Any() && !full {
		return fmt.Sprintf("no leak (%d connections, %+d goroutines, %+d descriptors)", l.LeakedConnections, l.LeakedGoroutines, l.LeakedFDs)
	}
	if !l.Any() {
		s += " (no leak)"
	}
	return s
}

// stormLine is a storm in one line: who dropped, came back and chatted
// again, how long it took, what it cost.
func stormLine(d *results.Document) string {
	st := d.Storm
	s := fmt.Sprintf("%d of %d users dropped at %.2f s, %d back", st.Dropped, st.Users, st.AtSeconds, st.Reconnected)
	if h := d.Latency[results.LatencyReconnect]; h != nil && h.Count > 0 {
		s += fmt.Sprintf(" (reconnect p50 %s, p99 %s, max %s)", fmtDur(h.P50), fmtDur(h.P99), fmtDur(h.Max))
	}
	if st.RecoverySeconds > 0 {
		s += fmt.Sprintf(", every room chatting again after %s", fmtDur(int64(st.RecoverySeconds*1e9)))
	} else {
		s += fmt.Sprintf(", %d of them chatting again", st.Recovered)
	}
	return s + fmt.Sprintf("; %d attempts, %d chats not sent while away", st.Attempts, st.MissedSends)
}

// cpuShare is a CPU percentage (100 = one processor) and, on a machine of
// several, its share of the machine.
func cpuShare(pct float64, cpus int) string {
	if cpus > 1 {
		return fmt.Sprintf("%.0f%% of one processor, %.0f%% of the machine's %d", pct, pct/float64(cpus), cpus)
	}
	return fmt.Sprintf("%.0f%% of one processor", pct)
}

// serverMachineCPUs is the processor count of the server's machine when
// the client started the server (the same machine), else 0 (unknown).
func serverMachineCPUs(d *results.Document) int {
	if len(d.Config.ServerCommand) == 0 {
		return 0
	}
	return d.Environment.CPUs
}
