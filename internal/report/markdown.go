package report

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// mdEscape makes s safe inside a markdown table cell.
func mdEscape(s string) string {
	r := strings.NewReplacer("|", `\|`, "*", `\*`, "_", `\_`, "`", "\\`", "<", "&lt;", ">", "&gt;", "\n", " ")
	return r.Replace(s)
}

// mdCode is s as inline code (backticks chosen so that s can hold them).
func mdCode(s string) string {
	fence := "`"
	for strings.Contains(s, fence) {
		fence += "`"
	}
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		return fence + " " + s + " " + fence
	}
	return fence + s + fence
}

func mdTable(w io.Writer, head []string, right map[int]bool, rows [][]string) {
	fmt.Fprintln(w, "| "+strings.Join(head, " | ")+" |")
	seps := make([]string, len(head))
	for i := range seps {
		seps[i] = "---"
		if right[i] {
			seps[i] = "---:"
		}
	}
	fmt.Fprintln(w, "|"+strings.Join(seps, "|")+"|")
	for _, r := range rows {
		esc := make([]string, len(r))
		for i, c := range r {
			esc[i] = mdEscape(c)
		}
		fmt.Fprintln(w, "| "+strings.Join(esc, " | ")+" |")
	}
	fmt.Fprintln(w)
}

