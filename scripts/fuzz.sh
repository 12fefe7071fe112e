#!/usr/bin/env bash
# fuzz.sh: runs every fuzz target of the module, one after the other, for a
# set time each, and prints per target the executions, the time (fuzzing as
# go test reports it, and wall time with the build and the baseline
# coverage), the corpus size and the outcome. Exits 1 if any target failed.
#
#   scripts/fuzz.sh                        # every target, 10 minutes each, 1 worker
#   scripts/fuzz.sh -t 30s                 # a quick pass
#   scripts/fuzz.sh -t 10000000x -p 2      # 10M executions each, 2 workers
#   scripts/fuzz.sh -r FuzzRead ./internal/results
#
# Options:
#   -t TIME     -fuzztime per target: a duration (10m) or a count (1000000x); default 10m
#   -p N        fuzzing workers (-parallel); default 1
#   -c DIR      corpus directory, kept outside the repository; default
#               ${XDG_CACHE_HOME:-~/.cache}/volanogo-fuzz (one directory per package and target)
#   -r REGEXP   only the targets whose name matches
#   -l DIR      where each target's go test output goes; default a new temporary directory
# Arguments: packages (default ./...).
#
# Targets are found with `go test -list 'Fuzz.*'`. The corpus grows across
# runs in the corpus directory; a failing input is written by go test to the
# package's testdata/fuzz/TARGET/ (commit it: it becomes a regression case)
# and the failure's output is shown.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
	sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
	exit 2
}

fuzztime=10m
parallel=1
corpus=${XDG_CACHE_HOME:-$HOME/.cache}/volanogo-fuzz
only=.
logs=""
while getopts "t:p:c:r:l:h" opt; do
	case $opt in
	t) fuzztime=$OPTARG ;;
	p) parallel=$OPTARG ;;
	c) corpus=$OPTARG ;;
	r) only=$OPTARG ;;
	l) logs=$OPTARG ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
if [ $# -eq 0 ]; then
	set -- ./...
fi
case $parallel in
'' | *[!0-9]* | 0) echo "fuzz.sh: -p must be a positive number (got '$parallel')" >&2; usage ;;
esac
case $fuzztime in
*[0-9]x | *[0-9]s | *[0-9]m | *[0-9]h | *[0-9]ms) ;;
*) echo "fuzz.sh: -t must be a duration like 10m or a count like 1000000x (got '$fuzztime')" >&2; usage ;;
esac
mkdir -p "$corpus"
corpus=$(cd "$corpus" && pwd)
case $corpus/ in
"$(pwd)"/*) echo "fuzz.sh: the corpus directory $corpus is inside the repository" >&2; exit 2 ;;
esac
if [ -z "$logs" ]; then
	logs=$(mktemp -d "${TMPDIR:-/tmp}/volanogo-fuzz-logs.XXXXXX")
fi
mkdir -p "$logs"

# The targets: "package target" per line.
targets=()
for pkg in $(go list "$@"); do
	while read -r name; do
		if [[ $name == Fuzz* ]] && [[ $name =~ $only ]]; then
			targets+=("$pkg $name")
		fi
	done < <(go test -list 'Fuzz.*' "$pkg" 2>/dev/null)
done
if [ ${#targets[@]} -eq 0 ]; then
	echo "fuzz.sh: no fuzz target found" >&2
	exit 1
fi

echo "fuzz.sh: ${#targets[@]} target(s), -fuzztime $fuzztime, -parallel $parallel, $(nproc) processors, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "corpus: $corpus"
echo "logs:   $logs"
failed=0
summary=()
for t in "${targets[@]}"; do
	read -r pkg name <<<"$t"
	log="$logs/$(echo "$pkg" | tr / _).$name.log"
	echo "== $name ($pkg) started $(date -u +%H:%M:%S)"
	start=$(date +%s)
	status=0
	go test -run "^${name}\$" -fuzz "^${name}\$" -fuzztime "$fuzztime" -parallel "$parallel" "$pkg" \
		-args -test.fuzzcachedir="$corpus/$pkg" >"$log" 2>&1 || status=$?
	secs=$(($(date +%s) - start))
	execs=$(grep -o 'execs: [0-9]*' "$log" | tail -1 | cut -d' ' -f2 || true)
	interesting=$(grep -o 'total: [0-9]*' "$log" | tail -1 | cut -d' ' -f2 || true)
	elapsed=$(grep -o '^fuzz: elapsed: [0-9hms]*' "$log" | tail -1 | cut -d' ' -f3 || true)
	if [ $status -eq 0 ]; then
		outcome=ok
	else
		outcome=FAIL
		failed=1
		grep -v '^fuzz: elapsed' "$log" | tail -40 | sed 's/^/    /'
	fi
	line=$(printf '%-18s %-40s %8s %7ss %12s %7s  %s' "$name" "$pkg" "${elapsed:-?}" "$secs" "${execs:-?}" "${interesting:-?}" "$outcome")
	echo "$line"
	summary+=("$line")
done

echo
printf '%-18s %-40s %8s %8s %12s %7s  %s\n' target package fuzzing wall execs corpus outcome
printf '%s\n' "${summary[@]}"
echo "load average $(cut -d' ' -f1-3 /proc/loadavg) at $(date -u +%H:%M:%S) UTC"
exit $failed
