#!/bin/sh
# floors-compare.sh: two builds' servers against both kernel floors, epoll
# and io_uring, measured in the same rounds. Each round measures
# `volanogo floor --engine epoll` and `--engine uring` (one before the
# runs, one after, alternating which), then runs the loopback test against
# a fresh `serve` of each build (alternating which goes first), the client
# always the first build's `load`. Prints each run's server CPU per message
# and its ratio to each floor, and the two builds' ratio. For the io_uring
# engine, whose goal is a ratio to the epoll floor while its own kernel
# floor is the io_uring one: a gap to the io_uring floor is the server's,
# the floors' ratio (u/e) is the machine's.
#
#   bench/server/floors-compare.sh NEW OLD                 # 475 rooms x 10, uring, 3 rounds
#   ROOMS=15 COUNT=100 ROUNDS=5 bench/server/floors-compare.sh NEW OLD
#
# NEW and OLD are volanogo binaries; ENGINE is the servers' engine (uring),
# CLIENT_ENGINE the client's (epoll), NEW_ARGS more flags for NEW's serve.
# Each floor and run first pauses for the last one's TIME_WAIT sockets
# (lib.sh's settle: 5 s at most; SETTLE=0 does not pause).
set -eu
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/../lib.sh"
ab_args floors-compare.sh "$@"
rooms=${ROOMS:-475}
count=${COUNT:-10}
rounds=${ROUNDS:-3}
engine=${ENGINE:-uring}
ce=${CLIENT_ENGINE:-epoll}

# floor ENGINE: the kernel floor's server µs per message.
floor() {
	settle
	"$new" floor --rooms "$rooms" --count "$count" --engine "$1" --json | field server_cpu_per_message_us
}

echo "$rooms rooms x $count, server --engine $engine, client $new --engine $ce; load average $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$rounds"); do
	if [ $((r % 2)) = 1 ]; then
		fe=$(floor epoll)
		a=$(server_run "$new" "${NEW_ARGS:-}")
		b=$(server_run "$old")
		fu=$(floor uring)
	else
		fu=$(floor uring)
		b=$(server_run "$old")
		a=$(server_run "$new" "${NEW_ARGS:-}")
		fe=$(floor epoll)
	fi
	if [ -z "$fe" ] || [ -z "$fu" ] || [ -z "$a" ] || [ -z "$b" ]; then
		echo "round $r: a run gave no figure (floors epoll '$fe', uring '$fu'; new '$a', old '$b')"
		continue
	fi
	echo "$r $fe $fu $a $b $(cut -d' ' -f1 /proc/loadavg)" | awk '{
		printf "round %s: floors epoll %.2f us, uring %.2f (u/e %.3f); new %.2f us: /uring %.3f, /epoll %.3f; old %.2f us: /uring %.3f, /epoll %.3f; new/old %.3f (load %s)\n",
			$1, $2, $3, $3 / $2, $4, $4 / $3, $4 / $2, $5, $5 / $3, $5 / $2, $4 / $5, $6 }'
done
