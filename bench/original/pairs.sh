#!/bin/sh
# pairs.sh: the original VOLANO server and Mark beside volanogo's, in four
# client -> server pairs under the Volano Report's run rules, then one
# Volano Report with the four side by side (README, "Measuring the
# original VOLANO server").
#
#   bench/original/pairs.sh --volano-dir DIR [--volanogo BIN] [--out DIR]
#       [--rooms 15] [--count 100] [--runs 4] [--pairs LIST] [-- LOAD-OPTION...]
#
# DIR is a tree of the original that you built (see serve.sh and mark.sh:
# this repository holds none of its code and no recipe to build it). The
# pairs, in this order (--pairs takes a comma-separated subset):
#
#   original       Mark           -> the original server
#   mark-serve     Mark           -> volanogo serve
#   load-original  volanogo load  -> the original server
#   volanogo       volanogo load  -> volanogo serve
#
# Each pair is one `volanogo load` with a fresh server per run (--serve or
# --server-cmd serve.sh), --runs runs per step of --rooms (a list is the
# steps of a scalability test), the first discarded; its result documents
# go to OUT/PAIR/, its output to OUT/PAIR.txt. The load average before
# each pair goes to OUT/machine.txt. At the end `volanogo report` makes
# OUT/report.txt and OUT/report.md of every pair. BIN is the volanogo
# binary (default: volanogo on PATH); OUT defaults to a new temporary
# directory. LOAD-OPTIONs are given to every pair (--strict-order, say:
# the original server's rooms reorder, so those pairs would then fail).
#
# Exit status: 0 when every pair passed, 1 when any failed (the others
# still run, and the report footnotes the failures), 2 usage.
set -eu

usage() {
	echo "usage: $0 --volano-dir DIR [--volanogo BIN] [--out DIR] [--rooms LIST] [--count N] [--runs N] [--pairs LIST] [-- LOAD-OPTION...]" >&2
	exit 2
}

here=$(cd "$(dirname "$0")" && pwd)
dir="" bin=volanogo out="" rooms=15 count=100 runs=4
pairs=original,mark-serve,load-original,volanogo
while [ $# -gt 0 ]; do
	case $1 in
	--volano-dir | --volanogo | --out | --rooms | --count | --runs | --pairs)
		[ $# -ge 2 ] || usage
		opt=$1 val=$2
		shift 2
		;;
	--*=*) opt=${1%%=*} val=${1#*=}; shift ;;
	--) shift; break ;;
	-h | --help) usage ;;
	*) echo "$0: unknown argument $1" >&2; usage ;;
	esac
	case $opt in
	--volano-dir) dir=$val ;;
	--volanogo) bin=$val ;;
	--out) out=$val ;;
	--rooms) rooms=$val ;;
	--count) count=$val ;;
	--runs) runs=$val ;;
	--pairs) pairs=$val ;;
	*) echo "$0: unknown argument $opt" >&2; usage ;;
	esac
done
[ -n "$dir" ] || { echo "$0: --volano-dir is required" >&2; usage; }
if [ ! -d "$dir/classes" ] && [ ! -d "$dir/lib" ]; then
	echo "$0: $dir has neither classes/ nor lib/: not a built tree" >&2
	exit 2
fi
dir=$(cd "$dir" && pwd)
case $bin in
*/*) bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin") ;;
*) bin=$(command -v "$bin") || { echo "$0: $bin is not on PATH (give --volanogo BIN)" >&2; exit 2; } ;;
esac
for p in $(echo "$pairs" | tr , ' '); do
	case $p in
	original | mark-serve | load-original | volanogo) ;;
	*) echo "$0: unknown pair $p (original, mark-serve, load-original, volanogo)" >&2; exit 2 ;;
	esac
done
if [ -z "$out" ]; then
	out=$(mktemp -d "${TMPDIR:-/tmp}/volano-pairs.XXXXXX")
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)

# q quotes one word, where it needs it, for the shell that runs
# --server-cmd and --client-cmd.
q() {
	case $1 in
	*[!A-Za-z0-9_/.,:=+-]* | '') printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")" ;;
	*) printf '%s' "$1" ;;
	esac
}
server="$(q "$here/serve.sh") --volano-dir $(q "$dir") --port {port}"
client="$(q "$here/mark.sh") --volano-dir $(q "$dir") -run -host {host} -port {port} -rooms {rooms} -users {users} -count {count} -start {start}"
version=$("$bin" version 2>/dev/null | head -n 1 || true)

loadavg() {
	if [ -r /proc/loadavg ]; then cut -d' ' -f1-3 /proc/loadavg; else uptime | sed 's/.*load average[s]*: //'; fi
}
{
	echo "machine: $(uname -srm), $(getconf _NPROCESSORS_ONLN 2>/dev/null || echo '?') processors"
	echo "volanogo: $version ($bin)"
	echo "original: $dir"
	echo "java: $("${JAVA:-java}" -version 2>&1 | head -n 1)"
} >"$out/machine.txt"

failed=""
for p in $(echo "$pairs" | tr , ' '); do
	# The pair's options go before the LOAD-OPTIONs, and are shifted off
	# after its run.
	n=$#
	case $p in
	original) label="Mark -> VOLANO 2.13.4"; set -- --server-cmd "$server" --client-cmd "$client" "$@" ;;
	mark-serve) label="Mark -> volanogo serve"; set -- --serve --client-cmd "$client" "$@" ;;
	load-original) label="volanogo load -> VOLANO 2.13.4"; set -- --server-cmd "$server" "$@" ;;
	volanogo) label="volanogo load -> volanogo serve"; set -- --serve "$@" ;;
	esac
	echo "$(date -u +%H:%M:%S) $p ($label): load average $(loadavg)" | tee -a "$out/machine.txt"
	mkdir -p "$out/$p"
	status=0
	"$bin" load "$@" -rooms "$rooms" -count "$count" --runs "$runs" --label "$label" \
		-o "$out/$p/" -file "$out/$p.log" --quiet >"$out/$p.txt" 2>&1 || status=$?
	shift $(($# - n))
	grep -E '^(Rooms|  run|  score)' "$out/$p.txt" || true
	if [ "$status" != 0 ]; then
		echo "$p: volanogo load exited $status (see $out/$p.txt)"
		failed="$failed $p"
	fi
done
echo "$(date -u +%H:%M:%S) done: load average $(loadavg)" | tee -a "$out/machine.txt"

set --
for p in $(echo "$pairs" | tr , ' '); do
	set -- "$@" "$out/$p"
done
"$bin" report "$@" >"$out/report.txt" 2>&1 || true
"$bin" report --format markdown "$@" >"$out/report.md" 2>/dev/null || true
cat "$out/report.txt"
echo
echo "documents, outputs and reports in $out"
if [ -n "$failed" ]; then
	echo "failed:$failed" >&2
	exit 1
fi
