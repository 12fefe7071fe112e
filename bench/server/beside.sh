#!/bin/sh
# beside.sh: what an attack leaves an honest room, in alternated rounds.
# For each round and engine, a fresh `volanogo serve`, then the honest room
# (volanogo load -rooms 1 -count COUNT) alone and beside the attackers;
# the ratio of the two is the round's figure, since the room alone moves
# by 2x within a sitting on a shared machine. The last lines give each
# engine's median and range. ATTACK:
#
#   stray          4 connections chatting to a room they are not in
#   trickle        16 attackers sending 64 KiB packets 1-3 bytes a write
#   trickle-spread the same, each packet spread over 12 s (an outside
#                  tester's pace)
#   refused        HELD (4000) connections that each send the first 14
#                  bytes of that packet (refused on its count) and
#                  reconnect when closed: held connections en masse
#   trickle-sink, trickle-spread-sink
#                  the same attackers against a listener of their own
#                  that refuses each packet as serve does (14 bytes, a
#                  hold of 10 s), the honest room still on serve: the
#                  least a server could leave it, the attackers' own CPU
#                  on the machine being the rest
#
#   ATTACK=stray bench/server/beside.sh                   # ROUNDS=3
#   ATTACK=trickle-spread ENGINES="epoll uring" ROUNDS=5 bench/server/beside.sh
. "$(dirname "$0")/lib.sh"
ATTACK=${ATTACK:-stray}
ROUNDS=${ROUNDS:-3}
ENGINES=${ENGINES:-goroutine epoll uring}
COUNT=${COUNT:-2000}
case $ATTACK in
stray) aflags="-addr $ADDR -mode stray -n 4 -stray-room Room1" ;;
trickle) aflags="-addr $ADDR -mode trickle -n 16" ;;
trickle-spread) aflags="-addr $ADDR -mode trickle -n 16 -spread 12s" ;;
refused) aflags="-addr $ADDR -mode refused -n ${HELD:-4000}" ;;
trickle-sink) aflags="-mode trickle -n 16 -sink refuse" ;;
trickle-spread-sink) aflags="-mode trickle -n 16 -spread 12s -sink refuse" ;;
*)
	echo "ATTACK=$ATTACK: stray, trickle, trickle-spread, refused, trickle-sink or trickle-spread-sink" >&2
	exit 2
	;;
esac
# honest: "THROUGHPUT P99": the room's messages a second and its turn p99.
honest() {
	"$OUT/volanogo" load -host 127.0.0.1 -port "$PORT" -rooms 1 -count "$COUNT" -file /dev/null 2>&1 |
		awk '/Average throughput/ {t=$4} /Turn time/ {p=$8" "$9; sub(/,$/, "", p)} END {printf "%s %s", t, p}'
}
cpu_of() { awk -v hz="$(getconf CLK_TCK)" '{printf "%.2f\n", ($14 + $15) / hz}' "/proc/$1/stat"; }
echo "attack $ATTACK, $ROUNDS rounds; $(load)"
: >"$OUT/ratios"
for r in $(seq "$ROUNDS"); do
	for e in $ENGINES; do
		start_server --engine "$e"
		alone=$(honest)
		# shellcheck disable=SC2086 # flags, split
		"$OUT/attack" $aflags -probe=false -duration 1h -tag during >"$OUT/during" 2>&1 &
		ap=$!
		sleep 1
		a0=$(cpu_of "$ap")
		beside=$(honest)
		a1=$(cpu_of "$ap")
		kill "$ap" 2>/dev/null || true
		wait "$ap" 2>/dev/null || true
		stop_server
		ratio=$(echo "${beside%% *} ${alone%% *}" | awk '{if ($2 > 0) printf "%.2f", $1/$2; else print "-"}')
		echo "$e $ratio" >>"$OUT/ratios"
		echo "round $r $e: $ratio (alone ${alone%% *} msg/s, beside ${beside%% *} msg/s, turn p99 ${beside#* }; attackers' CPU meanwhile $(echo "$a1 - $a0" | bc) s)"
	done
done
for e in $ENGINES; do
	grep "^$e " "$OUT/ratios" | awk '{print $2}' | sort -n |
		awk -v e="$e" '{v[NR]=$1} END {m = (NR % 2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2; printf "%s: median %.2f (%s-%s) of %d rounds\n", e, m, v[1], v[NR], NR}'
done
echo "$(load)"
