#!/bin/sh
# natsbench.sh: volanogo load's client against `nats bench` (natscli), the
# NATS project's own tool, for the same deliveries at the same rate: one
# publisher and 19 subscribers per subject, 70-byte messages (volanogo's
# chat publications are 66 to 70 bytes), each run against a fresh
# nats-server. The CPU per message of a client depends on its rate (a
# subscriber woken for each message pays a wake-up each; one that wakes to
# dozens shares it), so each round compares the two at the same rates:
#
#   turns    volanogo's turn-taking (Mark's workload: one chat a room in
#            flight, MSGS chats), then nats bench publishing the same MSGS
#            throttled to the chat rate volanogo reached (--throughput);
#   paced    volanogo paced (each of the room's 20 users a chat every
#            20/RATE s: RATE chats a second asked), then nats bench at the
#            rate volanogo reached, PACED messages each, from one publisher
#            and again from 20 (--clients 20: each publishing its own
#            messages, as the room's 20 users do, where one publisher
#            writes many a write(2)); and volanogo with --publishers 1
#            (one user of the room publishing every chat, the 19 others
#            reading: nats bench's shape) at the same rate;
#   one at a time
#            nats bench sleeping SLEEP (250us) between messages, MSGS of
#            them, then volanogo paced at the rate it reached: its
#            --throughput publishes in bursts (its subscribers read about
#            10 messages a read(2) at 3,000 a second, under strace), where
#            --sleep sends one message a wake-up, as a room taking turns;
#   flood    nats bench unthrottled, PACED messages: its own ceiling, and
#            the rate it reached, for reference.
#
# and with a third argument the same turn-taking written with nats.go
# (bench/brokers/natsgo). Client CPU per message is user + system of the
# whole client processes (nats bench: the publisher's and the 19
# subscribers') over the messages sent and received: one published and 19
# delivered a chat. volanogo's users also read their own chats' echoes
# (the chat's confirm), which it does not count: 20 deliveries a chat.
# Prints each round's figures and ratios, in alternating order, then the
# medians of the rounds.
#
#   bench/brokers/natsbench.sh VOLANOGO NATS [NATSGO]
#
# NATS is natscli's binary (go install
# github.com/nats-io/natscli/nats@v0.5.0), NATSGO bench/brokers/natsgo's
# (go build there): this script builds neither. ROUNDS (3), MSGS (20000,
# the chats of a turn-taking run), RATE (20000 chats a second, paced),
# PACED (100000, the chats of a paced or flood run), SLEEP (250us),
# ENGINE (volanogo's client engine: goroutine, the default, or epoll).
set -eu
. "$(dirname "$0")/../lib.sh"
PATH=$PATH:/usr/sbin:/usr/local/sbin # where Debian puts nats-server
if [ $# -lt 2 ] || [ $# -gt 3 ]; then
	echo "usage: $0 VOLANOGO NATS [NATSGO]" >&2
	exit 2
fi
vg=$1
nats=$2
natsgo=${3:-}
rounds=${ROUNDS:-3}
msgs=${MSGS:-20000}
rate=${RATE:-20000}
paced=${PACED:-100000}
sleep=${SLEEP:-250us}
engine=${ENGINE:-goroutine}
tmp=$(mktemp -d)
# The broker's pid is kept in a file: the measurements run in subshells.
stop() {
	if [ -s "$tmp/server.pid" ]; then
		p=$(cat "$tmp/server.pid")
		kill "$p" 2>/dev/null || true
		# Until it is gone or a zombie (started in a subshell, it is not
		# this shell's to reap), 5 s at most.
		i=0
		while [ $i -lt 100 ] && [ -e "/proc/$p" ] && ! grep -q ') Z' "/proc/$p/stat" 2>/dev/null; do
			sleep 0.05
			i=$((i + 1))
		done
		: >"$tmp/server.pid"
	fi
}
cleanup() {
	stop
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# broker: a fresh nats-server on a free loopback port, in $url.
broker() {
	stop
	p=$(port)
	nats-server -a 127.0.0.1 -p "$p" >"$tmp/server.log" 2>&1 &
	echo $! >"$tmp/server.pid"
	url=nats://127.0.0.1:$p
	i=0
	until "$nats" --server "$url" server check connection >/dev/null 2>&1 || [ $i -ge 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
}

# cpu FILE...: user + system seconds that /usr/bin/time wrote to FILEs.
cpu() { cat "$@" | awk '{ s += $1 + $2 } END { print s }'; }

# per_msg SECONDS CHATS: µs of CPU per message, 20 messages a chat.
per_msg() { awk -v c="$1" -v m="$2" 'BEGIN { printf "%.3f", c / m / 20 * 1e6 }'; }

# natsbench MSGS [THROUGHPUT [SLEEP [PUBLISHERS]]]: nats bench's µs per
# message (19 subscribers in one process, then the publishers: 1 unless
# PUBLISHERS) and its rate; throttled to THROUGHPUT messages a second
# (across the publishers), or SLEEP between messages.
natsbench() {
	broker
	/usr/bin/time -f '%U %S' -o "$tmp/sub.time" "$nats" --server "$url" bench sub volanogo --clients 19 \
		--msgs "$1" --size 70 --no-progress >"$tmp/sub.out" 2>&1 &
	sub=$!
	i=0
	until grep -q 'Starting' "$tmp/sub.out" 2>/dev/null || [ $i -ge 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	sleep 1 # the 19 subscriptions reach the server
	throttle=
	[ -z "${2:-}" ] || throttle=--throughput=$2
	[ -z "${3:-}" ] || throttle=--sleep=$3
	# shellcheck disable=SC2086 # $throttle is one argument or none
	/usr/bin/time -f '%U %S' -o "$tmp/pub.time" "$nats" --server "$url" bench pub volanogo --clients "${4:-1}" \
		--msgs "$1" --size 70 $throttle --no-progress >"$tmp/pub.out" 2>&1
	wait "$sub"
	echo "$(per_msg "$(cpu "$tmp/sub.time" "$tmp/pub.time")" "$1")" \
		"$(sed -n 's/.*\(publisher\|aggregated\) stats: \([0-9,]*\) msgs\/sec.*/\2/p' "$tmp/pub.out" | head -1 | tr -d ,)"
}

# volanogo ARGS...: volanogo load's µs per message (the whole process)
# over its chats, one room of 20, and its chat rate. PUBLISHERS (20 but
# for one row) is how many of the room's users sent -count chats each.
volanogo() {
	broker
	/usr/bin/time -f '%U %S' -o "$tmp/vg.time" "$vg" load --url "$url" -rooms 1 -runs 1 --quiet -file '' --json --engine "$engine" "$@" \
		>"$tmp/vg.json" 2>"$tmp/vg.err" || { tail -5 "$tmp/vg.err" >&2; echo "volanogo load $*" >"$tmp/failed"; }
	echo "$(per_msg "$(cpu "$tmp/vg.time")" "$(($(field count <"$tmp/vg.json") * ${PUBLISHERS:-20}))")" \
		"$(awk -v m="$(field msgs_per_sec <"$tmp/vg.json")" 'BEGIN { printf "%d", m / 20 }')"
}

echo "machine: $(nproc) processors, $(uname -sr), load average $(cut -d' ' -f1-3 /proc/loadavg); $("$nats" --version) against $(nats-server --version); volanogo load --engine $engine"
count=$((msgs / 20))
pcount=$((paced / 20))
pause=$(awk -v r="$rate" 'BEGIN { printf "%.6fs", 20 / r }')
: >"$tmp/rows"

# turns and paced: volanogo, then nats bench at the rate volanogo reached.
# shellcheck disable=SC2046 # each measurement gives two words: µs, rate
turns() {
	set -- $(volanogo -count "$count")
	vt=${1:-0} trate=${2:-1}
	set -- $(natsbench "$msgs" "$trate")
	nt=${1:-0} ntrate=${2:-0}
}
# shellcheck disable=SC2046
paced() {
	set -- $(volanogo -count "$pcount" -pause "$pause" --slo 1m)
	vp=${1:-0} vprate=${2:-1}
	set -- $(natsbench "$paced" "$vprate")
	np=${1:-0} nprate=${2:-0}
	set -- $(natsbench "$paced" "$vprate" "" 20)
	np20=${1:-0} np20rate=${2:-0}
	set -- $(PUBLISHERS=1 volanogo -count "$paced" --publishers 1 -pause "$(awk -v r="$vprate" 'BEGIN { printf "%.9fs", 1 / r }')" --slo 1m)
	vp1=${1:-0} vp1rate=${2:-0}
}

# single: nats bench sleeping SLEEP between messages (one message a
# wake-up, as a room taking turns has), then volanogo paced at its rate.
# shellcheck disable=SC2046
single() {
	set -- $(natsbench "$msgs" "" "$sleep")
	ns=${1:-0} nsrate=${2:-1}
	set -- $(volanogo -count "$count" -pause "$(awk -v r="$nsrate" 'BEGIN { printf "%.6fs", 20 / r }')" --slo 1m)
	vs=${1:-0} vsrate=${2:-0}
}

r=1
while [ "$r" -le "$rounds" ]; do
	# Odd rounds run the turn-taking pair first, even rounds the paced.
	if [ $((r % 2)) = 1 ]; then
		turns
		paced
		single
	else
		single
		paced
		turns
	fi
	# shellcheck disable=SC2046 # two words: µs, rate
	set -- $(natsbench "$paced")
	nf=${1:-0} nfrate=${2:-0}
	if [ -e "$tmp/failed" ]; then
		echo "$0: failed: $(cat "$tmp/failed")" >&2
		exit 1
	fi
	ng=0
	if [ -n "$natsgo" ]; then
		# The same turn-taking with nats.go.
		broker
		/usr/bin/time -f '%U %S' -o "$tmp/ng.time" "$natsgo" -url "$url" -rooms 1 -count "$count" >"$tmp/ng.json"
		ng=$(per_msg "$(cpu "$tmp/ng.time")" "$msgs")
	fi
	echo "round $r (µs of client CPU per message, at chats a second):"
	echo "  turns: volanogo $vt at $trate, nats bench $nt at $ntrate: volanogo/nats bench $(awk -v a="$vt" -v b="$nt" 'BEGIN { printf "%.2f", a / b }')"
	echo "  paced: volanogo $vp at $vprate, nats bench $np at $nprate: volanogo/nats bench $(awk -v a="$vp" -v b="$np" 'BEGIN { printf "%.2f", a / b }')"
	echo "  paced, 20 publishers: nats bench $np20 at $np20rate: volanogo/nats bench $(awk -v a="$vp" -v b="$np20" 'BEGIN { printf "%.2f", a / b }')"
	echo "  paced, one publisher: volanogo --publishers 1 $vp1 at $vp1rate, nats bench $np: volanogo/nats bench $(awk -v a="$vp1" -v b="$np" 'BEGIN { printf "%.2f", a / b }')"
	echo "  flood: nats bench $nf at $nfrate; nats.go taking turns $ng"
	echo "  one at a time: nats bench $ns at $nsrate, volanogo $vs at $vsrate: volanogo/nats bench $(awk -v a="$vs" -v b="$ns" 'BEGIN { printf "%.2f", a / b }')"
	echo "$vt $nt $vp $np $nf $ng $trate $vprate $nfrate $vs $ns $nsrate $np20 $np20rate $vp1 $vp1rate" >>"$tmp/rows"
	r=$((r + 1))
done
col() { awk -v c="$1" '{ print $c }' "$tmp/rows" | med; }
ratio() { awk -v a="$1" -v b="$2" '$b > 0 { print $a / $b }' "$tmp/rows"; }
rmed() { ratio "$1" "$2" | med | awk '{ printf "%.2f", $1 }'; }
echo "medians of $rounds rounds (µs per message):"
echo "  turns at $(col 7) chats/s: volanogo $(col 1), nats bench $(col 2); volanogo/nats bench $(rmed 1 2) (rounds $(ratio 1 2 | span))"
echo "  paced at $(col 8) chats/s (asked $rate): volanogo $(col 3), nats bench $(col 4); volanogo/nats bench $(rmed 3 4) (rounds $(ratio 3 4 | span))"
echo "  paced, nats bench from 20 publishers at $(col 14) msgs/s: nats bench $(col 13); volanogo/nats bench $(rmed 3 13) (rounds $(ratio 3 13 | span))"
echo "  paced, one publisher (volanogo --publishers 1) at $(col 16) chats/s: volanogo $(col 15), nats bench $(col 4); volanogo/nats bench $(rmed 15 4) (rounds $(ratio 15 4 | span))"
echo "  one at a time at $(col 12) chats/s (nats bench --sleep $sleep): volanogo $(col 10), nats bench $(col 11); volanogo/nats bench $(rmed 10 11) (rounds $(ratio 10 11 | span))"
echo "  flood at $(col 9) chats/s: nats bench $(col 5)"
[ -z "$natsgo" ] || echo "  nats.go taking turns $(col 6); volanogo/nats.go $(rmed 1 6) (rounds $(ratio 1 6 | span))"
