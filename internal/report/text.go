package report

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// textWidth is the width text output fits in.
const textWidth = 80

// table is a grid of cells with a header row; the first Keep columns are
// repeated when the table is split to fit textWidth.
type table struct {
	head []string
	rows [][]string
	left map[int]bool // left-aligned columns (others align right)
	keep int
}

func width(s string) int { return utf8.RuneCountInString(s) }

func pad(s string, n int, left bool) string {
	if d := n - width(s); d > 0 {
		if left {
			return s + strings.Repeat(" ", d)
		}
		return strings.Repeat(" ", d) + s
	}
	return s
}

// width is the width of t printed in one block.
func (t *table) width() int {
	w := 0
	for i, h := range t.head {
		cw := width(h)
		for _, r := range t.rows {
			if i < len(r) {
				cw = max(cw, width(r[i]))
			}
		}
		if i > 0 {
			w += 2
		}
		w += cw
	}
	return w
}

// write prints t, split into several blocks of columns when it is wider
// than textWidth.
func (t *table) write(w io.Writer) {
	n := len(t.head)
	ws := make([]int, n)
	for i, h := range t.head {
		ws[i] = width(h)
	}
	for _, r := range t.rows {
		for i := 0; i < n && i < len(r); i++ {
			ws[i] = max(ws[i], width(r[i]))
		}
	}
	// Repeat fewer columns when the kept ones and the widest other would
	// not fit (long platform names): they go in the first block only.
	keep := t.keep
	for ; keep > 1; keep-- {
		w := -2
		for i := 0; i < keep; i++ {
			w += 2 + ws[i]
		}
		if w+2+slices.Max(append([]int{0}, ws[keep:]...)) <= textWidth {
			break
		}
	}
	keepW := -2 // the kept columns and the separators after them
	for i := 0; i < keep; i++ {
		keepW += 2 + ws[i]
	}
	var blocks [][]int
	var cur []int
	curW := keepW
	for i := keep; i < n; i++ {
		if len(cur) > 0 && curW+2+ws[i] > textWidth {
			blocks = append(blocks, cur)
			cur, curW = nil, keepW
		}
		cur = append(cur, i)
		curW += 2 + ws[i]
	}
	if len(cur) > 0 || len(blocks) == 0 {
		blocks = append(blocks, cur)
	}
	for bi, blk := range blocks {
		if bi > 0 {
			fmt.Fprintln(w)
		}
		cols := make([]int, 0, keep+len(blk))
		for i := 0; i < keep; i++ {
			cols = append(cols, i)
		}
		cols = append(cols, blk...)
		line := func(cells []string) {
			var b strings.Builder
			for j, c := range cols {
				s := ""
				if c < len(cells) {
					s = cells[c]
				}
				if j > 0 {
					b.WriteString("  ")
				}
				b.WriteString(pad(s, ws[c], t.left[c]))
			}
			fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
		}
		line(t.head)
		rule := make([]string, n)
		for i := range rule {
			rule[i] = strings.Repeat("-", ws[i])
		}
		line(rule)
		for _, r := range t.rows {
			line(r)
		}
	}
}

// wrap breaks s into lines of at most width runes after indent, at
// spaces; a word longer than a line stays whole.
func wrap(s string, indent, first int) []string {
	var lines []string
	limit := textWidth - first
	var cur strings.Builder
	for _, word := range strings.Fields(s) {
		if cur.Len() > 0 && width(cur.String())+1+width(word) > limit {
			lines = append(lines, cur.String())
			cur.Reset()
			limit = textWidth - indent
		}
		if cur.Len() > 0 {
			cur.WriteByte(' ')
		}
		cur.WriteString(word)
	}
	if cur.Len() > 0 || len(lines) == 0 {
		lines = append(lines, cur.String())
	}
	return lines
}

// para prints s wrapped at textWidth with a hanging indent.
func para(w io.Writer, prefix, s string) {
	ind := strings.Repeat(" ", width(prefix))
	for i, l := range wrap(s, width(prefix), width(prefix)) {
		if i == 0 {
			fmt.Fprintln(w, prefix+l)
		} else {
			fmt.Fprintln(w, ind+l)
		}
	}
}

func heading(w io.Writer, s string) {
	fmt.Fprintln(w)
	fmt.Fprintln(w, s)
	fmt.Fprintln(w, strings.Repeat("=", width(s)))
}

// bar is a text bar of v out of top in n cells.
func bar(v, top int64, n int) string {
	if top <= 0 || v <= 0 {
		return ""
	}
	k := int(math.Round(float64(v) / float64(top) * float64(n)))
	return strings.Repeat("#", min(max(k, 1), n))
}

