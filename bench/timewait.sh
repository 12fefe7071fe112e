#!/bin/sh
# timewait.sh: does a measurement pay for the TIME_WAIT sockets the last
# one left? lib.sh's settle waits up to 65 s before every floor and run for
# them to go, on the evidence of floors read right after large runs (1.4 to
# 1.9x per message). This separates the sockets from the moment: every
# round reads the floor at ROOMS x COUNT once no socket is left in
# TIME_WAIT (settle), then makes a generator floor of GEN_ROOMS rooms (its
# 20 connections a room, with the floor before it, leave their sockets in
# TIME_WAIT), waits AGE seconds and reads the floor again. It prints, per
# round, the sockets in TIME_WAIT at the second reading and the ratios
# with/without of the server's and the client's CPU per message; then
# their medians. AGE=0 reads right after the generator (as a run after a
# run), AGE=5 five seconds later: if AGE=5 reads as the settled floor, it
# is the moment after a run that costs (its process's exit, the kernel's
# deferred frees), not the sockets, and a pause of seconds does what the
# minute's wait did.
#
#   bench/timewait.sh                     # AGE=5 ROUNDS=3 ROOMS=475 COUNT=10 GEN_ROOMS=950
#   AGE=0 ROUNDS=5 bench/timewait.sh
set -eu
cd "$(dirname "$0")/.."
. bench/lib.sh
age=${AGE:-5}
rounds=${ROUNDS:-3}
rooms=${ROOMS:-475}
count=${COUNT:-10}
gen=${GEN_ROOMS:-950}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/timewait.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/volanogo" ./cmd/volanogo
vg=$tmp/volanogo
timewait() { ss -s 2>/dev/null | sed -n 's/.*timewait \([0-9]*\).*/\1/p'; }
floor() { "$vg" floor --rooms "$rooms" --count "$count" --json >"$tmp/$1.json"; }
echo "machine: $(nproc) processors, $(uname -sr), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "floor at $rooms rooms x $count; generator $gen rooms x 1; age $age s; $rounds rounds"
printf '%-6s %10s %10s %10s\n' round time_wait server client
: >"$tmp/rows"
i=1
while [ "$i" -le "$rounds" ]; do
	SETTLE=${SETTLE:-90} settle
	floor without
	"$vg" floor --rooms "$gen" --count 1 --json >/dev/null
	sleep "$age"
	tw=$(timewait)
	floor with
	s=$(awk -v a="$(field server_cpu_per_message_us <"$tmp/with.json")" -v b="$(field server_cpu_per_message_us <"$tmp/without.json")" 'BEGIN { printf "%.3f", a / b }')
	c=$(awk -v a="$(field client_cpu_per_message_us <"$tmp/with.json")" -v b="$(field client_cpu_per_message_us <"$tmp/without.json")" 'BEGIN { printf "%.3f", a / b }')
	printf '%-6s %10s %10s %10s\n' "$i" "${tw:-?}" "$s" "$c"
	echo "$s $c" >>"$tmp/rows"
	i=$((i + 1))
done
echo "medians with/without: server $(awk '{ print $1 }' "$tmp/rows" | med), client $(awk '{ print $2 }' "$tmp/rows" | med)"
