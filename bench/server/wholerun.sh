#!/bin/sh
# wholerun.sh: a server's CPU over a whole client run, as an outside check
# measures it (connects, Accesses, room entries, chats, exits and closes),
# against bench/floor.c's server at the same size, in one sitting. For
# each build and engine: a fresh `serve`, its CPU from /proc before and
# after one `volanogo load` run (the first build's, epoll); the run's
# timed phase (chats) from the load's own reading of the server
# (--server-metrics). Prints per run the whole run's server CPU per
# message, the chats' alone (the rest is the set-up and the exits) and
# the client's in the chats, each against floor.c's in the same round,
# and the server's memory per connection (peak RSS over the RSS before
# the run, per connection).
# Rounds alternate the order of the runs.
#
#   bench/server/wholerun.sh NEW [OLD]            # 475 rooms x 20, epoll and uring, 3 rounds
#   ROOMS=15 COUNT=200 ENGINES=epoll ROUNDS=5 bench/server/wholerun.sh NEW OLD
set -eu
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/../lib.sh"
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
	echo "usage: wholerun.sh NEW [OLD] (volanogo binaries)" >&2
	exit 2
fi
new=$1
builds="$1 ${2:-}"
rooms=${ROOMS:-475}
count=${COUNT:-20}
rounds=${ROUNDS:-3}
engines=${ENGINES:-"epoll uring"}
port=${PORT:-18600}
mport=${MPORT:-18602}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/wholerun.XXXXXX")
sp=
trap '[ -n "$sp" ] && kill "$sp" 2>/dev/null; rm -rf "$tmp"' EXIT INT TERM
cc -O2 -o "$tmp/floor" "$(dirname "$0")/../floor.c" -lpthread

cpu() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%.3f\n", ($14 + $15) / hz }' "/proc/$1/stat"; }
kib() { awk -v k="$2" '$1 == k":" { print $2 }' "/proc/$1/status"; }

# run BIN ENGINE: one whole run; prints the whole run's server CPU per
# message, the timed phase's (the chats'), the client's in the timed
# phase, and KiB per connection.
run() {
	settle
	"$1" serve --listen "127.0.0.1:$port" --metrics-listen "127.0.0.1:$mport" --engine "$2" >"$tmp/serve.out" 2>"$tmp/serve.log" &
	sp=$!
	for _ in $(seq 100); do
		grep -q listening "$tmp/serve.out" 2>/dev/null && break
		sleep 0.1
	done
	c0=$(cpu "$sp")
	r0=$(kib "$sp" VmRSS)
	"$new" load --host 127.0.0.1 --port "$port" --server-metrics "http://127.0.0.1:$mport/metrics" \
		-rooms "$rooms" -count "$count" -runs 1 --engine epoll --json --quiet -file "" >"$tmp/run.json" 2>"$tmp/run.err" || true
	c1=$(cpu "$sp")
	hwm=$(kib "$sp" VmHWM)
	kill "$sp"
	wait "$sp" 2>/dev/null || true
	sp=
	timed=$(grep '^{' "$tmp/run.json" | field server_cpu_per_msg_us)
	client=$(grep '^{' "$tmp/run.json" | field client_cpu_per_msg_us)
	# Mark's count: every chat sent and its 19 deliveries
	awk -v c0="$c0" -v c1="$c1" -v m="$((rooms * 20 * count * 20))" -v t="${timed:-0}" -v cl="${client:-0}" \
		-v r0="$r0" -v h="$hwm" -v n="$((rooms * 20))" \
		'BEGIN { if (t == 0) { print "- - - -"; exit } printf "%.3f %.3f %.3f %.2f\n", (c1 - c0) / m * 1e6, t, cl, (h - r0) / n }'
}

echo "$rooms rooms x 20 x $count: the server's CPU over the whole run; load average $(cut -d' ' -f1-3 /proc/loadavg)"
: >"$tmp/rows"
for r in $(seq "$rounds"); do
	settle
	set -- $("$tmp/floor" "$rooms" 20 "$count" 2>/dev/null | sed -n 's|^server \([0-9.]*\) us/msg, client \([0-9.]*\) us/msg.*|\1 \2|p')
	fs=${1:-0}
	fc=${2:-0}
	echo "round $r floor.c: server $fs, client $fc us/msg"
	list=""
	for b in $builds; do
		for e in $engines; do
			list="$list $b:$e"
		done
	done
	[ $((r % 2)) = 0 ] && list=$(echo "$list" | tr ' ' '\n' | sed '/^$/d' | tac | tr '\n' ' ')
	for be in $list; do
		b=${be%:*}
		e=${be##*:}
		# shellcheck disable=SC2046 # four numbers
		set -- $(run "$b" "$e")
		row=$(awk -v w="$1" -v t="$2" -v c="$3" -v fs="$fs" -v fc="$fc" \
			'BEGIN { if (w == "-" || fs == 0) { print "- - -"; exit } printf "%.3f %.3f %.3f", w / fs, t / fs, c / fc }')
		echo "round $r $(basename "$b") $e: whole run $1 us/msg ($(echo "$row" | cut -d' ' -f1) of floor.c's server); chats $2 ($(echo "$row" | cut -d' ' -f2)); client $3 ($(echo "$row" | cut -d' ' -f3) of floor.c's); $4 KiB per connection"
		echo "$(basename "$b") $e $row $4" >>"$tmp/rows"
	done
done
echo "medians (range) over the rounds, ratios to floor.c: whole run's server, chats' server, client; KiB per connection"
for b in $builds; do
	for e in $engines; do
		k="$(basename "$b") $e"
		grep "^$k " "$tmp/rows" >"$tmp/k" || continue
		col() { awk -v i="$1" '{ print $i }' "$tmp/k"; }
		echo "$k: whole $(col 3 | med) ($(col 3 | span 3)), chats $(col 4 | med) ($(col 4 | span 3)), client $(col 5 | med) ($(col 5 | span 3)), $(col 6 | med) KiB"
	done
done
echo "load average $(cut -d' ' -f1-3 /proc/loadavg)"
