# lib.sh: shared by the scripts of bench/server (sourced, not run).
# Builds volanogo and the attack tool into $OUT, starts `volanogo serve`
# on a loopback port, reads its RSS and metrics, and stops it.
# VOLANOGO=path serves with that build instead (an A/B against another
# commit's binary).
set -eu
cd "$(dirname "$0")/../.."
OUT=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/bench-server.XXXXXX")}
mkdir -p "$OUT"
if [ -n "${VOLANOGO:-}" ]; then
	[ "$VOLANOGO" -ef "$OUT/volanogo" ] || cp "$VOLANOGO" "$OUT/volanogo"
else
	go build -o "$OUT/volanogo" ./cmd/volanogo
fi
go build -o "$OUT/attack" ./bench/server/attack
PORT=${PORT:-18000}
MPORT=${MPORT:-18002}
ADDR=127.0.0.1:$PORT
SP=

# start_server ARGS...: volanogo serve on $ADDR, metrics on $MPORT, log in
# $OUT/serve.log, open-files limit $NOFILE if set; waits for the ready line.
start_server() {
	sh -c 'ulimit -n "$0" && exec "$@"' "${NOFILE:-$(ulimit -n)}" \
		"$OUT/volanogo" serve --listen "$ADDR" --metrics-listen "127.0.0.1:$MPORT" "$@" \
		>"$OUT/serve.out" 2>"$OUT/serve.log" &
	SP=$!
	trap 'stop_server' EXIT
	for _ in $(seq 100); do
		grep -q listening "$OUT/serve.out" 2>/dev/null && return 0
		sleep 0.1
	done
	echo "server did not start" >&2
	cat "$OUT/serve.log" >&2
	exit 1
}

stop_server() {
	if [ -n "$SP" ] && kill -0 "$SP" 2>/dev/null; then
		kill -TERM "$SP"
		wait "$SP" || true
	fi
	SP=
}

# rss_kb: the server's resident set, in KiB.
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$SP/status"; }

# metric NAME_WITH_LABELS: one value from /metrics (0 when absent).
metric() {
	curl -s "http://127.0.0.1:$MPORT/metrics" | awk -v m="$1" '$1 == m {print $2; f=1} END {if (!f) print 0}'
}

load() { uptime | sed 's/.*load average/load average/'; }

# cpu_s: the server's CPU time so far (user and system), in seconds.
cpu_s() { awk -v hz="$(getconf CLK_TCK)" '{printf "%.2f\n", ($14 + $15) / hz}' "/proc/$SP/stat"; }
