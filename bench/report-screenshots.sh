#!/usr/bin/env bash
# Renders the HTML report of the report fixtures in headless Chromium at a
# phone's width (375 px) and a desktop's (1280 px), and checks that the page
# does not scroll sideways at either (every table scrolls in its own box,
# charts scale to the width). Screenshots go to $OUT (default a new
# temporary directory) for a person to look at.
#
#   bench/report-screenshots.sh [OUT]
#
# Needs chromium (apt-get install chromium); without it the script says so
# and exits 0, so that it can run anywhere. CI does not need it: the Go
# tests check the structure (internal/report/labels_test.go).
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
		echo '<script>f.onload = () => { document.title = f.contentDocument.documentElement.scrollWidth + "/" + f.contentWindow.innerWidth; };</script>'
		echo '</body></html>'
	} >"$wrap"
	chrome --window-size=$w,$h --screenshot="$out/report-$w.png" "file://$wrap"
	dims=$(chrome --window-size=$w,$h --virtual-time-budget=3000 --dump-dom "file://$wrap" |
		sed -n 's#.*<title>\([0-9]*/[0-9]*\)</title>.*#\1#p')
	echo "width $w: page/viewport ${dims:-unknown}, screenshot $out/report-$w.png"
	if [ -z "$dims" ] || [ "${dims%/*}" != "${dims#*/}" ]; then
		echo "report-screenshots: at $w px the page is wider than its viewport (${dims:-not measured})" >&2
		status=1
	fi
done
rm -rf "$out/profile" "$out"/wrap-*.html
exit $status
