#!/bin/sh
# runq.sh: where a process's time goes, second by second, while it runs:
# the CPU its threads got (run) and the time they were ready to run but
# waited for a processor (wait, the run-queue delay), in milliseconds per
# second summed over the process's threads (and its child processes'),
# from the kernel's schedstat; with the machine's procs_running. On a
# shared machine a run whose messages slow down while its CPU per message
# does not is waiting: wait high says for a processor (the other
# sessions' load), run and wait both low says for something of its own (a
# wake-up missed, a lock, a timer).
#
#   bench/runq.sh SERVER_PID CLIENT_PID           # until one of them ends
#   INTERVAL=0.5 bench/runq.sh PID
#
# Seen at 950 rooms x 5 (epoll server and client, load 7-9): the
# floor's two threads got about 1000 ms a second between them, load's
# server and client about 650 to 825 between them (each process 750 to
# 1000 ms of wait): the same load, less of the processors.
set -eu
[ $# -ge 1 ] || { echo "usage: bench/runq.sh PID..." >&2; exit 2; }
interval=${INTERVAL:-1}

# tids PID: the schedstat files of PID's threads and its descendants'.
tids() {
	for t in /proc/"$1"/task/*; do
		echo "$t/schedstat"
		# shellcheck disable=SC2013 # the children are words on one line
		for c in $(cat "$t/children" 2>/dev/null); do tids "$c"; done
	done
}

# sample PID: "thread run wait" (nanoseconds) for each of its threads.
sample() {
	# shellcheck disable=SC2046 # file names are words
	awk '{ print FILENAME, $1, $2 }' $(tids "$1") 2>/dev/null || true
}

alive() {
	for p in "$@"; do [ -d /proc/"$p" ] || return 1; done
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/runq.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
i=0
for p in "$@"; do i=$((i + 1)); sample "$p" >"$tmp/prev$i"; done
t=0
printf '%6s' "s"
for p in "$@"; do printf ' | %-22s' "$p run/wait ms"; done
printf ' | running\n'
while alive "$@"; do
	sleep "$interval"
	alive "$@" || break
	t=$(awk -v t="$t" -v i="$interval" 'BEGIN { print t + i }')
	line=$(printf '%6.1f' "$t")
	i=0
	for p in "$@"; do
		i=$((i + 1))
		sample "$p" >"$tmp/cur$i"
		# a thread's figures since the last second (since it began if new;
		# a thread that ended in between is left out)
		line="$line$(awk -v i="$interval" 'NR == FNR { r[$1] = $2; w[$1] = $3; next }
			{ dr += $2 - r[$1]; dw += $3 - w[$1] }
			END { printf " | %10.0f %11.0f", dr / 1e6 / i, dw / 1e6 / i }' "$tmp/prev$i" "$tmp/cur$i")"
		mv "$tmp/cur$i" "$tmp/prev$i"
	done
	echo "$line | $(cut -d' ' -f4 /proc/loadavg)"
done
