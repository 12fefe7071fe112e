package report

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volanogo/volanogo/internal/results"
)

// svgLabel is the box a <text> of a rendered chart takes, estimated from
// its position, anchor and length (font-size 12px; a character of a sans
// serif font is at most 0.62 em wide on average, digits 0.56).
type svgLabel struct {
	text                   string
	left, right, top, base float64
}

func (l svgLabel) String() string {
	return fmt.Sprintf("%q [%.0f–%.0f × %.0f–%.0f]", l.text, l.left, l.right, l.top, l.base)
}

func (l svgLabel) overlaps(o svgLabel) bool {
	return l.left < o.right && o.left < l.right && l.top < o.base && o.top < l.base
}

var (
	svgRe  = regexp.MustCompile(`(?s)<svg[^>]*viewBox="0 0 ([\d.]+) ([\d.]+)".*?</svg>`)
	textRe = regexp.MustCompile(`<text([^>]*)>([^<]*)</text>`)
	attrRe = regexp.MustCompile(`([a-z-]+)="([^"]*)"`)
)

// chartLabels returns, for every chart of an HTML report, its size and the
// boxes of its labels (rotated labels left out).
func chartLabels(t *testing.T, html string) (sizes [][2]float64, charts [][]svgLabel) {
	t.Helper()
	for _, m := range svgRe.FindAllStringSubmatch(html, -1) {
		w, _ := strconv.ParseFloat(m[1], 64)
		h, _ := strconv.ParseFloat(m[2], 64)
		sizes = append(sizes, [2]float64{w, h})
		var labels []svgLabel
		for _, tm := range textRe.FindAllStringSubmatch(m[0], -1) {
			attrs := map[string]string{}
			for _, a := range attrRe.FindAllStringSubmatch(tm[1], -1) {
				attrs[a[1]] = a[2]
			}
			if attrs["transform"] != "" {
				continue
			}
			num := func(k string) float64 {
				v, _ := strconv.ParseFloat(attrs[k], 64)
				return v
			}
			text := strings.NewReplacer("&#34;", `"`, "&#39;", "'", "&amp;", "&", "&lt;", "<", "&gt;", ">").Replace(tm[2])
			const size = 12.0
			em := 0.62
			if attrs["font-weight"] != "" {
				em = 0.66
			}
			wd := float64(utf8.RuneCountInString(text)) * size * em
			x, base := num("x")+num("dx"), num("y")+num("dy")
			l := svgLabel{text: text, top: base - size*0.8, base: base + size*0.2}
			switch attrs["text-anchor"] {
			case "end":
				l.left, l.right = x-wd, x
			case "middle":
				l.left, l.right = x-wd/2, x+wd/2
			default:
				l.left, l.right = x, x+wd
			}
			labels = append(labels, l)
		}
		charts = append(charts, labels)
	}
	return sizes, charts
}

// checkLabels asserts that no two labels of a chart overlap and that every
// label lies inside the chart.
func checkLabels(t *testing.T, name, html string) {
	t.Helper()
	sizes, charts := chartLabels(t, html)
	require.NotEmpty(t, charts, name)
	for i, labels := range charts {
		w, h := sizes[i][0], sizes[i][1]
		for j, a := range labels {
			assert.True(t, a.left >= 0 && a.right <= w && a.top >= 0 && a.base <= h,
				"%s, chart %d (%.0f×%.0f): %v is outside the chart", name, i+1, w, h, a)
			for _, b := range labels[j+1:] {
				assert.False(t, a.overlaps(b), "%s, chart %d: %v overlaps %v", name, i+1, a, b)
			}
		}
	}
}

// TestChartLabelsDoNotOverlap: the labels of every chart (axis ticks,
// bar values, legends, failure letters) neither collide nor leave the
// chart, with the fixtures' long labels and many platforms.
func TestChartLabelsDoNotOverlap(t *testing.T) {
	docs := readFixtures(t, goodDirs...)
	for _, by := range []string{ByLabel, ByServer, ByCPUs} {
		o := DefaultOptions()
		o.By = by
		r, err := Build(docs, o)
		require.NoError(t, err)
		checkLabels(t, "by "+by, string(render(t, r, "html")))
	}
}

