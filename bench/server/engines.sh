#!/bin/sh
# engines.sh: the server's CPU per message on each engine against this
# machine's kernel floor, in one sitting: 'volanogo floor' at ROOMS, then
# the loopback test (turn-taking, 20 users a room, COUNT messages each)
# against `serve --engine goroutine` and `--engine epoll` alternately,
# PAIRS times. Prints each run's "Server CPU" line and the load average.
#
#   bench/server/engines.sh                      # ROOMS=15 COUNT=200 PAIRS=2
#   ROOMS=475 COUNT=20 bench/server/engines.sh   # the ratio at 9,500 users
#
# Server memory per connection on each engine: the benchmark
#   VOLANOGO_BENCH_CONNS=5000 go test -run '^$' -bench ServerMemory -benchtime 1x ./internal/server
. "$(dirname "$0")/lib.sh"
ROOMS=${ROOMS:-15}
COUNT=${COUNT:-200}
PAIRS=${PAIRS:-2}
echo "$(load)"
"$OUT/volanogo" floor --rooms "$ROOMS" --count "$COUNT" | tail -n 1
for i in $(seq "$PAIRS"); do
	for engine in goroutine epoll; do
		line=$("$OUT/volanogo" load --runs 1 --discard 0 -rooms "$ROOMS" -count "$COUNT" "$@" \
			--server-cmd "$OUT/volanogo serve --listen 127.0.0.1:{port} --metrics-listen '' --engine $engine" 2>&1 |
			grep -E '^Server CPU' | head -1)
		echo "pair $i, --engine $engine: $line"
	done
done
"$OUT/volanogo" floor --rooms "$ROOMS" --count "$COUNT" | tail -n 1
echo "$(load)"
