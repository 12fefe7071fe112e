package report

import (
	"cmp"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

//go:embed report.html.tmpl
var htmlSource string

var htmlTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"nanos":          fmtNanos,
	"rate":           fmtRate,
	"cpu":            fmtCPU,
	"pause":          fmtPause,
	"pval":           fmtP,
	"ratio":          fmtRatio,
	"cmpv":           fmtCompare,
	"step":           stepCell,
	"plural":         plural,
	"outcome":        outcome,
	"headline":       capacityHeadline,
	"env":            envLines,
	"envHTML":        envHTML,
	"sideBySide":     sideBySide,
	"join":           strings.Join,
	"churnHeadline":  churnHeadline,
	"churnCells":     churnCells,
	"costCells":      costCells,
	"engineCells":    engineCells,
	"engineNumeric":  engineNumeric,
	"stormHeadline":  stormHeadline,
	"stormCells":     stormCells,
	"fanoutCells":    fanoutCells,
	"pauseCells":     pauseCells,
	"searchCells":    searchCells,
	"searchHeadline": searchHeadline,
	"median":         fmtMedian,
	"group":          group,
	"minWidth":       minWidth,
	"f1":             func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) },
}).Parse(htmlSource))

// palette colours the series of the charts.
// palette colours the series of the charts: Okabe and Ito's eight colours,
// told apart with every common colour-vision deficiency (their yellow,
// too faint on white, gives way to a grey).
var palette = []string{"#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#000000", "#7f7f7f"}

// Chart text is drawn at chartFont in the chart's own units; a chart is
// never shown narrower than makes that minChartFont pixels: on a narrow
// screen it scrolls in its box instead.
const (
	chartFont    = 12.0
	minChartFont = 11.0
)

// minWidth is the narrowest a chart drawn w wide may be shown.
func minWidth(w float64) string {
	return strconv.FormatFloat(math.Ceil(w*minChartFont/chartFont), 'f', 0, 64)
}

type svgTick struct {
	Pos   float64
	Label string
}

type svgBar struct {
	Label, Value, Title string
	Y, W, ValueX        float64
	// Inside puts the value inside the end of its bar (white, anchored
	// at its end) when it would pass the chart's right edge.
	Inside bool
	Failed bool
	// NoScore: no bar, the cell's text in grey (runs under one second).
	NoScore bool
}

// barChart is the horizontal bar chart of "Is it fast?".
type barChart struct {
	Width, Height, Left, PlotW, BarH float64
	// AxisY is the bottom of the bars' axis, where the ticks' labels sit;
	// XLabel, the axis's title, goes under them.
	AxisY  float64
	XLabel string
	Bars   []svgBar
	Ticks  []svgTick
}

func (c *barChart) Right() float64 { return c.Left + c.PlotW }

type svgDot struct {
	X, Y  float64
	Title string
	// Anchor is the text-anchor of Label ("end" or "start").
	Anchor string
	// LabelY is where Label's line is (its baseline is 8 above it).
	LabelY float64
	// Label is printed beside a failure mark (its footnote letters).
	Label string
}

type svgSeries struct {
	Name, Color string
	// Lines are polylines ("x,y x,y …"), broken where a step is missing.
	Lines []string
	Dots  []svgDot
	Fails []svgDot
	// Hollow are steps with runs but no score (open circles on the axis).
	Hollow []svgDot
	// LegendX and LegendY place the series' legend entry (see
	// layoutLegend).
	LegendX, LegendY float64
	// Dash is the stroke-dasharray of the lines, if any.
	Dash string
}

// lineChart is a line chart with linear x and linear or log y.
type lineChart struct {
	Title                                  string
	Width, Height, Left, Top, PlotW, PlotH float64
	XTicks, YTicks                         []svgTick
	XLabel, YLabel                         string
	Series                                 []svgSeries
	// Keys explain the marks other than the series' lines and dots.
	Keys []svgKey
}

// svgKey is one entry of a chart's key: a mark ("fail", "hollow" or
// "dash") and what it means.
type svgKey struct {
	Mark, Text string
	X, Y       float64
}

func (c *lineChart) Bottom() float64 { return c.Top + c.PlotH }

// Legends go under a chart, in two columns, so that the chart is no
// wider than its plot and scales down to a phone's width legibly.
const (
	legendRow  = 20
	legendCols = 2
)

