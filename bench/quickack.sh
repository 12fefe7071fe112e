#!/bin/sh
# quickack.sh: what the delayed-ACK timer costs a large turn-taking run on
# loopback (README, "Delayed ACKs on loopback").
#
# Needs root (it creates a network namespace; the machine's own routes are
# not touched). Builds volanogo, creates the namespace volanogo-quickack
# with its own loopback, and alternates runs there with the loopback route
# as the kernel sets it and with `quickack 1` on it, printing each run's
# score, CPU per message and the kernel's TCP counters. The namespace is
# deleted at the end.
#
#   sudo bench/quickack.sh                   # 950 rooms, -count 10, 2 pairs
#   PAIRS=3 sudo bench/quickack.sh -rooms 500  # any other load option
set -eu
cd "$(dirname "$0")/.."
if [ "$(id -u)" != 0 ]; then
	echo "quickack.sh: needs root to create a network namespace" >&2
	exit 2
fi
out=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/quickack.XXXXXX")}
mkdir -p "$out"
bin="$out/volanogo"
go build -o "$bin" ./cmd/volanogo
ns=volanogo-quickack
ip netns add "$ns"
trap 'ip netns delete "$ns"' EXIT
ip netns exec "$ns" ip link set lo up
route() {
	# $1: "" (the kernel's default) or "quickack 1". Both local routes:
	# 127.0.0.1 has its own, more specific than 127.0.0.0/8.
	for dst in 127.0.0.0/8 127.0.0.1; do
		ip netns exec "$ns" ip route change local "$dst" dev lo proto kernel \
			scope host src 127.0.0.1 table local $1
	done
}
if [ $# -eq 0 ]; then
	set -- -rooms 950 -count 10
fi
echo "machine: $(nproc) processors, $(uname -sr), load average $(cut -d' ' -f1-3 /proc/loadavg)"
i=0
while [ "$i" -lt "${PAIRS:-2}" ]; do
	i=$((i + 1))
	for mode in default quickack; do
		if [ "$mode" = quickack ]; then route "quickack 1"; else route ""; fi
		echo "== pair $i, loopback route: $mode"
		ip netns exec "$ns" "$bin" load --serve -runs 1 -file "" --quiet \
			-o "$out/$mode-$i.json" "$@" |
			grep -E '^(Average throughput|Elapsed|Client CPU|Server CPU|TCP|Failure|Test)' || true
	done
done
echo
echo "documents and binary in $out"
