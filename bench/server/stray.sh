#!/bin/sh
# stray.sh: N connections pass Access, enter no room and write chats to
# an honest room (1,000 to a write) for DUR, reconnecting whenever the
# server closes them. Prints the server's CPU against the attackers' over
# the same bytes, the closes by reason, and the honest room's throughput
# (volanogo load -rooms 1, whose room the chats name) alone and beside them.
#
#   bench/server/stray.sh                 # N=4 DUR=10s ENGINE=goroutine
. "$(dirname "$0")/lib.sh"
N=${N:-4}
DUR=${DUR:-10s}
ENGINE=${ENGINE:-goroutine}
COUNT=${COUNT:-1000}
start_server --engine "$ENGINE"
echo "engine $ENGINE, $N attackers; $(load)"
c0=$(cpu_s)
out=$("$OUT/attack" -addr "$ADDR" -mode stray -probe=false -n "$N" -duration "$DUR" -stray-room Room1 | grep stray_chats)
c1=$(cpu_s)
a=$(echo "$out" | sed 's/.*attacker_cpu_s=\([0-9.]*\).*/\1/')
echo "$out"
echo "server CPU $(echo "$c1 - $c0" | bc) s, attackers $a s: server/attacker $(echo "scale=2; ($c1 - $c0) / $a" | bc)"
echo "closed not_in_room: $(metric 'volanogo_connections_closed_total{reason="not_in_room"}'), chats dropped: $(metric volanogo_chats_dropped_total)"
honest() {
	"$OUT/volanogo" load -host 127.0.0.1 -port "$PORT" -rooms 1 -count "$COUNT" -file /dev/null 2>&1 |
		grep -E 'Average throughput|Turn time' | sed 's/  */ /g' | tr '\n' ' '
}
echo "honest room alone:       $(honest)"
"$OUT/attack" -addr "$ADDR" -mode stray -probe=false -n "$N" -duration 1h -stray-room Room1 -tag during >"$OUT/during" 2>&1 &
ap=$!
sleep 1
echo "beside the attackers:    $(honest)"
kill "$ap" 2>/dev/null || true
wait "$ap" 2>/dev/null || true
echo "honest room alone again: $(honest)"
echo "$(load)"