func (r *Report) renderMarkdown(w io.Writer) error {
	fmt.Fprintln(w, "# Volanogo report")
	fmt.Fprintln(w)
	fmt.Fprintf(w, "%s %s from %s.\n\n", r.ruleText(), plural(len(r.Platforms), "platform"), plural(r.Documents, "result document"))

	if t := r.Fast; t != nil {
		fmt.Fprintf(w, "## Is it fast? (%s)\n\n%s\n\n", stepName(KindTurns, t.Connections), fastIntro)
		var rows [][]string
		for _, row := range t.Rows {
			c := row.Cell
			med := fmtMedian(c)
			rows = append(rows, []string{row.Platform, row.OS, c.ResultsText(), c.Text(), med, c.SpreadText()})
		}
		mdTable(w, []string{"Platform", "Operating system", "Results", "Score", "Median", "Spread"},
			map[int]bool{3: true, 4: true, 5: true}, rows)
	}
	if t := r.Scale; t != nil {
		fmt.Fprintf(w, "## Does it scale?\n\n%s\n\n", scaleIntro)
		head := []string{"Platform"}
		right := map[int]bool{}
		for i, c := range t.Columns {
			head = append(head, group(c))
			right[i+1] = true
		}
		head = append(head, "Limit")
		right[len(head)-1] = true
		var rows [][]string
		for _, row := range t.Rows {
			cells := []string{row.Platform}
			for _, c := range row.Cells {
				cells = append(cells, c.Text())
			}
			rows = append(rows, append(cells, row.Limit.Text()))
		}
		mdTable(w, head, right, rows)
	}
	if t := r.Search; t != nil {
		fmt.Fprintf(w, "## Find limit\n\n%s\n\n", searchIntro)
		for _, sr := range t.Rows {
			fmt.Fprintf(w, "### %s\n\n", mdEscape(searchHeadline(sr)))
			var rows [][]string
			for _, p := range sr.Probes {
				cells := searchCells(sr, p)
				cells[5] = mdEscape(cells[5])
				rows = append(rows, cells)
			}
			mdTable(w, searchColumns, map[int]bool{0: true, 1: true, 2: true, 3: true, 4: true}, rows)
		}
	}
	if t := r.Processors; t != nil {
		fmt.Fprintf(w, "## Processor scalability\n\n%s\n\n", procIntro)
		head := []string{"Platform", "Connections"}
		right := map[int]bool{1: true}
		for _, n := range t.Columns {
			head = append(head, plural(n, "CPU"))
			right[len(head)-1] = true
		}
		var rows [][]string
		for _, row := range t.Rows {
			cells := []string{row.Platform, group(row.Connections)}
			for _, pc := range row.Cells {
				cells = append(cells, pc.Text())
			}
			rows = append(rows, cells)
		}
		mdTable(w, head, right, rows)
	}
	if t := r.Capacity; t != nil {
		fmt.Fprintf(w, "## Capacity (paced)\n\n%s\n\n", capIntro)
		for _, cr := range t.Rows {
			fmt.Fprintf(w, "### %s\n\n%s.\n\n", mdEscape(cr.Platform), mdEscape(capacityHeadline(cr)))
			var rows [][]string
			for _, s := range cr.Steps {
				rows = append(rows, []string{group(s.Users), fmtPause(s.PauseSeconds),
					fmtRate(s.InPerSecond), fmtRate(s.OutPerSecond), fmtCPU(s.ServerCPUPercent), fmtNanos(s.P99), outcome(s)})
			}
			mdTable(w, []string{"Users", "Pause", "In msg/s", "Out msg/s", "Server CPU", "p99", "Outcome"},
				map[int]bool{0: true, 1: true, 2: true, 3: true, 4: true, 5: true}, rows)
		}
	}
	if t := r.Churn; t != nil {
		fmt.Fprintf(w, "## Churn\n\n%s\n\n", churnIntro)
		for _, cr := range t.Rows {
			fmt.Fprintf(w, "### %s\n\n%s.\n\n", mdEscape(cr.Platform), mdEscape(churnHeadline(cr)))
			var rows [][]string
			for _, s := range cr.Steps {
				rows = append(rows, churnCells(s))
			}
			mdTable(w, churnColumns, map[int]bool{0: true, 1: true, 2: true, 3: true, 4: true, 5: true, 6: true, 7: true}, rows)
		}
	}
	if t := r.Storm; t != nil {
		fmt.Fprintf(w, "## Reconnect storm\n\n%s\n\n", stormIntro)
		for _, sr := range t.Rows {
			fmt.Fprintf(w, "### %s\n\n%s.\n\n", mdEscape(sr.Platform), mdEscape(stormHeadline(sr)))
			var rows [][]string
			for _, s := range sr.Steps {
				rows = append(rows, stormCells(s))
			}
			mdTable(w, stormColumns, map[int]bool{0: true, 1: true, 2: true, 3: true, 4: true, 5: true, 6: true, 7: true, 8: true}, rows)
		}
	}
	if t := r.Latency; t != nil {
		fmt.Fprintf(w, "## Latency\n\n%s\n\n", latIntro)
		var rows [][]string
		for _, row := range t.Rows {
			rows = append(rows, []string{row.Platform, stepCell(row.Kind, row.Step), group(row.Count),
				fmtNanos(row.P50), fmtNanos(row.P99), fmtNanos(row.P999), fmtNanos(row.Max)})
		}
		mdTable(w, []string{"Platform", "Step", "Messages", "p50", "p99", "p99.9", "max"},
			map[int]bool{2: true, 3: true, 4: true, 5: true, 6: true}, rows)
		if fr := t.fanoutRows(); len(fr) > 0 {
			fmt.Fprintf(w, "%s\n\n", fanoutIntro)
			var rows [][]string
			for _, row := range fr {
				rows = append(rows, fanoutCells(row))
			}
			mdTable(w, fanoutColumns, map[int]bool{2: true, 3: true, 4: true, 5: true, 6: true, 7: true, 8: true}, rows)
		}
		if pr := t.pauseRows(); len(pr) > 0 {
			fmt.Fprintf(w, "%s\n\n", pauseIntro)
			var rows [][]string
			for _, row := range pr {
				rows = append(rows, pauseCells(row))
			}
			mdTable(w, pauseColumns, map[int]bool{2: true, 3: true, 4: true, 5: true}, rows)
		}
	}
	if t := r.Cost; t != nil {
		fmt.Fprintf(w, "## What does a message cost?\n\n%s\n\n", costIntroOf(t))
		var rows [][]string
		for _, row := range t.Rows {
			rows = append(rows, costCells(t, row))
		}
		mdTable(w, costColumnsOf(t), map[int]bool{2: true, 3: true, 4: true, 5: true, 6: true}, rows)
	}
	if t := r.Engines; t != nil {
		fmt.Fprintf(w, "## Which engine?\n\n%s\n\n", engineIntroOf(t))
		var rows [][]string
		for _, row := range t.Rows {
			rows = append(rows, engineCells(t, row))
		}
		cols := engineColumns(t)
		right := map[int]bool{0: true}
		for i := range cols {
			right[i] = right[i] || engineNumeric(t, i)
		}
		mdTable(w, cols, right, rows)
	}
	if t := r.Compare; t != nil {
		fmt.Fprintf(w, "## Compare: %s vs %s\n\n%s\n\n", mdEscape(t.A), mdEscape(t.B), mdEscape(compareIntro(t)))
		var rows [][]string
		for _, row := range t.Rows {
			rows = append(rows, []string{stepCell(row.Kind, row.Step), row.Metric + " (" + row.Unit + ")",
				fmtCompare(row.A, row.Unit), fmtCompare(row.B, row.Unit), fmtRatio(row.Ratio), row.Delta, fmtP(row.P),
				strconv.Itoa(row.NA) + "+" + strconv.Itoa(row.NB)})
		}
		mdTable(w, []string{"Step", "Metric", "A", "B", "B/A", "Delta", "p", "n"},
			map[int]bool{2: true, 3: true, 4: true, 5: true}, rows)
		for _, s := range t.Warnings {
			fmt.Fprintf(w, "Note: %s.\n\n", mdEscape(s))
		}
		if v := compareVerdict(t); v != "" {
			fmt.Fprintf(w, "**%s**\n\n", mdEscape(v))
		}
	}
	if len(r.Footnotes) > 0 || r.ClientBound {
		fmt.Fprint(w, "## Notes\n\n")
		for _, f := range r.Footnotes {
			fmt.Fprintf(w, "- **%s.** %s At: %s.\n", f.Letter, mdEscape(f.Text), mdEscape(strings.Join(f.Where, "; ")))
		}
		if r.ClientBound {
			fmt.Fprintf(w, "- %s\n", mdEscape(clientNote))
		}
		fmt.Fprintln(w)
	}
	if len(r.Environments) > 0 {
		fmt.Fprint(w, "## Environments\n\n")
		for _, e := range r.Environments {
			fmt.Fprintf(w, "### %s\n\n", mdEscape(e.Platform))
			lines := envLines(e)
			if sbs := sideBySide(e); sbs != nil {
				var rows [][]string
				for _, f := range sbs {
					rows = append(rows, []string{f[0], mdEscape(f[1]), mdEscape(f[2])})
				}
				mdTable(w, []string{"", "Client", "Server"}, nil, rows)
				fmt.Fprintln(w)
				lines = envRest(e)
			}
			for _, kv := range lines {
				fmt.Fprintf(w, "- %s: %s\n", kv[0], mdEscape(kv[1]))
			}
			for _, c := range e.ServerCommands {
				fmt.Fprintf(w, "- Started: %s\n", mdCode(c))
			}
			for _, c := range e.CommandLines {
				if v := c.Values(); v != "" {
					fmt.Fprintf(w, "- Command: %s (%s)\n", mdCode(c.Command), mdEscape(v))
				} else {
					fmt.Fprintf(w, "- Command: %s\n", mdCode(c.Command))
				}
			}
			fmt.Fprintln(w)
		}
	}
	if len(r.Warnings) > 0 {
		fmt.Fprint(w, "## Warnings\n\n")
		for _, s := range r.Warnings {
			fmt.Fprintf(w, "- %s\n", mdEscape(s))
		}
		fmt.Fprintln(w)
	}
	return nil
}

