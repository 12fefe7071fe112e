#!/bin/sh
# openfiles.sh: a server with an open-files limit of LIMIT is filled with
# silent connections (it refuses those past the limit at once), which it
# closes at the access timeout; the first user to connect once they are
# gone must be served.
#
#   bench/server/openfiles.sh          # LIMIT=256
. "$(dirname "$0")/lib.sh"
LIMIT=${LIMIT:-256}
NOFILE=$LIMIT
start_server --access-timeout 3s
echo "$(load)"
"$OUT/attack" -addr "$ADDR" -mode silent -n $((LIMIT + 100)) -hold 10s -probe=false | grep -v elapsed
echo "refused open_files: $(metric 'volanogo_connections_refused_total{reason="open_files"}')"
echo "open now: $(metric volanogo_connections_open); ready: $(curl -s "http://127.0.0.1:$MPORT/readyz")"
if "$OUT/attack" -addr "$ADDR" -mode probe -duration 1s -tag first | grep -q probe_chats; then
	echo "first connection after the exhaustion: served"
else
	echo "first connection after the exhaustion: NOT served"
	exit 1
fi
echo "$(load)"
