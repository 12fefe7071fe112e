#!/bin/sh
# sitting.sh: the brokers beside volanogo serve, in one sitting: the same
# turn-taking workload under the run rules (RUNS runs a step, the first
# discarded) against a fresh nats-server, redis-server, mosquitto and
# volanogo serve (ENGINE, epoll by default) at each of SIZES rooms of 20,
# the kernel floor read before each of volanogo serve's steps (load
# --floor, recorded for the report's efficiency) and bench/floor.c's
# beside it (built here with cc -O2: its line in DIR/floor-c-N.txt), then
# each server once at MEMROOMS rooms (9,500 connections at 475) for its
# memory per connection; then, when NATS names natscli's binary, the
# client-cost comparison (natsbench.sh, in DIR/natsbench.txt); then the
# Volano Report of all of it.
#
#   bench/brokers/sitting.sh VOLANOGO [DIR]
#
# DIR (a new temporary directory by default) keeps the result documents
# and report.md. SIZES ("15 50"), COUNT (100), RUNS (4), MEMROOMS (475; 0
# leaves the step out), MEMCOUNT (2), SERVERS ("nats-server redis-server
# mosquitto volanogo"), ENGINE (volanogo serve's: epoll), CLIENT_ENGINE
# (volanogo load's, every server: goroutine, or epoll), NATS and NATSGO
# (natsbench.sh's second and third arguments; none: no comparison).
set -eu
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
	echo "usage: $0 VOLANOGO [DIR]" >&2
	exit 2
fi
vg=$1
dir=${2:-$(mktemp -d)}
mkdir -p "$dir"
sizes=${SIZES:-15 50}
count=${COUNT:-100}
runs=${RUNS:-4}
memrooms=${MEMROOMS:-475}
memcount=${MEMCOUNT:-2}
servers=${SERVERS:-nats-server redis-server mosquitto volanogo}
engine=${ENGINE:-epoll}
client=${CLIENT_ENGINE:-goroutine}
nats=${NATS:-}
natsgo=${NATSGO:-}
here=$(dirname "$0")
floorc=$(mktemp -d)
trap 'rm -rf "$floorc"' EXIT
trap 'exit 1' INT TERM
cc -O2 -o "$floorc/floor" "$here/../floor.c" -lpthread

# load SERVER ARGS...: one load against a fresh SERVER per run.
load() {
	s=$1
	shift
	case $s in
	volanogo)
		"$vg" load --engine "$client" --server-cmd "$vg serve --engine $engine --listen 127.0.0.1:{port} --metrics-listen 127.0.0.1:0" \
			--label "volanogo serve --engine $engine" "$@" ;;
	*)
		"$vg" load --engine "$client" --serve "$s" "$@" ;;
	esac
}

echo "sitting in $dir (volanogo load --engine $client): $(uptime)"
for n in $sizes; do
	for s in $servers; do
		floor=
		if [ "$s" = volanogo ]; then
			floor=--floor
			# floor.c: the C floor of the same traffic, beside load --floor's.
			"$floorc/floor" "$n" 20 "$count" 2>&1 | tee "$dir/floor-c-$n.txt" | sed "s/^/== floor.c, $n rooms: /"
		fi
		echo "== $s, $n rooms"
		load "$s" -rooms "$n" -count "$count" -runs "$runs" $floor -o "$dir/$s-$n/" -file '' --quiet |
			grep -E '^(Average throughput|Server CPU|Client CPU|Fan-out|Integrity|Failure)|^  (run [0-9]+:|score)' || true
	done
done
if [ "$memrooms" -gt 0 ]; then
	for s in $servers; do
		echo "== $s, $memrooms rooms (memory per connection)"
		load "$s" -rooms "$memrooms" -count "$memcount" -runs 1 -o "$dir/$s-mem/" -file '' --quiet |
			grep -E '^(Server CPU|Connections|Integrity|Failure)' || true
	done
fi
if [ -n "$nats" ]; then
	echo "== the client's cost on NATS beside nats bench (natsbench.sh)"
	# shellcheck disable=SC2086 # NATSGO: one argument or none
	ENGINE=$client "$here/natsbench.sh" "$vg" "$nats" $natsgo | tee "$dir/natsbench.txt"
fi
echo "ended: $(uptime)"
"$vg" report --format markdown "$dir"/*/ >"$dir/report.md"
echo "the report: $dir/report.md"
