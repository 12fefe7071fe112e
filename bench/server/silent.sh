#!/bin/sh
# silent.sh: PROCS client processes open N connections each that never
# send a byte (MODE=partial: 25 bytes of an Access, then nothing), against
# the default --access-timeout (10 s), while a real user chats in a room of
# its own. Prints how many the server closed and the longest any lived, the
# closes by reason, and the real user's delivery latency meanwhile. The
# server runs with the default open-files limit (20,000 here), so 4 x 4,750
# = 19,000 is about as high as fits beside its other descriptors.
#
#   bench/server/silent.sh             # PROCS=4 N=4750 MODE=silent
. "$(dirname "$0")/lib.sh"
PROCS=${PROCS:-4}
N=${N:-4750}
MODE=${MODE:-silent}
start_server
echo "$(load)"
rss0=$(rss_kb)
"$OUT/attack" -addr "$ADDR" -mode probe -duration 30s -tag real >"$OUT/real" 2>&1 &
real=$!
pids=""
for p in $(seq "$PROCS"); do
	"$OUT/attack" -addr "$ADDR" -mode "$MODE" -n "$N" -hold 40s -probe=false -tag "s$p" >"$OUT/silent.$p" 2>&1 &
	pids="$pids $!"
done
peak=0
for _ in $(seq 25); do
	o=$(metric volanogo_connections_open)
	[ "${o%.*}" -gt "$peak" ] && peak=${o%.*}
	sleep 1
done
for pid in $pids; do wait "$pid" || true; done
wait "$real" || true
cat "$OUT"/silent.*
echo "peak connections open: $peak; RSS at start $rss0 KiB, now $(rss_kb) KiB"
echo "closed access_timeout (metrics): $(metric 'volanogo_connections_closed_total{reason="access_timeout"}')"
echo "real user meanwhile: $(grep probe_ "$OUT/real")"
grep 'level=WARN' "$OUT/serve.log" || true
echo "$(load)"
