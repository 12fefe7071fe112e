#!/bin/sh
# paced-compare.sh: two builds' epoll servers in a paced run, against the
# paced kernel floor, in one sitting, with one client: compare.sh's
# method for bench/paced.sh's traffic. Each round measures the paced floor
# (`volanogo floor --pause`) of the same rooms, users and pause, then runs
# `volanogo load -pause` against a fresh `serve --engine epoll` of each
# build (alternating which goes first), the client always the first
# build's `load --engine epoll`. Prints each run's server CPU per message,
# its ratio to the round's paced floor and NEW over OLD, then the medians.
#
#   bench/server/paced-compare.sh NEW OLD          # 9500 rooms of 2 at 1s, 15 s, 3 rounds
#   ROOMS=2000 DURATION=20s ROUNDS=5 bench/server/paced-compare.sh NEW OLD
#   SERVE_ARGS="--coalesce 250us" bench/server/paced-compare.sh NEW NEW
#
# NEW and OLD are volanogo binaries (go build -o ... ./cmd/volanogo at each
# commit). SERVE_ARGS goes to the first build's serve only. The run's SLO
# is set out of reach (10m): a run that falls behind its schedule on a
# loaded machine still reports its CPU, though it batches then, and so
# costs less per message than a paced one (compare rounds at like loads).
# 19,000 users need 19,000 open files on each side.
# Each floor and run first pauses for the last one's TIME_WAIT sockets
# (lib.sh's settle: 5 s at most; SETTLE=0 does not pause).
set -eu
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/../lib.sh"
ab_args paced-compare.sh "$@"
rooms=${ROOMS:-9500}
users=${USERS:-2}
pause=${PAUSE:-1s}
dur=${DURATION:-15s}
rounds=${ROUNDS:-3}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/paced-compare.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM

# run BIN ARGS: one paced run's server µs per message against BIN's serve.
run() {
	bin=$1
	shift
	settle
	"$new" load --server-cmd "$bin serve --listen 127.0.0.1:{port} --metrics-listen 127.0.0.1:0 --engine epoll $*" \
		-rooms "$rooms" -users "$users" -pause "$pause" -count 0 --duration "$dur" --slo 10m -runs 1 \
		--engine epoll --json --quiet -file "" 2>/dev/null | field server_cpu_per_msg_us
}

echo "paced: $rooms rooms x $users, a chat every $pause each, $dur; client $new --engine epoll; load average $(cut -d' ' -f1-3 /proc/loadavg)"
: >"$tmp/rows"
for r in $(seq "$rounds"); do
	settle
	f=$("$new" floor --rooms "$rooms" --users "$users" --pause "$pause" --duration "$dur" --json 2>/dev/null | field server_cpu_per_message_us)
	if [ $((r % 2)) = 1 ]; then
		a=$(run "$new" "${SERVE_ARGS:-}")
		b=$(run "$old")
	else
		b=$(run "$old")
		a=$(run "$new" "${SERVE_ARGS:-}")
	fi
	if [ -z "$f" ] || [ -z "$a" ] || [ -z "$b" ]; then
		echo "round $r: a run gave no figure (floor '$f', new '$a', old '$b')"
		continue
	fi
	echo "$f $a $b" | awk '{ print $2 / $1, $3 / $1 }' >>"$tmp/rows"
	echo "$f $a $b" | awk -v r="$r" -v l="$(cut -d' ' -f1 /proc/loadavg)" \
		'{ printf "round %s: paced floor %.2f us; new %.2f us, %.3f; old %.2f us, %.3f; new/old %.3f (load %s)\n", r, $1, $2, $2 / $1, $3, $3 / $1, $2 / $3, l }'
done
[ -s "$tmp/rows" ] || exit 1
echo "server CPU per message against the paced floor, $(abstat "$tmp/rows") (load average $(cut -d' ' -f1-3 /proc/loadavg))"
