#!/bin/sh
# engines.sh: the engine matrix, each figure as a ratio to the kernel floor
# measured in the same sitting (machines of one kind differ several times
# in the cost of a system call, so only ratios compare).
#
# At each size (rooms:count) it measures the floor (`volanogo floor`), then
# runs `volanogo load` against a fresh `volanogo serve` for every pair of
# server engine and client engine, ROUNDS times, alternating, and prints
# per run: msg/s, server and client CPU per message, and their ratio to the
# floor's (1.00 = costs what the floor costs; lower is better). The last
# lines give the medians per pair.
#
#   bench/engines.sh                                  # 15 rooms x 200, 475 x 10, 950 x 5
#   SIZES="15:200" ROUNDS=5 bench/engines.sh
#   CLIENT_ENGINES="goroutine epoll" SERVER_ENGINES="goroutine epoll" bench/engines.sh
#
# 950 rooms are 19,000 connections: the server and the client each hold one
# end, within the 20,000 open files of a process; the floor then runs its
# clients in a child process.
set -eu
cd "$(dirname "$0")/.."
rounds=${ROUNDS:-3}
sizes=${SIZES:-"15:200 475:10 950:5"}
clients=${CLIENT_ENGINES:-"goroutine epoll"}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/engines.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
go build -o "$tmp/volanogo" ./cmd/volanogo
vg=$tmp/volanogo
# The server engines this build has ('serve --engine' may not exist yet).
if [ -z "${SERVER_ENGINES:-}" ]; then
	if "$vg" serve --help 2>&1 | grep -q -- '--engine'; then
		SERVER_ENGINES="goroutine epoll"
	else
		SERVER_ENGINES="goroutine"
	fi
fi

# field NAME: the number after "NAME": in the JSON on standard input.
field() { sed -n "s/.*\"$1\": *\([0-9.eE+-]*\).*/\1/p" | head -n 1; }

echo "machine: $(nproc) processors, $(uname -sr), $(go env GOVERSION), load average $(cut -d' ' -f1-3 /proc/loadavg)"
: >"$tmp/rows"
for size in $sizes; do
	rooms=${size%:*}
	count=${size#*:}
	"$vg" floor --rooms "$rooms" --count "$count" --json >"$tmp/floor.json"
	fs=$(field server_cpu_per_message_us <"$tmp/floor.json")
	fc=$(field client_cpu_per_message_us <"$tmp/floor.json")
	ft=$(field throughput <"$tmp/floor.json")
	printf '\n%s rooms x %s: floor %.0f msg/s, server %.2f us, client %.2f us per message\n' "$rooms" "$count" "$ft" "$fs" "$fc"
	printf '%-22s %10s %10s %7s %10s %7s\n' "server/client" "msg/s" "server us" "/floor" "client us" "/floor"
	r=1
	while [ "$r" -le "$rounds" ]; do
		for se in $SERVER_ENGINES; do
			for ce in $clients; do
				serve="$vg serve --listen 127.0.0.1:{port} --metrics-listen 127.0.0.1:0"
				if [ "$se" != goroutine ]; then
					serve="$serve --engine $se"
				fi
				if ! "$vg" load --server-cmd "$serve" -rooms "$rooms" -count "$count" -runs 1 \
					--engine "$ce" --json --quiet -file "" >"$tmp/run.json" 2>"$tmp/run.err"; then
					echo "$se/$ce: the run failed:" >&2
					tail -n 5 "$tmp/run.err" >&2
					continue
				fi
				ms=$(field msgs_per_sec <"$tmp/run.json")
				ss=$(field server_cpu_per_msg_us <"$tmp/run.json")
				cs=$(field client_cpu_per_msg_us <"$tmp/run.json")
				line=$(awk -v p="$se/$ce" -v ms="$ms" -v ss="${ss:-0}" -v cs="${cs:-0}" -v fs="$fs" -v fc="$fc" \
					'BEGIN { printf "%-22s %10.0f %10.2f %7.2f %10.2f %7.2f", p, ms, ss, ss / fs, cs, cs / fc }')
				echo "$line"
				echo "$rooms $line" >>"$tmp/rows"
			done
		done
		r=$((r + 1))
	done
done

echo
echo "medians (rooms, server/client engines: msg/s, server /floor, client /floor):"
awk '{ k = $1 " " $2; n[k]++; ms[k, n[k]] = $3; sr[k, n[k]] = $5; cr[k, n[k]] = $7 }
function med(a, k, m,   i, j, t, v) {
	for (i = 1; i <= m; i++) v[i] = a[k, i]
	for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
	return (m % 2) ? v[(m + 1) / 2] : (v[m / 2] + v[m / 2 + 1]) / 2
}
END { for (k in n) printf "%-28s %10.0f %7.2f %7.2f\n", k, med(ms, k, n[k]), med(sr, k, n[k]), med(cr, k, n[k]) }' "$tmp/rows" | sort -n
