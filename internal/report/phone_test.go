package report

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cssRule is one rule of the report's style sheet: its selectors, its
// declarations (property → value), its place and the media query it sits
// in ("" for none).
type cssRule struct {
	selectors []string
	decls     map[string]string
	media     string
	index     int
}

// parseCSS reads the report's <style> block: plain rules and one level of
// @media, which is all the report uses. Comments are dropped.
func parseCSS(t *testing.T, html string) []cssRule {
	t.Helper()
	m := regexp.MustCompile(`(?s)<style>(.*?)</style>`).FindStringSubmatch(html)
	require.NotNil(t, m, "no <style> block")
	css := regexp.MustCompile(`(?s)/\*.*?\*/`).ReplaceAllString(m[1], "")
	var rules []cssRule
	media := ""
	for len(strings.TrimSpace(css)) > 0 {
		css = strings.TrimSpace(css)
		if strings.HasPrefix(css, "}") { // the end of an @media block
			media, css = "", css[1:]
			continue
		}
		open := strings.IndexByte(css, '{')
		require.Positive(t, open, "CSS: no block in %q", css)
		head := strings.TrimSpace(css[:open])
		if strings.HasPrefix(head, "@media") {
			media, css = head, css[open+1:]
			continue
		}
		end := strings.IndexByte(css, '}')
		require.Greater(t, end, open, "CSS: unclosed rule %q", head)
		r := cssRule{decls: map[string]string{}, media: media, index: len(rules)}
		for _, sel := range strings.Split(head, ",") {
			r.selectors = append(r.selectors, strings.Join(strings.Fields(sel), " "))
		}
		for _, d := range strings.Split(css[open+1:end], ";") {
			if k, v, ok := strings.Cut(d, ":"); ok {
				r.decls[strings.TrimSpace(k)] = strings.TrimSpace(v)
			}
		}
		rules = append(rules, r)
		css = css[end+1:]
	}
	return rules
}

func htmlReport(t *testing.T) string {
	t.Helper()
	r, err := Build(readFixtures(t, goodDirs...), DefaultOptions())
	require.NoError(t, err)
	return string(render(t, r, "html"))
}

// TestCSSMediaQueriesComeLast: a rule of a media query overrides the plain
// rule for the same selector and property only when it comes after it
// (equal specificity: the later wins). Before, the plain dl.env rule came
// after the phone's, so the Environments' phone layout never applied.
func TestCSSMediaQueriesComeLast(t *testing.T) {
	rules := parseCSS(t, htmlReport(t))
	var media int
	for _, q := range rules {
		if q.media == "" {
			continue
		}
		media++
		for _, sel := range q.selectors {
			for prop := range q.decls {
				for _, r := range rules {
					if r.media != "" || r.index < q.index || !slicesContains(r.selectors, sel) {
						continue
					}
					_, again := r.decls[prop]
					assert.False(t, again, "%s { %s } of %q is overridden by the plain rule after it", sel, prop, q.media)
				}
			}
		}
	}
	assert.Positive(t, media, "the phone's rules")
}

func slicesContains(ss []string, s string) bool {
	for _, v := range ss {
		if v == s {
			return true
		}
	}
	return false
}

// TestHTMLTextSizeOnAPhone: at a phone's width (375 px) no text of the
// report is under 11 px: the style sheet's sizes, and every chart's text,
// which scales with the chart. A chart is shown at its drawn width at
// most, at its min-width at least, else as wide as the page leaves; its
// text (the svg's font-size) is scaled by that width over its viewBox's.
// Before, 590-unit charts shrank to the phone's 351 px: 7 px text.
func TestHTMLTextSizeOnAPhone(t *testing.T) {
	html := htmlReport(t)
	rules := parseCSS(t, html)
	px := func(v string) float64 {
		f, err := strconv.ParseFloat(strings.TrimSuffix(v, "px"), 64)
		require.NoError(t, err, "font-size %q is not in px", v)
		return f
	}
	svgFont := 0.0
	for _, r := range rules {
		if v, ok := r.decls["font-size"]; ok {
			assert.GreaterOrEqual(t, px(v), 11.0, "%v { font-size: %s }", r.selectors, v)
			if slicesContains(r.selectors, "svg") {
				svgFont = px(v)
			}
		}
	}
	require.Equal(t, chartFont, svgFont, "the charts' text size")
	// The phone's page: 375 px less the body's padding at that width.
	var pad float64
	for _, r := range rules {
		if r.media == "@media (max-width: 600px)" && slicesContains(r.selectors, "body") {
			f := strings.Fields(r.decls["padding"])
			require.Len(t, f, 3, "body padding: top, sides, bottom")
			pad = 2 * px(f[1])
		}
	}
	require.Positive(t, pad)
	page := 375 - pad
	svgs := regexp.MustCompile(`<div class="scroll chart"><svg viewBox="0 0 ([\d.]+) [\d.]+" style="max-width: ([\d.]+)px; min-width: (\d+)px"`).FindAllStringSubmatch(html, -1)
	require.Len(t, svgs, strings.Count(html, "<svg"), "every chart in a scrolling box with a min-width")
	for _, m := range svgs {
		w, _ := strconv.ParseFloat(m[1], 64)
		maxW, _ := strconv.ParseFloat(m[2], 64)
		minW, _ := strconv.ParseFloat(m[3], 64)
		shown := max(minW, min(page, maxW))
		assert.GreaterOrEqual(t, svgFont*shown/w, minChartFont, "chart %s wide shown %.0f px wide", m[1], shown)
		// At a desktop's width the chart is shown as drawn.
		assert.Equal(t, w, max(minW, min(1000-64, maxW)))
	}
	// Text inside a chart never asks for a size of its own.
	assert.NotContains(t, html, `font-size="`)
}

// TestHTMLScrollCue: whatever scrolls sideways (tables, charts) sits in a
// box whose background shows a shadow on the side where more is hidden,
// and no cell paints an opaque background over it.
func TestHTMLScrollCue(t *testing.T) {
	rules := parseCSS(t, htmlReport(t))
	var cue bool
	for _, r := range rules {
		if slicesContains(r.selectors, "div.scroll") && r.media == "" {
			bg := r.decls["background"]
			cue = strings.Contains(bg, "local") && strings.Count(bg, "radial-gradient") == 2
		}
		for _, sel := range r.selectors {
			if bg, ok := r.decls["background"]; ok && regexp.MustCompile(`(^|\s)(td|th|tr)\b`).MatchString(sel) {
				assert.True(t, strings.HasPrefix(bg, "rgba(") || bg == "transparent", "%s { background: %s } hides the scroll cue", sel, bg)
			}
		}
	}
	assert.True(t, cue, "div.scroll has no scroll shadow")
}
