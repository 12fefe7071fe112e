#!/bin/sh
# slow.sh: a room of two users taking turns for DURATION while SLEEPERS
# clients in the same room never read (each closes after 2 s and another
# takes its place; the server cuts each off well before), against a run
# without sleepers; the server's RSS is sampled every second of the run
# with sleepers, and its warn lines say how many bytes the kernel took for
# a sleeper before it was cut off. Run it with SOCKBUF=0 to let the
# kernel autotune each connection's send buffer instead of the default
# --socket-send-buffer.
#
#   bench/server/slow.sh               # DURATION=30s SLEEPERS=4 SOCKBUF=65536
. "$(dirname "$0")/lib.sh"
DURATION=${DURATION:-30s}
SLEEPERS=${SLEEPERS:-4}
SOCKBUF=${SOCKBUF:-65536}
start_server --socket-send-buffer "$SOCKBUF"
echo "$(load)"
"$OUT/attack" -addr "$ADDR" -mode slow -sleepers 0 -duration 10s -probe=false -tag warm >/dev/null
base=$("$OUT/attack" -addr "$ADDR" -mode slow -sleepers 0 -duration "$DURATION" -probe=false -tag base | grep room_)
echo "without sleepers: $base"
"$OUT/attack" -addr "$ADDR" -mode slow -sleepers "$SLEEPERS" -duration "$DURATION" -probe=false -tag slow >"$OUT/slow" 2>&1 &
ap=$!
samples=""
while kill -0 "$ap" 2>/dev/null; do
	samples="$samples $(rss_kb)"
	sleep 1
done
wait "$ap" || true
echo "with $SLEEPERS sleepers: $(grep room_ "$OUT/slow")"
echo "RSS samples (KiB):$samples"
echo "$samples" | tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {m=a[int((NR+1)/2)]; printf "RSS min %d, median %d, max %d KiB: %+.1f%% / %+.1f%% of the median\n", a[1], m, a[NR], (a[1]-m)*100/m, (a[NR]-m)*100/m}'
echo "slow_consumer closes: $(metric 'volanogo_connections_closed_total{reason="slow_consumer"}')"
grep -o 'reason=slow_consumer count=[0-9]* .*last_error="[^"]*"' "$OUT/serve.log" | sed 's/last_remote=[^ ]* //'
echo "$(load)"
