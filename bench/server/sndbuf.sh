#!/bin/sh
# sndbuf.sh: what bounding each connection's kernel send buffer
# (--socket-send-buffer, default 64 KiB) costs the benchmark itself: the
# loopback test (1,000 connections, turn-taking) against a server with the
# default and with autotuning (0), alternating PAIRS times in one sitting.
#
#   bench/server/sndbuf.sh              # PAIRS=3, any load option after
. "$(dirname "$0")/lib.sh"
PAIRS=${PAIRS:-3}
echo "$(load)"
for i in $(seq "$PAIRS"); do
	for sb in 65536 0; do
		score=$("$OUT/volanogo" load --quiet --runs 2 --discard 1 "$@" \
			--server-cmd "$OUT/volanogo serve --listen 127.0.0.1:{port} --metrics-listen '' --socket-send-buffer $sb" 2>&1 |
			grep -E 'run 2:' | head -1)
		echo "pair $i, --socket-send-buffer $sb: $score"
	done
done
echo "$(load)"
