#!/bin/sh
# privflood.sh: two connections each send N EnterPrivate requests at once,
# one inviting itself, one inviting another user, against a server with
# the default --max-private and --request-rate. Prints the requests
# refused, the server's RSS growth, the time the server took to close each
# attacker once its flood was answered (as another member of its room
# sees it), and a second room's delivery latency without the attack
# (BASE) and during it.
#
#   bench/server/privflood.sh            # N=300000 BASE=30s
. "$(dirname "$0")/lib.sh"
N=${N:-300000}
BASE=${BASE:-30s}
start_server
echo "$(load)"
rss0=$(rss_kb)
echo "without the attack: $("$OUT/attack" -addr "$ADDR" -mode probe -duration "$BASE" -tag base | grep probe_)"
"$OUT/attack" -addr "$ADDR" -mode privflood -n "$N" -self -probe=false -tag self >"$OUT/self" 2>&1 &
p1=$!
"$OUT/attack" -addr "$ADDR" -mode privflood -n "$N" -probe=false -tag other >"$OUT/other" 2>&1 &
p2=$!
# the probe runs while both floods last
"$OUT/attack" -addr "$ADDR" -mode probe -duration 24h -tag during >"$OUT/during" 2>&1 &
pp=$!
peak=$rss0
while kill -0 "$p1" 2>/dev/null || kill -0 "$p2" 2>/dev/null; do
	r=$(rss_kb)
	[ "$r" -gt "$peak" ] && peak=$r
	sleep 1
done
kill -INT "$pp" 2>/dev/null || true
wait "$pp" || true
wait "$p1" || true
wait "$p2" || true
echo "self:  $(grep requests "$OUT/self")"
echo "other: $(grep requests "$OUT/other")"
echo "during the attack: $(grep probe_ "$OUT/during")"
rss1=$(rss_kb)
echo "refused max_private: $(metric 'volanogo_requests_refused_total{reason="max_private"}'); throttled connections: $(metric 'volanogo_requests_refused_total{reason="throttled"}')"
echo "RSS: $rss0 KiB before, peak $peak KiB, after $rss1 KiB (growth at the peak $((peak - rss0)) KiB)"
echo "warn lines: $(grep -c 'level=WARN' "$OUT/serve.log")"
echo "$(load)"
