#!/bin/sh
# compare.sh: two builds' servers against the kernel floor, in one sitting,
# with one client: each round measures `volanogo floor`, then runs the
# loopback test against a fresh `serve` of each build (alternating which
# goes first), the client always the first build's `load`. Prints each
# run's server CPU per message and its ratio to the round's floor, then the
# medians, and NEW/OLD per round with its median and range. Before/after figures of a server change come from here: the
# client is the same binary on both sides (a faster client lets a server
# batch more, so a client change would count as the server's).
#
#   bench/server/compare.sh NEW OLD                  # 15 rooms x 200, epoll, 3 rounds
#   ROOMS=475 COUNT=10 CLIENT_ENGINE=goroutine ROUNDS=5 bench/server/compare.sh NEW OLD
#   SERVE_ARGS="--loops 2" bench/server/compare.sh NEW NEW   # a flag against the default
#
# NEW and OLD are volanogo binaries (go build -o ... ./cmd/volanogo at each
# commit). SERVE_ARGS goes to the first build's serve only; ENGINE is the
# server engine (epoll).
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
tmp=$(mktemp -d "${TMPDIR:-/tmp}/compare.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM

echo "$rooms rooms x $count, client $new --engine $ce, server --engine $engine; load average $(cut -d' ' -f1-3 /proc/loadavg)"
: >"$tmp/rows"
for r in $(seq "$rounds"); do
	settle
	f=$("$new" floor --rooms "$rooms" --count "$count" --json | field server_cpu_per_message_us)
	if [ $((r % 2)) = 1 ]; then
		a=$(server_run "$new" "${SERVE_ARGS:-}")
		b=$(server_run "$old")
	else
		b=$(server_run "$old")
		a=$(server_run "$new" "${SERVE_ARGS:-}")
	fi
	if [ -z "$f" ] || [ -z "$a" ] || [ -z "$b" ]; then
		echo "round $r: a run gave no figure (floor '$f', new '$a', old '$b')"
		continue
	fi
	echo "$f $a $b" | awk '{ print $2 / $1, $3 / $1 }' >>"$tmp/rows"
	echo "$f $a $b" | awk -v r="$r" -v l="$(cut -d' ' -f1 /proc/loadavg)" \
		'{ printf "round %s: floor %.2f us; new %.2f us, %.3f; old %.2f us, %.3f; new/old %.3f (load %s)\n", r, $1, $2, $2 / $1, $3, $3 / $1, $2 / $3, l }'
done
[ -s "$tmp/rows" ] || exit 1
echo "server CPU per message, $(abstat "$tmp/rows") (load average $(cut -d' ' -f1-3 /proc/loadavg))"
