#!/bin/sh
# rooms.sh: PROCS client processes of N connections each name a new room of
# 100 three-byte characters (300 bytes) in their Access, and stay. Against
# --max-rooms MAXROOMS: rooms past it are not created (entering them is
# NO_SUCH_ROOM). Prints rooms entered and refused, the largest Access
# confirm, and the server's RSS growth. The open-files limit (20,000 per
# process here) bounds the connections the server can hold, so the default
# run asks for 19,000 rooms against --max-rooms 10000.
#
#   bench/server/rooms.sh              # PROCS=4 N=4750 MAXROOMS=10000 LINGER=20s
. "$(dirname "$0")/lib.sh"
PROCS=${PROCS:-4}
N=${N:-4750}
MAXROOMS=${MAXROOMS:-10000}
LINGER=${LINGER:-20s}
start_server --max-rooms "$MAXROOMS"
echo "$(load)"
rss0=$(rss_kb)
pids=""
for p in $(seq "$PROCS"); do
	"$OUT/attack" -addr "$ADDR" -mode rooms -n "$N" -probe=false -linger "$LINGER" -tag "p$p" >"$OUT/rooms.$p" 2>&1 &
	pids="$pids $!"
done
# each process holds its connections for LINGER after its last: long
# enough for the others to finish; the peak RSS is read meanwhile
peak=$rss0
alive() {
	for pid in $pids; do kill -0 "$pid" 2>/dev/null && return 0; done
	return 1
}
while alive; do
	r=$(rss_kb)
	[ "$r" -gt "$peak" ] && peak=$r
	sleep 1
done
for pid in $pids; do wait "$pid" || true; done
rss1=$peak
cat "$OUT"/rooms.* | grep rooms_
echo "refused max_rooms: $(metric 'volanogo_requests_refused_total{reason="max_rooms"}')"
echo "RSS: $rss0 KiB -> $rss1 KiB (growth $((rss1 - rss0)) KiB) at the peak"
echo "$(load)"
