# shellcheck shell=sh
# lib.sh: helpers shared by the bench scripts (sourced, not run):
#   . "$(dirname "$0")/lib.sh"        (from bench/)
#   . "$(dirname "$0")/../lib.sh"     (from bench/server/, bench/client/)

# field NAME: the first number after "NAME": in the JSON on standard input.
field() { sed -n "s/.*\"$1\": *\([0-9.eE+-]*\).*/\1/p" | head -n 1; }

# mean A B: the mean of two numbers.
mean() { awk -v a="$1" -v b="$2" 'BEGIN { print (a + b) / 2 }'; }

# med: the median of the numbers on standard input (0 for none).
med() {
	sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print 0; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# span [DIGITS]: "min-max" of the numbers on standard input, with DIGITS
# decimals (2), "-" for none.
span() {
	sort -g | awk -v d="${1:-2}" 'NR == 1 { lo = $1 } { hi = $1 }
		END { if (NR == 0) print "-"; else printf("%." d "f-%." d "f\n", lo, hi) }'
}

# abstat FILE: the summary of an A/B's rows in FILE, each a round's
# "new/floor old/floor": the medians of both, and the median and range of
# new/old over the rounds. new/old is the figure to decide by: both runs of
# a round are a minute apart, where the floor moves between rounds.
abstat() {
	n=$(awk '{ print $1 }' "$1" | med)
	o=$(awk '{ print $2 }' "$1" | med)
	r=$(awk '$2 > 0 { print $1 / $2 }' "$1")
	awk -v n="$n" -v o="$o" -v m="$(echo "$r" | med)" -v s="$(echo "$r" | span 3)" -v k="$(echo "$r" | wc -l)" \
		'BEGIN { printf "medians over the floor: new %.3f, old %.3f; new/old %.3f (range %s over %d rounds)\n", n, o, m, s, k }'
}

# ab_args SCRIPT ARGS...: the A/B scripts' two arguments, NEW and OLD
# (volanogo binaries), in new and old; else SCRIPT's usage and exit 2.
# shellcheck disable=SC2034 # old is the sourcing script's
ab_args() {
	if [ $# -ne 3 ]; then
		echo "usage: $1 NEW OLD (volanogo binaries)" >&2
		exit 2
	fi
	new=$2
	old=$3
}

# settle: wait (SETTLE seconds at most, default 5) until the TCP sockets
# the last measurement left in TIME_WAIT are gone (under 500); after a
# large run, a pause of SETTLE seconds. They last 60 s, and the wait was
# that long, on one quiet reading of the floor at 475 rooms 1.6x dearer
# while 19,000 lingered; but bench/timewait.sh, reading the floor with and
# without 28,500 of them in alternation (3 rounds each), found them 1.03
# (server) and 1.04 (client) times as dear read at once, 0.88 and 0.90
# five seconds later: within the 10 to 15% that two floors read one
# after the other differ by. SETTLE=65 waits for them to go, SETTLE=0
# does not wait.
settle() {
	w=0
	while [ "$w" -lt "${SETTLE:-5}" ]; do
		n=$(ss -s 2>/dev/null | sed -n 's/.*timewait \([0-9]*\).*/\1/p')
		[ -z "$n" ] || [ "$n" -lt 500 ] && return 0
		sleep 1
		w=$((w + 1))
	done
}

# server_run BIN ARGS...: one turn-taking run's server µs per message
# against a fresh `BIN serve --engine $engine ARGS`, loaded by
# `$new load --engine $ce`, $rooms rooms x $count, once the last
# measurement's TIME_WAIT sockets have gone (settle).
# shellcheck disable=SC2154 # the sourcing script sets them
server_run() {
	bin=$1
	shift
	settle
	"$new" load --server-cmd "$bin serve --listen 127.0.0.1:{port} --metrics-listen 127.0.0.1:0 --engine $engine $*" \
		-rooms "$rooms" -count "$count" -runs 1 --engine "$ce" --json --quiet -file "" 2>/dev/null |
		field server_cpu_per_msg_us
}
