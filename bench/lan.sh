#!/bin/sh
# lan.sh: the network test (issue 28): volanogo serve in one network
# namespace and volanogo load in another, joined by a veth pair that tc
# shapes into a LAN (100 Mbit/s, 0.1 ms each way) and then a WAN (50 ms
# each way), with the same load on loopback beside them; one Volano
# Report over the three. Loopback hides what a network shows: the delayed
# ACKs and Nagle's waits of a real path (the report's cost table counts
# the kernel's), the round trip in every turn, the link's ceiling.
#
# Needs root. The namespaces (volanogo-lan-srv, volanogo-lan-cli) and the
# veth pair are made here and deleted at the end: the traffic never leaves
# them. A kernel without netem (CONFIG_NET_SCH_NETEM) gets the rate alone,
# from tbf, and the WAN is left out: the report then says what the path
# measured (its round trip), not what was asked.
#
#   sudo bench/lan.sh                        # 15 rooms, -count 100
#   ROOMS=5,15 RUNS=4 sudo bench/lan.sh      # the steps and the run rules
#   WAN_ROOMS=2 WAN_COUNT=10 sudo bench/lan.sh
#
# Environment: ROOMS (15), COUNT (100), RUNS (1), WAN_ROOMS (2), WAN_COUNT
# (10), DELAY (0.1ms each way), RATE (100mbit), WAN_DELAY (25ms each way:
# a 50 ms round trip), OUT (a new directory: the result documents and
# report.txt).
set -eu
cd "$(dirname "$0")/.."
if [ "$(id -u)" != 0 ]; then
	echo "lan.sh: needs root to create network namespaces" >&2
	exit 2
fi
for tool in ip tc; do
	command -v "$tool" >/dev/null || {
		echo "lan.sh: $tool is missing (iproute2)" >&2
		exit 2
	}
done
out=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/lan.XXXXXX")}
mkdir -p "$out"
bin="$out/volanogo"
go build -o "$bin" ./cmd/volanogo
srv=volanogo-lan-srv
cli=volanogo-lan-cli
srvip=10.28.0.1
pid=
cleanup() {
	if [ -n "$pid" ]; then
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	fi
	ip netns delete "$srv" 2>/dev/null || true
	ip netns delete "$cli" 2>/dev/null || true
}
# A signal (^C, a closed pipe: `lan.sh | head`) exits, and the exit
# cleans up: the server stopped, the namespaces and the pair deleted.
trap cleanup EXIT
trap 'exit 1' INT TERM HUP PIPE
ip netns add "$srv"
ip netns add "$cli"
ip -n "$srv" link add vg-srv type veth peer name vg-cli netns "$cli"
ip -n "$srv" addr add "$srvip/24" dev vg-srv
ip -n "$cli" addr add 10.28.0.2/24 dev vg-cli
for ns in "$srv" "$cli"; do
	ip -n "$ns" link set lo up
done
ip -n "$srv" link set vg-srv up
ip -n "$cli" link set vg-cli up

# shape DELAY: both ends to RATE and DELAY each way (netem), or RATE alone
# (tbf) where the kernel has no netem; says which.
netem=yes
shape() {
	for end in "$srv vg-srv" "$cli vg-cli"; do
		set -- $end "$1"
		ip netns exec "$1" tc qdisc del dev "$2" root 2>/dev/null || true
		if ! ip netns exec "$1" tc qdisc add dev "$2" root netem delay "$3" rate "${RATE:-100mbit}" 2>/dev/null; then
			netem=no
			ip netns exec "$1" tc qdisc add dev "$2" root tbf rate "${RATE:-100mbit}" burst 32kb latency 50ms
		fi
	done
}

# serve: a fresh volanogo serve in the server's namespace; sets chat and
# metrics from its ready line.
serve() {
	[ -n "$pid" ] && kill "$pid" && wait "$pid" 2>/dev/null || true
	: >"$out/serve.out"
	ip netns exec "$srv" "$bin" serve --listen "$srvip:0" --metrics-listen "$srvip:0" >"$out/serve.out" 2>"$out/serve.err" &
	pid=$!
	chat=
	i=0
	while [ -z "$chat" ] && [ "$i" -lt 100 ]; do
		sleep 0.1
		i=$((i + 1))
		chat=$(sed -n 's/.* chat=\([^ ]*\).*/\1/p' "$out/serve.out" | head -n 1)
	done
	metrics=$(sed -n 's/.* metrics=\([^ ]*\).*/\1/p' "$out/serve.out" | head -n 1)
	[ -n "$chat" ] || {
		echo "lan.sh: serve did not start in 10 s: $(cat "$out/serve.err")" >&2
		exit 1
	}
}

# load LABEL ARGS...: volanogo load in the client's namespace.
load() {
	label=$1
	shift
	ip netns exec "$cli" "$bin" load --label "$label" -runs "${RUNS:-1}" -o "$out/docs/" --quiet -file "" "$@" |
		grep -E '^(Average throughput|Connections|Delivery latency|TCP|Failure|Test failed)' | sed "s/^/  $label: /"
}

echo "machine: $(nproc) processors, $(uname -sr), load average $(cut -d' ' -f1-3 /proc/loadavg)"
shape "${DELAY:-0.1ms}"
serve
echo "LAN: ${RATE:-100mbit}, ${DELAY:-0.1ms} each way (netem: $netem), server $chat"
load "lan ${RATE:-100mbit}" -host "${chat%:*}" -port "${chat##*:}" --server-metrics "http://$metrics/metrics" \
	-rooms "${ROOMS:-15}" -count "${COUNT:-100}"
if [ "$netem" = yes ]; then
	shape "${WAN_DELAY:-25ms}"
	serve
	echo "WAN: ${WAN_DELAY:-25ms} each way"
	load "wan" -host "${chat%:*}" -port "${chat##*:}" --server-metrics "http://$metrics/metrics" \
		-rooms "${WAN_ROOMS:-2}" -count "${WAN_COUNT:-10}" --stall-timeout 60s
else
	echo "WAN: left out (no netem in this kernel)"
fi
echo "loopback (in the client's namespace):"
load "loopback" --serve -rooms "${ROOMS:-15}" -count "${COUNT:-100}"
"$bin" report --discard 0 --best 1 --of 1 "$out/docs/" | tee "$out/report.txt"
echo "documents and report in $out"