// renderCSV writes one row per cell: table, platform, step, metric, value.
func (r *Report) renderCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	rec := func(table, platform string, step int64, metric, value string) {
		s := ""
		if step != 0 {
			s = strconv.FormatInt(step, 10)
		}
		_ = cw.Write([]string{csvCell(table), csvCell(platform), s, csvCell(metric), csvCell(value)})
	}
	i64 := func(v int64) string { return strconv.FormatInt(v, 10) }
	f64 := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	_ = cw.Write([]string{"table", "platform", "step", "metric", "value"})
	cell := func(table, platform string, c *Cell) {
		if c == nil || c.Missing {
			return
		}
		rec(table, platform, c.Step, "cell", c.RawText())
		if c.HasScore() {
			rec(table, platform, c.Step, "score", i64(c.Score))
			rec(table, platform, c.Step, "median", f64(c.Median))
			rec(table, platform, c.Step, "min", i64(c.Min))
			rec(table, platform, c.Step, "max", i64(c.Max))
		}
		for _, run := range c.Runs {
			v := i64(run.Score)
			if !run.Passed || run.NoScore {
				v = "----"
			}
			rec(table, platform, c.Step, "run "+strconv.Itoa(run.Run), v+strings.Join(run.Notes, ""))
		}
		if c.CPUs > 0 {
			rec(table, platform, c.Step, "cpus", strconv.Itoa(c.CPUs))
		}
	}
	if t := r.Fast; t != nil {
		for _, row := range t.Rows {
			cell("fast", row.Platform, row.Cell)
		}
	}
	if t := r.Scale; t != nil {
		for _, row := range t.Rows {
			for _, c := range row.Cells {
				cell("scale", row.Platform, c)
			}
			rec("scale", row.Platform, 0, "limit", i64(row.Limit.Connections))
			rec("scale", row.Platform, 0, "limit ended", row.Limit.Ended+strings.Join(row.Limit.Notes, ""))
		}
	}
	if t := r.Search; t != nil {
		for _, sr := range t.Rows {
			for _, p := range sr.Probes {
				tb := "search " + sr.Kind
				rec(tb, sr.Platform, p.Step, "try", i64(int64(p.Probe)))
				rec(tb, sr.Platform, p.Step, "rooms", i64(int64(p.Rooms)))
				if p.Carried != nil {
					rec(tb, sr.Platform, p.Step, "carried", i64(*p.Carried))
				}
				rec(tb, sr.Platform, p.Step, "p99 ns", i64(p.P99))
				rec(tb, sr.Platform, p.Step, "outcome", searchCells(sr, p)[5])
			}
			rec("search "+sr.Kind, sr.Platform, 0, "held", i64(sr.Held))
			rec("search "+sr.Kind, sr.Platform, 0, "broke", i64(sr.Broke))
		}
	}
	if t := r.Processors; t != nil {
		for _, row := range t.Rows {
			for _, pc := range row.Cells {
				if pc == nil {
					continue
				}
				m := plural(pc.CPUs, "CPU")
				rec("processors", row.Platform, row.Connections, m+" score", pc.Cell.RawText())
				if pc.GainPercent != nil {
					rec("processors", row.Platform, row.Connections, m+" gain %", strconv.FormatFloat(*pc.GainPercent, 'f', 1, 64))
				}
			}
		}
	}
	if t := r.Capacity; t != nil {
		for _, cr := range t.Rows {
			for _, s := range cr.Steps {
				p := cr.Platform
				rec("capacity", p, s.Users, "pause s", f64(s.PauseSeconds))
				rec("capacity", p, s.Users, "in msg/s", f64(s.InPerSecond))
				rec("capacity", p, s.Users, "out msg/s", f64(s.OutPerSecond))
				if s.ServerCPUPercent >= 0 {
					rec("capacity", p, s.Users, "server cpu %", f64(s.ServerCPUPercent))
				}
				if s.P99 > 0 {
					rec("capacity", p, s.Users, "p99 ns", i64(s.P99))
				}
				rec("capacity", p, s.Users, "outcome", outcome(s))
			}
			rec("capacity", cr.Platform, 0, "held users", i64(cr.Held))
			if cr.BrokeAt > 0 {
				rec("capacity", cr.Platform, 0, "broke at users", i64(cr.BrokeAt))
			}
		}
	}
	if t := r.Churn; t != nil {
		for _, cr := range t.Rows {
			for _, s := range cr.Steps {
				p := cr.Platform
				rec("churn", p, s.Users, "sequences", i64(s.Sequences))
				rec("churn", p, s.Users, "sequences/s", f64(s.SequencesPerSecond))
				for _, st := range []struct {
					name string
					t    *SequenceTimes
				}{{"cold", s.Cold}, {"warm", s.Warm}} {
					if st.t != nil {
						rec("churn", p, s.Users, st.name+" p50 ns", i64(st.t.P50))
						rec("churn", p, s.Users, st.name+" p99 ns", i64(st.t.P99))
					}
				}
				if x := s.ColdWarm(); x > 0 {
					rec("churn", p, s.Users, "cold/warm p50", strconv.FormatFloat(x, 'f', 2, 64))
				}
				for _, l := range []struct {
					name string
					v    *int64
				}{{"leaked connections", s.LeakedConnections}, {"leaked goroutines", s.LeakedGoroutines}, {"leaked fds", s.LeakedFDs}} {
					if l.v != nil {
						rec("churn", p, s.Users, l.name, i64(*l.v))
					}
				}
				rec("churn", p, s.Users, "outcome", churnOutcome(s))
			}
		}
	}
	if t := r.Storm; t != nil {
		for _, sr := range t.Rows {
			for _, s := range sr.Steps {
				p := sr.Platform
				rec("storm", p, s.Users, "dropped", i64(s.Dropped))
				rec("storm", p, s.Users, "reconnected", i64(s.Reconnected))
				rec("storm", p, s.Users, "recovered", i64(s.Recovered))
				rec("storm", p, s.Users, "attempts", i64(s.Attempts))
				if s.RecoverySeconds != nil {
					rec("storm", p, s.Users, "recovery s", f64(*s.RecoverySeconds))
				}
				rec("storm", p, s.Users, "runs never recovered", strconv.Itoa(s.NeverRecovered))
				if s.Reconnect != nil {
					rec("storm", p, s.Users, "reconnect p50 ns", i64(s.Reconnect.P50))
					rec("storm", p, s.Users, "reconnect p99 ns", i64(s.Reconnect.P99))
				}
				rec("storm", p, s.Users, "lost", i64(s.Lost))
				rec("storm", p, s.Users, "missed sends", i64(s.MissedSends))
				for _, l := range []struct {
					name string
					v    *int64
				}{{"leaked connections", s.LeakedConnections}, {"leaked goroutines", s.LeakedGoroutines}, {"leaked fds", s.LeakedFDs}} {
					if l.v != nil {
						rec("storm", p, s.Users, l.name, i64(*l.v))
					}
				}
				rec("storm", p, s.Users, "outcome", stepOutcome(s.Failed, s.Notes))
			}
		}
	}
	if t := r.Latency; t != nil {
		for _, row := range t.Rows {
			tb := "latency " + row.Kind
			rec(tb, row.Platform, row.Step, "messages", i64(row.Count))
			rec(tb, row.Platform, row.Step, "p50 ns", i64(row.P50))
			rec(tb, row.Platform, row.Step, "p99 ns", i64(row.P99))
			rec(tb, row.Platform, row.Step, "p99.9 ns", i64(row.P999))
			rec(tb, row.Platform, row.Step, "max ns", i64(row.Max))
			for _, f := range []struct {
				name string
				t    *Times
			}{{"fanout first", row.FanoutFirst}, {"fanout last", row.FanoutLast}, {"fanout spread", row.FanoutSpread}} {
				if f.t != nil {
					rec(tb, row.Platform, row.Step, f.name+" p50 ns", i64(f.t.P50))
					rec(tb, row.Platform, row.Step, f.name+" p99 ns", i64(f.t.P99))
				}
			}
			if g := row.GC; g != nil {
				rec(tb, row.Platform, row.Step, "gc pauses", i64(g.Pauses))
				rec(tb, row.Platform, row.Step, "gc pause p99 ns", i64(g.P99))
				rec(tb, row.Platform, row.Step, "gc pause max ns", i64(g.Max))
			}
		}
	}
	if t := r.Cost; t != nil {
		for _, row := range t.Rows {
			tb := "cost " + row.Kind
			for _, m := range []struct {
				name string
				v    *float64
			}{{"server cpu/msg us", row.ServerMicros}, {"client cpu/msg us", row.ClientMicros},
				{"delayed acks/msg", row.DelayedACKsPerMessage}, {"retransmitted %", row.RetransmittedPercent},
				{"efficiency server", row.EfficiencyServer}, {"efficiency client", row.EfficiencyClient}} {
				if m.v != nil {
					rec(tb, row.Platform, row.Step, m.name, f64(*m.v))
				}
			}
		}
	}
	if t := r.Engines; t != nil {
		for _, row := range t.Rows {
			rec("engines", row.Platform, row.Step, "server engine", row.Server)
			rec("engines", row.Platform, row.Step, "client engine", row.Client)
			rec("engines", row.Platform, row.Step, "score", row.Cell.RawText())
			for _, m := range []struct {
				name string
				v    *float64
			}{{"msg/s", row.Throughput}, {"server cpu/msg us", row.ServerMicros}, {"client cpu/msg us", row.ClientMicros},
				{"efficiency server", row.EfficiencyServer}, {"efficiency client", row.EfficiencyClient},
				{"server memory/conn bytes", row.MemoryPerConnection}} {
				if m.v != nil {
					rec("engines", row.Platform, row.Step, m.name, f64(*m.v))
				}
			}
		}
	}
	if t := r.Compare; t != nil {
		for _, row := range t.Rows {
			m := row.Metric + " " + row.Unit
			rec("compare", t.A, row.Step, m, f64(row.A))
			rec("compare", t.B, row.Step, m, f64(row.B))
			rec("compare", t.B+" / "+t.A, row.Step, m+" ratio", f64(row.Ratio))
			rec("compare", t.B+" vs "+t.A, row.Step, m+" delta", row.Delta)
			rec("compare", t.B+" vs "+t.A, row.Step, m+" p", f64(row.P))
			if row.Powerless {
				rec("compare", t.B+" vs "+t.A, row.Step, m+" min p", f64(row.MinP))
			}
			if row.Regression {
				rec("compare", t.B+" vs "+t.A, row.Step, m+" regression", "true")
			}
		}
	}
	for _, f := range r.Footnotes {
		rec("notes", "", 0, f.Letter, f.Text)
	}
	cw.Flush()
	return cw.Error()
}