// layoutLegend places the legend entries of series in rows of two under
// top, between left and left+width, shortening the names to fit their
// column, and returns the y under the last row.
func layoutLegend(series []*svgSeries, left, width, top float64) float64 {
	colW := width / legendCols
	y := top
	for i, s := range series {
		s.LegendX = left + float64(i%legendCols)*colW
		s.LegendY = top + float64(i/legendCols)*legendRow
		s.Name = fitLabel(s.Name, colW-28)
		y = s.LegendY
	}
	return y + 10
}

// fitLegend lays the chart's legend out under its x axis and makes the
// chart tall enough for it.
func (c *lineChart) fitLegend() *lineChart {
	if c == nil {
		return nil
	}
	ps := make([]*svgSeries, len(c.Series))
	for i := range c.Series {
		ps[i] = &c.Series[i]
	}
	c.Height = layoutLegend(ps, c.Left, c.PlotW, c.Bottom()+60)
	var fail, hollow, dash bool
	for _, s := range c.Series {
		fail = fail || len(s.Fails) > 0
		hollow = hollow || len(s.Hollow) > 0
		dash = dash || s.Dash != ""
	}
	key := func(on bool, mark, text string) {
		if on {
			c.Keys = append(c.Keys, svgKey{Mark: mark, Text: text, X: c.Left, Y: c.Height + 10})
			c.Height += legendRow
		}
	}
	key(fail, "fail", "failed: no score (the letters: its notes)")
	key(hollow, "hollow", "runs under a second: no score")
	key(dash, "dash", "dashed: fan-out, a broadcast's send to its last receiver")
	return c
}
func (c *lineChart) Right() float64 { return c.Left + c.PlotW }

// niceCeil rounds v up to 1, 2 or 5 × a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

func linTicks(top float64, n int) []float64 {
	var ts []float64
	for i := 0; i <= n; i++ {
		ts = append(ts, top*float64(i)/float64(n))
	}
	return ts
}

func (r *Report) fastChart() *barChart {
	t := r.Fast
	if t == nil {
		return nil
	}
	var top int64
	for _, row := range t.Rows {
		top = max(top, row.Cell.Score)
	}
	scale := niceCeil(float64(top))
	// The labels' column is as wide as the longest name needs (at most
	// 190), so that the chart is no wider than it must be.
	left := 60.0
	for _, row := range t.Rows {
		left = max(left, labelWidth(row.Platform)+14)
	}
	left = min(left, 190)
	c := &barChart{Left: left, PlotW: 420, BarH: 22}
	c.Width = c.Left + c.PlotW + 70
	for i, row := range t.Rows {
		b := svgBar{Label: fitLabel(row.Platform, c.Left-12), Value: row.Cell.Text(), Y: 10 + float64(i)*(c.BarH+8), Failed: row.Cell.Failed, NoScore: row.Cell.NoScore,
			Title: row.Platform + ": " + row.Cell.ResultsText()}
		if row.Cell.HasScore() {
			b.W = c.PlotW * float64(row.Cell.Score) / scale
		}
		b.ValueX = c.Left + b.W + 6
		if b.ValueX+labelWidth(b.Value) > c.Width-4 {
			b.Inside, b.ValueX = true, c.Left+b.W-6
		}
		c.Bars = append(c.Bars, b)
	}
	c.AxisY = 10 + float64(len(t.Rows))*(c.BarH+8) + 26
	c.Height, c.XLabel = c.AxisY+20, "messages per second"
	for _, v := range linTicks(scale, 5) {
		c.Ticks = append(c.Ticks, svgTick{Pos: c.Left + c.PlotW*v/scale, Label: group(int64(math.Round(v)))})
	}
	return c
}

func newLineChart(title, xl, yl string) *lineChart {
	return &lineChart{Title: title, Width: 590, Height: 340, Left: 70, Top: 20, PlotW: 470, PlotH: 260,
		XLabel: xl, YLabel: yl}
}