// TestChartLabelsDoNotOverlapCrowded: the cases that made labels collide:
// a bar as long as the axis with a long value, steps close together with
// long numbers, several platforms failing (or without a score) at the same
// step, more series than the plot is tall, long platform names.
func TestChartLabelsDoNotOverlapCrowded(t *testing.T) {
	var docs []*results.Document
	steps := []int{10000, 10200, 10400, 20000, 40000, 40200}
	for p := 0; p < 14; p++ {
		label := fmt.Sprintf("platform %02d with a label far too long for any chart", p)
		for _, conns := range steps {
			for run := 1; run <= 4; run++ {
				score := int64(100000 - p*1000 - conns/1000)
				kind := ""
				if conns >= 40000 && p%2 == 0 {
					score, kind = 0, results.FailOpenFiles
				}
				docs = append(docs, doc(label, conns, run, score, kind))
			}
		}
	}
	// The top score exactly on the axis's end: its bar spans the plot.
	for run := 1; run <= 4; run++ {
		d := doc("top", 10000, run, 100000, "")
		d.Failures = []results.Failure{{Kind: results.FailReset, Count: 1, Example: "x"}}
		docs = append(docs, d)
	}
	r, err := Build(docs, DefaultOptions())
	require.NoError(t, err)
	checkLabels(t, "crowded", string(render(t, r, "html")))
}

// TestHTMLIsResponsive: charts scale to the page's width (a viewBox, no
// fixed width or height, never wider than drawn), and every table scrolls
// sideways in a container of its own instead of widening the page on a
// phone. Before, charts were a fixed 800 pixels and tables overflowed.
func TestHTMLIsResponsive(t *testing.T) {
	r, err := Build(readFixtures(t, goodDirs...), DefaultOptions())
	require.NoError(t, err)
	html := string(render(t, r, "html"))
	assert.Contains(t, html, `<meta name="viewport" content="width=device-width, initial-scale=1">`)
	assert.Regexp(t, `svg \{[^}]*width: 100%; height: auto;`, html)
	assert.Regexp(t, `div\.scroll \{[^}]*overflow-x: auto;`, html)
	assert.Contains(t, html, "@media (max-width: 600px)")
	svgs := regexp.MustCompile(`<svg[^>]*>`).FindAllString(html, -1)
	require.NotEmpty(t, svgs)
	for _, s := range svgs {
		assert.Regexp(t, `^<svg viewBox="0 0 [\d.]+ [\d.]+" style="max-width: [\d.]+px; min-width: \d+px"`, s)
		assert.NotRegexp(t, ` (width|height)=`, s, "a fixed size does not scale")
	}
	tables := strings.Count(html, "<table")
	require.Positive(t, tables)
	assert.Equal(t, tables, strings.Count(html, `<div class="scroll"><table>`), "every table in a scrolling container")
	assert.Equal(t, tables, strings.Count(html, `</table></div>`))
}

// TestThousandsSeparators: figures in text, markdown and HTML are grouped
// by thousands (before, "141200").
func TestThousandsSeparators(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 7: "7", 999: "999", 1000: "1,000", 141200: "141,200",
		1234567: "1,234,567", -1500: "-1,500", -999: "-999"} {
		assert.Equal(t, want, group(n), "%d", n)
	}
	assert.Equal(t, "1,898.5", fmtMedian(&Cell{Score: 1899, Median: 1898.5}))
	assert.Equal(t, "141,200", fmtMedian(&Cell{Score: 141200, Median: 141200}))
	assert.Equal(t, "12,346", fmtRate(12345.6))
	c := &Cell{Score: 141200, Notes: []string{"a"}, ClientBound: true}
	assert.Equal(t, "141,200a*", c.Text())
	assert.Equal(t, "141200a*", c.RawText(), "CSV keeps plain numbers")
	assert.Equal(t, "≥ 2,100", Limit{Connections: 2100, Ended: "passed"}.Text())
	assert.Equal(t, "10,500 connections", stepName(KindTurns, 10500))
}