func (r *Report) renderText(w io.Writer) error {
	fmt.Fprintln(w, "VOLANOGO REPORT")
	para(w, "", fmt.Sprintf("%s %s from %s.", r.ruleText(), plural(len(r.Platforms), "platform"),
		plural(r.Documents, "result document")))

	if t := r.Fast; t != nil {
		heading(w, "Is it fast? ("+stepName(KindTurns, t.Connections)+")")
		para(w, "", fastIntro)
		fmt.Fprintln(w)
		var top int64
		for _, row := range t.Rows {
			top = max(top, row.Cell.Score)
		}
		tb := &table{head: []string{"Platform", "Results", "Score", "Median", "Spread"},
			left: map[int]bool{0: true, 1: true, 5: true}, keep: 1}
		for _, row := range t.Rows {
			c := row.Cell
			med := fmtMedian(c)
			tb.rows = append(tb.rows, []string{row.Platform, c.ResultsText(), c.Text(), med, c.SpreadText()})
		}
		// A bar in what is left of the line, if enough is.
		if n := min(24, textWidth-tb.width()-2); n >= 8 {
			tb.head = append(tb.head, "")
			for i, row := range t.Rows {
				tb.rows[i] = append(tb.rows[i], bar(row.Cell.Score, top, n))
			}
		}
		tb.write(w)
	}

	if t := r.Scale; t != nil {
		heading(w, "Does it scale?")
		para(w, "", scaleIntro)
		fmt.Fprintln(w)
		tb := &table{head: []string{"Platform"}, left: map[int]bool{0: true}, keep: 1}
		for _, c := range t.Columns {
			tb.head = append(tb.head, group(c))
		}
		tb.head = append(tb.head, "Limit")
		for _, row := range t.Rows {
			cells := []string{row.Platform}
			for _, c := range row.Cells {
				cells = append(cells, c.Text())
			}
			cells = append(cells, row.Limit.Text())
			tb.rows = append(tb.rows, cells)
		}
		tb.write(w)
	}

	if t := r.Search; t != nil {
		heading(w, "Find limit")
		para(w, "", searchIntro)
		for _, sr := range t.Rows {
			fmt.Fprintln(w)
			para(w, "", searchHeadline(sr))
			fmt.Fprintln(w)
			tb := &table{head: searchColumns, left: map[int]bool{5: true}, keep: 1}
			for _, p := range sr.Probes {
				tb.rows = append(tb.rows, searchCells(sr, p))
			}
			tb.write(w)
		}
	}

	if t := r.Processors; t != nil {
		heading(w, "Processor scalability")
		para(w, "", procIntro)
		fmt.Fprintln(w)
		tb := &table{head: []string{"Platform", "Connections"}, left: map[int]bool{0: true}, keep: 2}
		for _, n := range t.Columns {
			tb.head = append(tb.head, plural(n, "CPU"))
		}
		for _, row := range t.Rows {
			cells := []string{row.Platform, group(row.Connections)}
			for _, pc := range row.Cells {
				cells = append(cells, pc.Text())
			}
			tb.rows = append(tb.rows, cells)
		}
		tb.write(w)
	}

	if t := r.Capacity; t != nil {
		heading(w, "Capacity (paced)")
		para(w, "", capIntro)
		for _, cr := range t.Rows {
			fmt.Fprintln(w)
			para(w, "", capacityHeadline(cr))
			fmt.Fprintln(w)
			tb := &table{head: []string{"Users", "Pause", "In msg/s", "Out msg/s", "Server CPU", "p99", "Outcome"},
				left: map[int]bool{6: true}, keep: 1}
			for _, s := range cr.Steps {
				tb.rows = append(tb.rows, []string{group(s.Users), fmtPause(s.PauseSeconds),
					fmtRate(s.InPerSecond), fmtRate(s.OutPerSecond), fmtCPU(s.ServerCPUPercent), fmtNanos(s.P99),
					outcome(s)})
			}
			tb.write(w)
		}
	}

	if t := r.Churn; t != nil {
		heading(w, "Churn")
		para(w, "", churnIntro)
		for _, cr := range t.Rows {
			fmt.Fprintln(w)
			para(w, "", churnHeadline(cr))
			fmt.Fprintln(w)
			tb := &table{head: churnColumns, left: map[int]bool{8: true, 9: true}, keep: 1}
			for _, s := range cr.Steps {
				tb.rows = append(tb.rows, churnCells(s))
			}
			tb.write(w)
		}
	}

	if t := r.Storm; t != nil {
		heading(w, "Reconnect storm")
		para(w, "", stormIntro)
		for _, sr := range t.Rows {
			fmt.Fprintln(w)
			para(w, "", stormHeadline(sr))
			fmt.Fprintln(w)
			tb := &table{head: stormColumns, left: map[int]bool{9: true, 10: true}, keep: 1}
			for _, s := range sr.Steps {
				tb.rows = append(tb.rows, stormCells(s))
			}
			tb.write(w)
		}
	}

	if t := r.Latency; t != nil {
		heading(w, "Latency")
		para(w, "", latIntro)
		fmt.Fprintln(w)
		tb := &table{head: []string{"Platform", "Step", "Messages", "p50", "p99", "p99.9", "max"},
			left: map[int]bool{0: true, 1: true}, keep: 2}
		for _, row := range t.Rows {
			tb.rows = append(tb.rows, []string{row.Platform, stepCell(row.Kind, row.Step), group(row.Count),
				fmtNanos(row.P50), fmtNanos(row.P99), fmtNanos(row.P999), fmtNanos(row.Max)})
		}
		tb.write(w)
		latencySubTable(w, fanoutIntro, fanoutColumns, t.fanoutRows(), fanoutCells)
		latencySubTable(w, pauseIntro, pauseColumns, t.pauseRows(), pauseCells)
	}

	if t := r.Cost; t != nil {
		heading(w, "What does a message cost?")
		para(w, "", costIntroOf(t))
		fmt.Fprintln(w)
		tb := &table{head: costColumnsOf(t), left: map[int]bool{0: true, 1: true}, keep: 2}
		for _, row := range t.Rows {
			tb.rows = append(tb.rows, costCells(t, row))
		}
		tb.write(w)
	}

	if t := r.Engines; t != nil {
		heading(w, "Which engine?")
		para(w, "", engineIntroOf(t))
		fmt.Fprintln(w)
		cols := engineColumns(t)
		tb := &table{head: cols, left: map[int]bool{}, keep: 3}
		for i := range cols {
			tb.left[i] = !engineNumeric(t, i)
		}
		for _, row := range t.Rows {
			tb.rows = append(tb.rows, engineCells(t, row))
		}
		tb.write(w)
	}

	if t := r.Compare; t != nil {
		heading(w, "Compare: "+t.A+" vs "+t.B)
		para(w, "", compareIntro(t))
		fmt.Fprintln(w)
		tb := &table{head: []string{"Step", "Metric", "A", "B", "B/A", "Delta", "", "n"},
			left: map[int]bool{0: true, 1: true, 6: true}, keep: 2}
		for _, row := range t.Rows {
			tb.rows = append(tb.rows, []string{stepCell(row.Kind, row.Step), row.Metric + " (" + row.Unit + ")",
				fmtCompare(row.A, row.Unit), fmtCompare(row.B, row.Unit), fmtRatio(row.Ratio), row.Delta,
				fmtP(row.P), strconv.Itoa(row.NA) + "+" + strconv.Itoa(row.NB)})
		}
		tb.write(w)
		for _, s := range t.Warnings {
			para(w, "Note: ", s+".")
		}
		if v := compareVerdict(t); v != "" {
			fmt.Fprintln(w)
			para(w, "", v)
		}
	}

	if len(r.Footnotes) > 0 || r.ClientBound {
		heading(w, "Notes")
		for _, f := range r.Footnotes {
			para(w, f.Letter+". ", f.Text+" At: "+strings.Join(f.Where, "; ")+".")
		}
		if r.ClientBound {
			para(w, "", clientNote)
		}
	}

	if len(r.Environments) > 0 {
		heading(w, "Environments")
		for _, e := range r.Environments {
			fmt.Fprintln(w)
			fmt.Fprintln(w, e.Platform)
			lines := envLines(e)
			lw := 11
			for _, kv := range lines {
				lw = max(lw, width(kv[0])+2)
			}
			for _, kv := range lines {
				para(w, "  "+pad(kv[0]+":", lw, true), kv[1])
			}
			for _, c := range e.ServerCommands {
				para(w, "  "+pad("Started:", lw, true), c)
			}
			for _, c := range e.CommandLines {
				para(w, "  "+pad("Command:", lw, true), c.Text())
			}
		}
	}
	if len(r.Warnings) > 0 {
		heading(w, "Warnings")
		for _, s := range r.Warnings {
			para(w, "- ", s)
		}
	}
	return nil
}

func outcome(s CapacityStep) string {
	o := "held"
	if s.Broken {
		o = "broke"
		if len(s.Notes) > 0 {
			o += " (" + strings.Join(s.Notes, ", ") + ")"
		}
		if s.Reason != "" {
			o += ": " + s.Reason
		}
	}
	if s.ClientBound {
		o += " *"
	}
	return o
}

// latencySubTable writes one of the tables that follow the latency table
// (fan-out, GC pauses), with its introduction, when it has rows.
func latencySubTable(w io.Writer, intro string, head []string, rows []LatencyRow, cells func(LatencyRow) []string) {
	if len(rows) == 0 {
		return
	}
	fmt.Fprintln(w)
	para(w, "", intro)
	fmt.Fprintln(w)
	tb := &table{head: head, left: map[int]bool{0: true, 1: true}, keep: 2}
	for _, row := range rows {
		tb.rows = append(tb.rows, cells(row))
	}
	tb.write(w)
}