func (r *Report) scaleChart() *lineChart {
	t := r.Scale
	if t == nil || len(t.Columns) < 2 {
		return nil
	}
	c := newLineChart("Score against connections", "connections", "messages per second")
	x0, x1 := float64(t.Columns[0]), float64(t.Columns[len(t.Columns)-1])
	var top int64
	for _, row := range t.Rows {
		for _, cell := range row.Cells {
			top = max(top, cell.Score)
		}
	}
	ymax := niceCeil(float64(top))
	xp := func(x float64) float64 { return c.Left + c.PlotW*(x-x0)/(x1-x0) }
	yp := func(y float64) float64 { return c.Top + c.PlotH*(1-y/ymax) }
	for _, col := range t.Columns {
		c.XTicks = append(c.XTicks, svgTick{Pos: xp(float64(col)), Label: group(col)})
	}
	c.XTicks = spaceXTicks(c.XTicks)
	for _, v := range linTicks(ymax, 5) {
		c.YTicks = append(c.YTicks, svgTick{Pos: yp(v), Label: group(int64(math.Round(v)))})
	}
	// Letters beside marks at the same place stack upwards, a line each.
	type box struct{ l, r, y float64 }
	var placed []box
	letterY := func(x float64, label string) float64 {
		l, r := x+8, x+8+labelWidth(label)
		y := yp(0)
		for again := true; again; {
			again = false
			for _, p := range placed {
				if l < p.r+2 && p.l < r+2 && math.Abs(p.y-y) < 14 {
					y, again = p.y-14, true
				}
			}
		}
		placed = append(placed, box{l, r, y})
		return y
	}
	for i, row := range t.Rows {
		s := svgSeries{Name: row.Platform, Color: palette[i%len(palette)]}
		var line []string
		flush := func() {
			if len(line) > 1 {
				s.Lines = append(s.Lines, strings.Join(line, " "))
			}
			line = nil
		}
		for _, cell := range row.Cells {
			x := xp(float64(cell.Step))
			switch {
			case cell.Missing && cell.AfterFailure:
				flush()
			case cell.Missing:
				// No run at this step: the line goes on to the next.
			case cell.NoScore:
				// Runs, but no score (under one second): a hollow mark on
				// the axis with its letters, never a point at 0.
				flush()
				s.Hollow = append(s.Hollow, svgDot{X: x, Y: yp(0), LabelY: letterY(x, strings.Join(cell.Notes, "")), Label: strings.Join(cell.Notes, ""),
					Title: row.Platform + " at " + stepName(KindTurns, cell.Step) + ": " + cell.Text() + " (no score)"})
			case cell.Failed:
				flush()
				s.Fails = append(s.Fails, svgDot{X: x, Y: yp(0), LabelY: letterY(x, strings.Join(cell.Notes, "")), Label: strings.Join(cell.Notes, ""),
					Title: row.Platform + " at " + stepName(KindTurns, cell.Step) + ": " + cell.Text()})
			default:
				y := yp(float64(cell.Score))
				line = append(line, fmt.Sprintf("%.1f,%.1f", x, y))
				s.Dots = append(s.Dots, svgDot{X: x, Y: y, Title: row.Platform + " at " + stepName(KindTurns, cell.Step) + ": " + cell.Text()})
			}
		}
		flush()
		c.Series = append(c.Series, s)
	}
	return c
}

