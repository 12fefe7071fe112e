#!/bin/sh
# compare.sh: two builds' clients (volanogo load) against the kernel floor,
# in one sitting, with one server: each round measures `volanogo floor`,
# then runs the loopback test with each build's `load` (alternating which
# goes first) against a fresh `serve` of the first build. Prints each
# run's client CPU per message and its ratio to the round's floor client,
# then the medians, and NEW/OLD per round with its median and range. Before/after figures of a client change come from
# here: the server is the same binary on both sides (a faster server lets
# a client read more per wake-up, so a server change would count as the
# client's). It mirrors bench/server/compare.sh.
#
#   bench/client/compare.sh NEW OLD                  # 15 rooms x 200, epoll client and server, 3 rounds
#   ROOMS=475 COUNT=10 ROUNDS=5 bench/client/compare.sh NEW OLD
#   LOAD_ARGS="--loops 2" bench/client/compare.sh NEW NEW   # a flag against the default
#
# NEW and OLD are volanogo binaries (go build -o ... ./cmd/volanogo at each
# commit). LOAD_ARGS goes to the first build's load only; CLIENT_ENGINE is
# both loads' --engine (epoll), ENGINE the server's (epoll).
# Each floor and run first pauses for the last one's TIME_WAIT sockets
# (lib.sh's settle: 5 s at most; SETTLE=0 does not pause).
set -eu
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/../lib.sh"
ab_args compare.sh "$@"
rooms=${ROOMS:-15}
count=${COUNT:-200}
rounds=${ROUNDS:-3}
ce=${CLIENT_ENGINE:-epoll}
engine=${ENGINE:-epoll}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ccompare.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM

# run BIN ARGS: one run of BIN's load; prints its client µs per message
# and msg/s.
run() {
	bin=$1
	shift
	settle
	# shellcheck disable=SC2068 # ARGS are words
	"$bin" load --server-cmd "$new serve --listen 127.0.0.1:{port} --metrics-listen 127.0.0.1:0 --engine $engine" \
		-rooms "$rooms" -count "$count" -runs 1 --engine "$ce" --json --quiet -file "" $@ 2>/dev/null >"$tmp/run.json" || true
	echo "$(field client_cpu_per_msg_us <"$tmp/run.json") $(field msgs_per_sec <"$tmp/run.json")"
}

echo "$rooms rooms x $count, server $new --engine $engine, clients --engine $ce; load average $(cut -d' ' -f1-3 /proc/loadavg)"
: >"$tmp/rows"
for r in $(seq "$rounds"); do
	settle
	f=$("$new" floor --rooms "$rooms" --count "$count" --json | field client_cpu_per_message_us)
	if [ $((r % 2)) = 1 ]; then
		a=$(run "$new" "${LOAD_ARGS:-}")
		b=$(run "$old")
	else
		b=$(run "$old")
		a=$(run "$new" "${LOAD_ARGS:-}")
	fi
	# shellcheck disable=SC2086 # a and b are two numbers each
	set -- $a $b
	if [ -z "${1:-}" ] || [ -z "${3:-}" ]; then
		echo "round $r: a run failed (new: '$a', old: '$b')" >&2
		continue
	fi
	echo "$f $1 $3" | awk '{ print $2 / $1, $3 / $1 }' >>"$tmp/rows"
	echo "$f $1 $2 $3 $4" | awk -v r="$r" -v l="$(cut -d' ' -f1 /proc/loadavg)" \
		'{ printf "round %s: floor client %.2f us; new %.2f us, %.3f (%.0f msg/s); old %.2f us, %.3f (%.0f msg/s); new/old %.3f (load %s)\n", r, $1, $2, $2 / $1, $3, $4, $4 / $1, $5, $2 / $4, l }'
done
[ -s "$tmp/rows" ] || exit 1
echo "client CPU per message, $(abstat "$tmp/rows") (load average $(cut -d' ' -f1-3 /proc/loadavg))"
