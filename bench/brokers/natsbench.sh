#!/bin/sh
# natsbench.sh: volanogo load's client against `nats bench` (natscli), the
# NATS project's own tool, for the same deliveries: one publisher and 19
# subscribers per subject, 70-byte messages (volanogo's chat publications
# are 66 to 70 bytes), each against a fresh nats-server, in alternation
# over ROUNDS rounds; and, with a third argument, against the same
# turn-taking written with nats.go (bench/brokers/natsgo). Prints each
# one's client CPU per message (user + system of the whole client process
# over the messages sent and received: MSGS published, 19 x MSGS
# delivered) and the ratios, with the medians.
#
#   bench/brokers/natsbench.sh VOLANOGO NATS [NATSGO]
#
# NATS is natscli's binary (go install
# github.com/nats-io/natscli/nats@v0.5.0), NATSGO bench/brokers/natsgo's
# (go build there): this script builds neither. ROUNDS (3), MSGS (20000,
# the messages published per run), ROOMS (1: one subject, as nats bench
# has; 15 spreads the same messages over 15 rooms of 20, 15 subjects).
# volanogo's users take turns, one chat a room in flight (Mark's
# workload), each delivery a wake-up of its reader; nats bench publishes
# as fast as it can, and its subscribers read many messages a wake-up.
# volanogo's and natsgo's clients also read their own chats' echoes (the
# chat's confirm): 20 deliveries a chat where nats bench counts 19.
set -eu
. "$(dirname "$0")/../lib.sh"
if [ $# -lt 2 ] || [ $# -gt 3 ]; then
	echo "usage: $0 VOLANOGO NATS [NATSGO]" >&2
	exit 2
fi
vg=$1
nats=$2
natsgo=${3:-}
rounds=${ROUNDS:-3}
msgs=${MSGS:-20000}
rooms=${ROOMS:-1}
tmp=$(mktemp -d)
pid=
cleanup() {
	if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# broker: a fresh nats-server on a free loopback port, in $url.
broker() {
	if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
	p=$(port)
	nats-server -a 127.0.0.1 -p "$p" >"$tmp/server.log" 2>&1 &
	pid=$!
	url=nats://127.0.0.1:$p
	i=0
	until "$nats" --server "$url" server check connection >/dev/null 2>&1 || [ $i -ge 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
}

# cpu FILE: user + system seconds that /usr/bin/time wrote to FILE.
cpu() { awk '{ s += $1 + $2 } END { print s }' "$1"; }

per_msg() { awk -v c="$1" -v m="$2" 'BEGIN { printf "%.3f", c / m * 1e6 }'; }

total=$((msgs * 20))
: >"$tmp/rows"
r=1
while [ "$r" -le "$rounds" ]; do
	# nats bench: 19 subscribers (one process), then the publisher.
	broker
	/usr/bin/time -f '%U %S' -o "$tmp/sub.time" "$nats" --server "$url" bench sub volanogo --clients 19 \
		--msgs "$msgs" --size 70 --no-progress >"$tmp/sub.out" 2>&1 &
	sub=$!
	i=0
	until grep -q 'Starting' "$tmp/sub.out" 2>/dev/null || [ $i -ge 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	sleep 1 # the 19 subscriptions reach the server
	/usr/bin/time -f '%U %S' -o "$tmp/pub.time" "$nats" --server "$url" bench pub volanogo --clients 1 \
		--msgs "$msgs" --size 70 --no-progress >"$tmp/pub.out" 2>&1
	wait "$sub"
	nb=$(per_msg "$(cat "$tmp/sub.time" "$tmp/pub.time" | cpu /dev/stdin)" "$total")

	# volanogo: the same messages as chats, rooms of 20 taking turns.
	broker
	count=$((msgs / rooms / 20))
	/usr/bin/time -f '%U %S' -o "$tmp/vg.time" "$vg" load --url "$url" -rooms "$rooms" -count "$count" \
		-runs 1 --quiet -file '' --json >"$tmp/vg.json" 2>"$tmp/vg.err" || { cat "$tmp/vg.err" >&2; exit 1; }
	sent=$((rooms * 20 * count * 20))
	vgw=$(per_msg "$(cpu "$tmp/vg.time")" "$sent")
	vgt=$(field client_cpu_per_msg_us <"$tmp/vg.json")
	ng=0
	if [ -n "$natsgo" ]; then
		# The same turn-taking with nats.go.
		broker
		/usr/bin/time -f '%U %S' -o "$tmp/ng.time" "$natsgo" -url "$url" -rooms "$rooms" -count "$count" >"$tmp/ng.json"
		ng=$(per_msg "$(cpu "$tmp/ng.time")" "$sent")
	fi
	echo "round $r: nats bench $nb µs, nats.go taking turns $ng µs, volanogo $vgw µs (timed phase alone $vgt µs) per message"
	echo "$vgw $nb $ng" >>"$tmp/rows"
	r=$((r + 1))
done
awk -v n="$(awk '{ print $2 }' "$tmp/rows" | med)" -v v="$(awk '{ print $1 }' "$tmp/rows" | med)" -v g="$(awk '{ print $3 }' "$tmp/rows" | med)" \
	-v vn="$(awk '{ print $1 / $2 }' "$tmp/rows" | med)" -v vg="$(awk '$3 > 0 { print $1 / $3 }' "$tmp/rows" | med)" \
	'BEGIN { printf "medians: nats bench %.3f µs, nats.go taking turns %.3f µs, volanogo %.3f µs per message; volanogo/nats bench %.2f, volanogo/nats.go %.2f\n", n, g, v, vn, vg }'