// latencyChart plots the percentiles of each platform at one step on a
// logarithmic axis: the "Is it fast?" step, else each platform's first.
func (r *Report) latencyChart() *lineChart {
	t := r.Latency
	if t == nil {
		return nil
	}
	var rows []LatencyRow
	seen := map[string]bool{}
	for _, row := range t.Rows {
		if r.Fast != nil && (row.Kind != KindTurns || row.Step != r.Fast.Connections) {
			continue
		}
		if !seen[row.Platform] {
			seen[row.Platform] = true
			rows = append(rows, row)
		}
	}
	if r.Fast != nil && len(rows) == 0 {
		for _, row := range t.Rows {
			if !seen[row.Platform] {
				seen[row.Platform] = true
				rows = append(rows, row)
			}
		}
	}
	if len(rows) == 0 {
		return nil
	}
	title := "Delivery latency percentiles"
	if r.Fast != nil && rows[0].Kind == KindTurns && rows[0].Step == r.Fast.Connections {
		title += " at " + stepName(KindTurns, r.Fast.Connections)
	}
	c := newLineChart(title, "percentile", "latency (log scale)")
	// Beside each platform's delivery latency, dashed, its fan-out to the
	// last receiver of a broadcast, when the runs have it.
	type line struct {
		name, title string
		vs          [4]int64
		dash        bool
		color       int
	}
	var lines []line
	for i, row := range rows {
		name := row.Platform
		if r.Fast == nil || row.Step != r.Fast.Connections {
			name += " (" + stepName(row.Kind, row.Step) + ")"
		}
		lines = append(lines, line{name: name, title: row.Platform, vs: [4]int64{row.P50, row.P99, row.P999, row.Max}, color: i})
		if f := row.FanoutLast; f != nil {
			lines = append(lines, line{name: ellipsis(row.Platform, 16) + " fan-out last", title: row.Platform + " fan-out last",
				vs: [4]int64{f.P50, f.P99, f.P999, f.Max}, dash: true, color: i})
		}
	}
	lo, hi := math.MaxFloat64, 1.0
	for _, l := range lines {
		for _, v := range l.vs {
			if v > 0 {
				lo, hi = math.Min(lo, float64(v)), math.Max(hi, float64(v))
			}
		}
	}
	if lo > hi {
		lo = 1
	}
	d0, d1 := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if d1 <= d0 {
		d1 = d0 + 1
	}
	yp := func(v float64) float64 {
		return c.Top + c.PlotH*(1-(math.Log10(math.Max(v, 1))-d0)/(d1-d0))
	}
	names := []string{"p50", "p99", "p99.9", "max"}
	xp := func(i int) float64 { return c.Left + c.PlotW*float64(i)/float64(len(names)-1) }
	for i, n := range names {
		c.XTicks = append(c.XTicks, svgTick{Pos: xp(i), Label: n})
	}
	c.YTicks = logTicks(d0, d1, yp)
	for _, l := range lines {
		s := svgSeries{Name: l.name, Color: palette[l.color%len(palette)]}
		if l.dash {
			s.Dash = "6 4"
		}
		var pts []string
		for j, v := range l.vs {
			if v <= 0 {
				continue
			}
			x, y := xp(j), yp(float64(v))
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x, y))
			s.Dots = append(s.Dots, svgDot{X: x, Y: y, Title: l.title + " " + names[j] + ": " + fmtNanos(v)})
		}
		if len(pts) > 1 {
			s.Lines = append(s.Lines, strings.Join(pts, " "))
		}
		c.Series = append(c.Series, s)
	}
	return c
}

// p99Chart plots each platform's p99 delivery latency against the
// connection count of the turn-taking steps, on a logarithmic axis.
func (r *Report) p99Chart() *lineChart {
	if r.Latency == nil || r.Scale == nil {
		return nil
	}
	byRow := map[string][]LatencyRow{}
	lo, hi := math.MaxFloat64, 1.0
	for _, row := range r.Latency.Rows {
		if row.Kind != KindTurns || row.P99 <= 0 {
			continue
		}
		byRow[row.Platform] = append(byRow[row.Platform], row)
		lo, hi = math.Min(lo, float64(row.P99)), math.Max(hi, float64(row.P99))
	}
	if len(byRow) == 0 {
		return nil
	}
	cols := r.Scale.Columns
	x0, x1 := float64(cols[0]), float64(cols[len(cols)-1])
	c := newLineChart("p99 delivery latency against connections", "connections", "p99 latency (log scale)")
	d0, d1 := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if d1 <= d0 {
		d1 = d0 + 1
	}
	xp := func(x float64) float64 { return c.Left + c.PlotW*(x-x0)/(x1-x0) }
	yp := func(v float64) float64 { return c.Top + c.PlotH*(1-(math.Log10(math.Max(v, 1))-d0)/(d1-d0)) }
	c.XTicks = r.scaleChart().XTicks
	c.YTicks = logTicks(d0, d1, yp)
	for i, name := range r.Platforms {
		rows := byRow[name]
		if len(rows) == 0 {
			continue
		}
		s := svgSeries{Name: name, Color: palette[i%len(palette)]}
		var pts []string
		for _, row := range rows {
			x, y := xp(float64(row.Step)), yp(float64(row.P99))
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x, y))
			s.Dots = append(s.Dots, svgDot{X: x, Y: y, Title: name + " at " + stepName(KindTurns, row.Step) + ": p99 " + fmtNanos(row.P99)})
		}
		if len(pts) > 1 {
			s.Lines = append(s.Lines, strings.Join(pts, " "))
		}
		c.Series = append(c.Series, s)
	}
	return c
}

// capPanel is one panel of a capacity chart: its own y axis over the
// shared x axis of concurrent users.
type capPanel struct {
	Top, PlotH float64
	YTicks     []svgTick
	YLabel     string
	Series     []svgSeries
	// Limit is a horizontal dashed line (the SLO), if any.
	Limit *svgTick
}

