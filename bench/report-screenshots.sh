#!/usr/bin/env bash
# Renders the HTML report of the report fixtures in headless Chromium at a
# phone's width (375 px) and a desktop's (1280 px) and measures, in the
# browser: that the page does not scroll sideways; the smallest text of
# the charts (each <text>'s font size times the chart's scale on screen)
# and of the page, which must be at least 11 px; and that every box whose
# content is wider than it (a clipped table or chart) is a div.scroll, whose
# shadow says that it scrolls. Screenshots go to $OUT (default a new
# temporary directory) for a person to look at.
#
#   bench/report-screenshots.sh [OUT]
#
# Needs chromium (apt-get install chromium); without it the script says so
# and exits 0, so that it can run anywhere. CI does not need it: the Go
# tests check the style sheet's order, the text sizes the charts' widths
# give at 375 px, and the scroll boxes (internal/report/phone_test.go).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v chromium >/dev/null 2>&1; then
	echo "report-screenshots: chromium not installed; skipped" >&2
	exit 0
fi
out=${1:-$(mktemp -d)}
mkdir -p "$out"
f=testdata/report
go run ./cmd/volanogo report -o "$out/report.html" \
	$f/scale $f/shards $f/cpus $f/paced $f/short $f/churn $f/integrity $f/storm
chrome() {
	chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$out/profile" "$@" 2>/dev/null
}
# Headless Chromium lays a page out at least 500 px wide whatever the
# window, so the report is shown in an iframe of the width wanted (srcdoc:
# same origin, so the wrapper can measure it) and the screenshot is cut to
# that width.
doc=$(sed -e 's/&/\&amp;/g' -e 's/"/\&quot;/g' "$out/report.html")
status=0
for w in 375 1280; do
	h=2400
	wrap="$out/wrap-$w.html"
	{
		echo '<!DOCTYPE html><html><head><title>-</title></head><body style="margin:0">'
		echo "<iframe id=\"f\" style=\"width:${w}px;height:${h}px;border:0;display:block\" srcdoc=\"$doc\"></iframe>"
		cat <<'JS'
<script>
f.onload = () => {
	const d = f.contentDocument, w = f.contentWindow;
	let chart = 1e9, text = 1e9, clipped = [], scrolls = 0;
	for (const t of d.querySelectorAll("svg text")) {
		const m = t.getScreenCTM(); // rotated labels too: the scale is the matrix's
		chart = Math.min(chart, parseFloat(w.getComputedStyle(t).fontSize) * Math.hypot(m.a, m.b));
	}
	for (const e of d.body.querySelectorAll("*")) {
		if (e.closest("svg")) continue;
		if ([...e.childNodes].some(n => n.nodeType === 3 && n.textContent.trim())) {
			text = Math.min(text, parseFloat(w.getComputedStyle(e).fontSize));
		}
		if (e.scrollWidth > e.clientWidth + 1 && w.getComputedStyle(e).overflowX !== "visible") {
			if (e.matches("div.scroll")) scrolls++;
			else clipped.push(e.tagName.toLowerCase() + "." + e.className);
		}
	}
	document.title = d.documentElement.scrollWidth + "/" + w.innerWidth + " " + chart.toFixed(1) + " " + text.toFixed(1) + " " + (clipped.join(",") || "none") + " " + scrolls;
};
</script>
JS
		echo '</body></html>'
	} >"$wrap"
	chrome --window-size=$w,$h --screenshot="$out/report-$w.png" "file://$wrap"
	# The title: page/viewport widths, the smallest chart text and page
	# text in px, the clipped boxes that are not scroll boxes, the scroll
	# boxes that scroll (at a desktop's width, none may).
	m=$(chrome --window-size=$w,$h --virtual-time-budget=3000 --dump-dom "file://$wrap" |
		sed -n 's#.*<title>\([0-9]*/[0-9]* [0-9.]* [0-9.]* [^<]*\)</title>.*#\1#p')
	read -r dims chart text clipped scrolls <<<"${m:-unknown 0 0 unknown 0}"
	echo "width $w: page/viewport $dims, smallest chart text ${chart} px, page text ${text} px, clipped without a scroll cue: $clipped, scrolling boxes: $scrolls; screenshot $out/report-$w.png"
	if [ "$dims" = unknown ] || [ "${dims%/*}" != "${dims#*/}" ]; then
		echo "report-screenshots: at $w px the page is wider than its viewport ($dims)" >&2
		status=1
	fi
	if ! awk -v c="$chart" -v t="$text" 'BEGIN { exit !(c >= 11 && t >= 11) }'; then
		echo "report-screenshots: at $w px text under 11 px (charts $chart, page $text)" >&2
		status=1
	fi
	if [ "$w" -ge 1000 ] && [ "$scrolls" != 0 ]; then
		echo "report-screenshots: at $w px $scrolls boxes scroll: a table or chart is wider than the page" >&2
		status=1
	fi
	if [ "$clipped" != none ]; then
		echo "report-screenshots: at $w px clipped without a scroll cue: $clipped" >&2
		status=1
	fi
done
rm -rf "$out/profile" "$out"/wrap-*.html
exit $status
