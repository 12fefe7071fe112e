#!/bin/sh
# malformed.sh: PROCS client processes open N connections each, one after
# another, each sending a packet of an unknown id. Prints the server's warn
# lines (bounded: one per reason per 10 s, with a count), the counts they
# add up to, and the closes by reason in the metrics.
#
#   bench/server/malformed.sh          # PROCS=4 N=2500: 10,000 connections
. "$(dirname "$0")/lib.sh"
PROCS=${PROCS:-4}
N=${N:-2500}
start_server
echo "$(load)"
pids=""
for p in $(seq "$PROCS"); do
	"$OUT/attack" -addr "$ADDR" -mode malformed -n "$N" -probe=false >"$OUT/malformed.$p" 2>&1 &
	pids="$pids $!"
done
for pid in $pids; do wait "$pid"; done
closed=$(metric 'volanogo_connections_closed_total{reason="protocol"}')
stop_server
echo "connections: $((PROCS * N)); closed by the server, reason protocol (metrics): $closed"
echo "warn lines: $(grep -c 'level=WARN' "$OUT/serve.log")"
grep 'level=WARN' "$OUT/serve.log"
echo "their counts add up to: $(grep 'reason=protocol' "$OUT/serve.log" | sed 's/.*count=\([0-9]*\).*/\1/' | paste -sd+ | bc)"
echo "$(load)"