func (p *capPanel) Bottom() float64 { return p.Top + p.PlotH }

// capChart is the capacity chart of one platform's paced sweep: messages
// in and out per second, server CPU and p99 latency against concurrent
// users, in three panels over one x axis, with the broken step marked.
type capChart struct {
	Title                      string
	Width, Height, Left, PlotW float64
	XLabelY                    float64
	XTicks                     []svgTick
	XLabel                     string
	Panels                     []*capPanel
	Broken                     *svgDot
	BrokenTop, BrokenBottom    float64
}

func (c *capChart) Right() float64  { return c.Left + c.PlotW }
func (c *capChart) Bottom() float64 { return c.Panels[len(c.Panels)-1].Bottom() }

// fmtCount prints an axis value of messages per second: 500, 2k, 10k, 1M.
func fmtCount(v float64) string {
	switch {
	case v >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', -1, 64) + "M"
	case v >= 1e3:
		return strconv.FormatFloat(v/1e3, 'f', -1, 64) + "k"
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// logRange is the decades [d0, d1] spanning the positive values.
func logRange(vs []float64) (d0, d1 float64, ok bool) {
	lo, hi := math.MaxFloat64, 0.0
	for _, v := range vs {
		if v > 0 {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	if hi == 0 {
		return 0, 0, false
	}
	d0, d1 = math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if d1 <= d0 {
		d1 = d0 + 1
	}
	return d0, d1, true
}

// capacityCharts draws one chart per platform whose paced sweep has two
// steps or more.
func (r *Report) capacityCharts() map[string]*capChart {
	if r.Capacity == nil {
		return nil
	}
	out := map[string]*capChart{}
	for _, cr := range r.Capacity.Rows {
		if c := capacityChart(cr); c != nil {
			out[cr.Platform] = c
		}
	}
	return out
}

func capacityChart(cr CapacityRow) *capChart {
	if len(cr.Steps) < 2 {
		return nil
	}
	c := &capChart{Title: cr.Platform + ": capacity against concurrent users", Width: 590, Left: 70, PlotW: 470,
		XLabel: "concurrent users"}
	steps := cr.Steps
	x0, x1 := float64(steps[0].Users), float64(steps[len(steps)-1].Users)
	xp := func(x float64) float64 { return c.Left + c.PlotW*(x-x0)/(x1-x0) }
	for _, s := range steps {
		c.XTicks = append(c.XTicks, svgTick{Pos: xp(float64(s.Users)), Label: group(s.Users)})
	}
	c.XTicks = spaceXTicks(c.XTicks)
	at := func(s CapacityStep) string {
		return cr.Platform + " at " + stepName(cmp.Or(cr.Kind, KindPaced), s.Users) + ": "
	}
	series := func(name, color string, legendY float64, pts []float64, yp func(float64) float64, title func(CapacityStep, float64) string) svgSeries {
		sr := svgSeries{Name: name, Color: color}
		var line []string
		for i, v := range pts {
			if v < 0 || (v == 0 && math.IsInf(yp(0), 0)) {
				continue
			}
			x, y := xp(float64(steps[i].Users)), yp(v)
			line = append(line, fmt.Sprintf("%.1f,%.1f", x, y))
			sr.Dots = append(sr.Dots, svgDot{X: x, Y: y, Title: title(steps[i], v)})
		}
		if len(line) > 1 {
			sr.Lines = append(sr.Lines, strings.Join(line, " "))
		}
		return sr
	}
	top := 28.0
	// Messages in and out per second, log scale: out is users × in for
	// a room of users, too far apart for one linear axis.
	var in, outs []float64
	for _, s := range steps {
		in, outs = append(in, s.InPerSecond), append(outs, s.OutPerSecond)
	}
	if d0, d1, ok := logRange(append(slices.Clone(in), outs...)); ok {
		p := &capPanel{Top: top, PlotH: 130, YLabel: "msg/s (log scale)"}
		yp := func(v float64) float64 {
			if v <= 0 {
				return math.Inf(1)
			}
			return p.Top + p.PlotH*(1-(math.Log10(v)-d0)/(d1-d0))
		}
		p.YTicks = logTicksFmt(d0, d1, yp, fmtCount)
		p.Series = append(p.Series,
			series("in msg/s", palette[0], p.Top+10, in, yp, func(s CapacityStep, v float64) string { return at(s) + "in " + fmtRate(v) + " msg/s" }),
			series("out msg/s", palette[1], p.Top+30, outs, yp, func(s CapacityStep, v float64) string { return at(s) + "out " + fmtRate(v) + " msg/s" }))
		c.Panels = append(c.Panels, p)
		top = p.Bottom() + 26
	}
	// Server CPU, linear, 100% = one processor.
	var cpu []float64
	cpuTop := 100.0
	for _, s := range steps {
		cpu = append(cpu, s.ServerCPUPercent)
		cpuTop = math.Max(cpuTop, niceCeil(s.ServerCPUPercent))
	}
	if slices.ContainsFunc(cpu, func(v float64) bool { return v >= 0 }) {
		p := &capPanel{Top: top, PlotH: 90, YLabel: "server CPU"}
		yp := func(v float64) float64 { return p.Top + p.PlotH*(1-v/cpuTop) }
		for _, v := range linTicks(cpuTop, 2) {
			p.YTicks = append(p.YTicks, svgTick{Pos: yp(v), Label: strconv.FormatFloat(v, 'f', -1, 64) + "%"})
		}
		p.Series = append(p.Series, series("server CPU (100% = 1 CPU)", palette[2], p.Top+10, cpu, yp,
			func(s CapacityStep, v float64) string { return at(s) + "server CPU " + fmtCPU(v) }))
		c.Panels = append(c.Panels, p)
		top = p.Bottom() + 26
	}
	// p99 latency from the scheduled send, log scale, with the SLO.
	var p99 []float64
	for _, s := range steps {
		p99 = append(p99, float64(s.P99))
	}
	slo := cr.SLOSeconds * 1e9
	if d0, d1, ok := logRange(append(slices.Clone(p99), slo)); ok && slices.ContainsFunc(p99, func(v float64) bool { return v > 0 }) {
		p := &capPanel{Top: top, PlotH: 110, YLabel: "p99 (log scale)"}
		yp := func(v float64) float64 {
			if v <= 0 {
				return math.Inf(1)
			}
			return p.Top + p.PlotH*(1-(math.Log10(v)-d0)/(d1-d0))
		}
		p.YTicks = logTicks(d0, d1, yp)
		p.Series = append(p.Series, series("p99 latency", palette[3], p.Top+10, p99, yp,
			func(s CapacityStep, v float64) string { return at(s) + "p99 " + fmtNanos(int64(v)) }))
		if slo > 0 {
			p.Limit = &svgTick{Pos: yp(slo), Label: "SLO " + fmtNanos(int64(slo))}
		}
		c.Panels = append(c.Panels, p)
	}
	if len(c.Panels) == 0 {
		return nil
	}
	c.XLabelY = c.Bottom() + 36
	var ps []*svgSeries
	for _, p := range c.Panels {
		for i := range p.Series {
			ps = append(ps, &p.Series[i])
		}
	}
	c.Height = layoutLegend(ps, c.Left, c.PlotW, c.XLabelY+26)
	if cr.BrokeAt > 0 {
		for _, s := range steps {
			if s.Users == cr.BrokeAt {
				label := "broke at " + group(s.Users)
				if len(s.Notes) > 0 {
					label += " (" + strings.Join(s.Notes, ", ") + ")"
				}
				c.Broken = &svgDot{X: xp(float64(s.Users)), Y: c.Panels[0].Top - 8, Label: label, Anchor: "end",
					Title: at(s) + "broke" + func() string {
						if s.Reason != "" {
							return ": " + s.Reason
						}
						return ""
					}()}
			}
		}
		if b := c.Broken; b != nil && b.X-labelWidth(b.Label) < 4 {
			b.Anchor = "start"
		}
		c.BrokenTop, c.BrokenBottom = c.Panels[0].Top, c.Bottom()
	}
	return c
}

type htmlData struct {
	*Report
	Rule          string
	FastIntro     string
	ScaleIntro    string
	ClientNote    string
	LatIntro      string
	CostIntro     string
	CostColumns   []string
	EngineIntro   string
	EngineColumns []string
	CapIntro      string
	ProcIntro     string
	CompareIntro  string
	Verdict       string
	FastChart     *barChart
	ScaleChart    *lineChart
	LatChart      *lineChart
	P99Chart      *lineChart
	CapCharts     map[string]*capChart
	ChurnIntro    string
	ChurnColumns  []string
	StormIntro    string
	StormColumns  []string
	FanoutIntro   string
	FanoutCols    []string
	FanoutRows    []LatencyRow
	PauseIntro    string
	PauseCols     []string
	PauseRows     []LatencyRow
	SearchIntro   string
	SearchCols    []string
	Tools         []string
}

func (r *Report) renderHTML(w io.Writer) error {
	d := htmlData{Report: r, Rule: r.ruleText(), FastIntro: fastIntro, ScaleIntro: scaleIntro, ClientNote: clientNote,
		LatIntro: latIntro, CostIntro: costIntroOf(r.Cost), CostColumns: costColumnsOf(r.Cost), CapIntro: capIntro, ProcIntro: procIntro, ChurnIntro: churnIntro, ChurnColumns: churnColumns,
		CapCharts: r.capacityCharts(), StormIntro: stormIntro, StormColumns: stormColumns, FanoutIntro: fanoutIntro, FanoutCols: fanoutColumns,
		FastChart: r.fastChart(), ScaleChart: r.scaleChart().fitLegend(), LatChart: r.latencyChart().fitLegend(), P99Chart: r.p99Chart().fitLegend()}
	if r.Latency != nil {
		d.FanoutRows = r.Latency.fanoutRows()
		d.PauseRows = r.Latency.pauseRows()
	}
	d.PauseIntro, d.PauseCols, d.SearchIntro, d.SearchCols = pauseIntro, pauseColumns, searchIntro, searchColumns
	if r.Engines != nil {
		d.EngineIntro, d.EngineColumns = engineIntroOf(r.Engines), engineColumns(r.Engines)
	}
	if r.Compare != nil {
		d.CompareIntro = compareIntro(r.Compare)
		d.Verdict = compareVerdict(r.Compare)
	}
	for _, e := range r.Environments {
		for _, t := range e.Tools {
			d.Tools = appendNew(d.Tools, t)
		}
	}
	return htmlTemplate.Execute(w, d)
}

// charWidth is the widest average advance of a
// character of the fonts the charts ask for (Helvetica, Arial), with a
// margin, so that labels placed by labelWidth never touch.
const charWidth = chartFont * 0.62

// labelWidth is the width a chart label takes.
func labelWidth(s string) float64 { return float64(utf8.RuneCountInString(s)) * charWidth }

// fitLabel shortens s with an ellipsis to fit w pixels.
func fitLabel(s string, w float64) string { return ellipsis(s, max(int(w/charWidth), 4)) }

// spaceXTicks blanks the labels of x ticks that would touch a label
// shown (the ticks themselves stay). The last is always shown, the
// largest step being the one a reader looks for; then from the left.
func spaceXTicks(ts []svgTick) []svgTick {
	const gap = 8
	if len(ts) == 0 {
		return ts
	}
	box := func(i int) (float64, float64) {
		w := labelWidth(ts[i].Label)
		return ts[i].Pos - w/2, ts[i].Pos + w/2
	}
	n := len(ts) - 1
	lastL, _ := box(n)
	right := math.Inf(-1)
	for i := 0; i < n; i++ {
		l, r := box(i)
		if l >= right+gap && r+gap <= lastL {
			right = r
			continue
		}
		ts[i].Label = ""
	}
	return ts
}

// ellipsis shortens s to n runes for a chart label.
func ellipsis(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// logTicks are the ticks of a log axis from 10^d0 to 10^d1 (nanoseconds):
// every decade, and 2 and 5 times it when the axis spans two decades or
// less.
func logTicks(d0, d1 float64, yp func(float64) float64) []svgTick {
	return logTicksFmt(d0, d1, yp, func(v float64) string { return fmtNanos(int64(math.Round(v))) })
}

// logTicksFmt is logTicks with the labels printed by label.
func logTicksFmt(d0, d1 float64, yp func(float64) float64, label func(float64) string) []svgTick {
	var ts []svgTick
	for d := d0; d <= d1; d++ {
		for _, m := range []float64{1, 2, 5} {
			if m > 1 && (d == d1 || d1-d0 > 2) {
				continue
			}
			v := m * math.Pow(10, d)
			ts = append(ts, svgTick{Pos: yp(v), Label: label(v)})
		}
	}
	return ts
}

// envHTML are the pairs of an environment the page lists: after the
// table of both machines when the server said its own.
func envHTML(e Environment) [][2]string {
	if sideBySide(e) != nil {
		return envRest(e)
	}
	return envLines(e)
}
