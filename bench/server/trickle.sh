#!/bin/sh
# trickle.sh: N attackers send 64 KiB packets of 21,840 one-byte strings
# (an Access confirm before Access; with AFTER=1, RoomList requests after
# it), 1-3 bytes per write, for DUR; then the same packets whole. Prints
# the server's CPU per packet each way and their ratio; then an honest
# room's throughput (volanogo load -rooms 1) alone, beside the trickling
# attackers, and beside the same attackers sending to a sink of their own
# process that refuses them as serve does by default (14 bytes, a
# hold of 10 s), that reads them as serve does with --max-packet 65536
# (protocol.Reader over SO_RCVLOWAT: the attack's cost to the machine
# without the server's scheduling) and that wakes once per packet; and
# beside attackers that spread each packet over SPREAD (12s, the outside
# tester's pace: its packets outlasted serve's 10 s access deadline).
#
# serve's default --max-packet (8 KiB) refuses these packets at their
# count, 14 bytes in: the attackers are held 10 s (--violation-hold), closed (too_large)
# and reconnect.
# SERVE_FLAGS="--max-packet 65536" lets them through, to measure reading
# them.
#
#   bench/server/trickle.sh                       # N=16 DUR=10s ENGINE=goroutine
#   ENGINE=epoll AFTER=1 SERVE_FLAGS="--max-packet 65536" bench/server/trickle.sh
. "$(dirname "$0")/lib.sh"
N=${N:-16}
DUR=${DUR:-10s}
ENGINE=${ENGINE:-goroutine}
AFTER=${AFTER:-0}
SPREAD=${SPREAD:-12s}
COUNT=${COUNT:-1000}
flags="-probe=false -n $N -duration $DUR"
[ "$AFTER" = 1 ] && flags="$flags -after-access"
SERVE_FLAGS=${SERVE_FLAGS:-}
# shellcheck disable=SC2086 # flags, split
start_server --engine "$ENGINE" $SERVE_FLAGS
echo "engine $ENGINE ${SERVE_FLAGS}, $N attackers, after Access: $AFTER; $(load)"
for how in trickled whole; do
	w=""
	[ "$how" = whole ] && w="-whole"
	c0=$(cpu_s)
	out=$("$OUT/attack" -addr "$ADDR" -mode trickle $flags $w -tag "$how" | grep trickle_packets)
	c1=$(cpu_s)
	p=$(echo "$out" | sed 's/.*trickle_packets=\([0-9]*\).*/\1/')
	a=$(echo "$out" | sed 's/.*attacker_cpu_s=\([0-9.]*\).*/\1/')
	k=$(echo "$out" | sed 's/.*connections=\([0-9]*\).*/\1/')
	echo "$how: $out"
	if [ "$p" = 0 ]; then
		echo "$how: no packet got through; server CPU $(echo "$c1 - $c0" | bc) s for $k connections (attacker $a s); too_large so far: $(metric 'volanogo_connections_closed_total{reason="too_large"}')"
		per=0
	else
		per=$(echo "scale=3; ($c1 - $c0) * 1000 / $p" | bc)
		echo "$how: server CPU $(echo "$c1 - $c0" | bc) s for $p packets: $per ms per packet (attacker $a s)"
	fi
	eval "per_$how=$per"
done
[ "$per_whole" != 0 ] && [ "$per_trickled" != 0 ] && echo "trickled/whole server CPU per packet: $(echo "scale=2; $per_trickled / $per_whole" | bc)"
honest() {
	"$OUT/volanogo" load -host 127.0.0.1 -port "$PORT" -rooms 1 -count "$COUNT" -file /dev/null 2>&1 |
		grep -E 'Average throughput|Turn time' | sed 's/  */ /g' | tr '\n' ' '
}
# beside MODE-FLAGS: the honest room while the attackers run
beside() {
	"$OUT/attack" -addr "$ADDR" -mode trickle $flags "$@" -duration 1h -tag during >"$OUT/during" 2>&1 &
	ap=$!
	sleep 1
	honest
	kill "$ap" 2>/dev/null || true
	wait "$ap" 2>/dev/null || true
}
echo "honest room alone:                     $(honest)"
echo "beside the attackers:                  $(beside)"
echo "beside them, each packet over $SPREAD:  $(beside -spread "$SPREAD")"
if [ "$AFTER" != 1 ]; then
	echo "beside them sending to a sink refusing as serve does (14 bytes, a hold of 10 s): $(beside -sink refuse)"
	echo "the same, each packet over $SPREAD:  $(beside -sink refuse -spread "$SPREAD")"
	echo "beside them sending to a sink reading as serve does with --max-packet 65536: $(beside -sink reader)"
	echo "beside them sending to a sink reading once a packet:  $(beside -sink whole)"
	echo "the same, each packet over $SPREAD:  $(beside -sink whole -spread "$SPREAD")"
fi
echo "honest room alone again:               $(honest)"
echo "$(load)"
