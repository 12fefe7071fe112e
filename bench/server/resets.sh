#!/bin/sh
# resets.sh: N connections opened and reset (WAVE at a time, never a byte
# sent: a load balancer's health checks, a port scan) against volanogo
# serve on each engine; then, once the server has closed them all and has
# run a garbage collection after (the runtime forces one every 2 minutes),
# its heap in use. An engine that keeps what it had of them shows it here:
# in small waves (20) every connection of a wave is gone before a loop's
# next deadline scan, and before the loops were written once the epoll
# engine kept every one (35 MB at 40,000). Prints each engine's heap and
# its difference from the first engine's.
#
#   bench/server/resets.sh                        # N=40000 WAVE=20, all engines
#   ENGINES="epoll uring" N=20000 bench/server/resets.sh
. "$(dirname "$0")/lib.sh"
N=${N:-40000}
WAVE=${WAVE:-20}
ENGINES=${ENGINES:-"goroutine epoll uring"}
go build -o "$OUT/resets" ./bench/server/resets
base=
for e in $ENGINES; do
	start_server --engine "$e"
	"$OUT/resets" -addr "$ADDR" -n "$N" -wave "$WAVE"
	for _ in $(seq 300); do
		[ "$(metric volanogo_connections_open)" = 0 ] && break
		sleep 0.1
	done
	t=$(date +%s)
	for _ in $(seq 150); do
		gc=$(metric go_memstats_last_gc_time_seconds)
		[ "${gc%.*}" -gt "$t" ] 2>/dev/null && break
		sleep 1
	done
	heap=$(metric go_memstats_heap_inuse_bytes)
	heap=$(printf '%.0f' "$heap")
	[ -z "$base" ] && base=$heap
	echo "$e: $N reset connections, open now $(metric volanogo_connections_open), heap in use after a GC $heap bytes ($(( (heap - base) / 1024 )) KiB over the first engine's)"
	stop_server
done
echo "$(load)"
