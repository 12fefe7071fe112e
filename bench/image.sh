#!/usr/bin/env bash
# image.sh: runs the image that tools/image builds in a real container
# runtime. It builds the image for this machine's architecture, loads its
# OCI layout into podman, starts `volanogo serve` in one container and
# `volanogo load` in another on a podman network of its own, and checks
# that load printed a score with the server's CPU and exited 0, and that
# serve, stopped, exited 0. Then wss:// inside the image: tlsproxy (a TLS
# terminator with a CA it makes) runs in the server container's network
# namespace, and load dialling wss://srv:8443/chat must fail to verify the
# certificate against the image's CA bundle ("signed by unknown
# authority": the bundle was read, the CA is not in it) and pass with that
# CA as its SSL_CERT_FILE. Traffic stays on the podman network it creates.
#
#   bench/image.sh               # needs podman (apt-get install podman) and root
#   RUNTIME=crun bench/image.sh  # the OCI runtime (default: runc when installed)
#
# On the development machine podman's default runtime, crun, refuses its
# hybrid cgroup v1 hierarchy, and no runtime may set the containers'
# default limits (1048576 files, the host's processes): so runc (apt-get
# install runc), and limits that this test's 40 connections need.
# Without podman it says so and exits 0. Exit status 1 when a check failed.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v podman >/dev/null 2>&1; then
	echo "image.sh: podman not installed (apt-get install podman); skipped" >&2
	exit 0
fi
tag=image-test-$$
img=localhost/volanogo:$tag
net=volanogo-$tag
srv=volanogo-srv-$tag
# Lower case: podman names an image pulled from an OCI layout by its path.
tmp=${TMPDIR:-/tmp}/volanogo-image-test-$$
mkdir -m 700 "$tmp"
proxy=""
cleanup() {
	if [ -n "$proxy" ]; then kill "$proxy" 2>/dev/null || true; fi
	podman rm -f -t 0 "$srv" >/dev/null 2>&1 || true
	podman network rm -f "$net" >/dev/null 2>&1 || true
	# By id: the pull named the image after its layout's path too.
	if [ -s "$tmp/id" ]; then podman rmi -f "$(cat "$tmp/id")" >/dev/null 2>&1 || true; fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM
runtime=${RUNTIME:-$(command -v runc >/dev/null 2>&1 && echo runc || true)}
prun=(podman ${runtime:+--runtime "$runtime"} run --ulimit nofile=4096:4096 --ulimit nproc=4096:4096)
fails=0
check() { # check NAME CONDITION-EXIT-STATUS
	if [ "$2" = 0 ]; then echo "ok   $1"; else echo "FAIL $1"; fails=$((fails + 1)); fi
}

arch=$(go env GOARCH)
go -C tools/image run . -o "$tmp/layout" -version "$tag" -platforms "linux/$arch" 2>/dev/null
podman pull -q "oci:$tmp/layout:$tag" >"$tmp/id"
podman tag "$(cat "$tmp/id")" "$img"
podman network create "$net" >/dev/null
"${prun[@]}" -d --name "$srv" --network "$net" "$img" serve --listen :8000 --ws-listen :8080 --metrics-listen :8002 >/dev/null

# Ready: serve prints its listening line (a deadline, never a bare sleep).
for _ in $(seq 1 100); do
	if podman logs "$srv" 2>&1 | grep -q "listening"; then break; fi
	sleep 0.1
done
podman logs "$srv" 2>&1 | grep -q "listening" && r=0 || r=1
check "serve is listening in its container" $r

set +e
timeout 300 "${prun[@]}" --rm --network "$net" "$img" load --host "$srv" --port 8000 -rooms 2 -count 50 -runs 2 \
	--server-metrics "http://$srv:8002/metrics" -file "" >"$tmp/load.out" 2>&1
code=$?
set -e
cat "$tmp/load.out" | sed -n '/^Summary/,$p'
check "load exits 0" "$([ "$code" = 0 ] && echo 0 || echo 1)"
# The summary says msg/s since 8f4cb70; -v and older builds, messages per second.
grep -Eq "score .* (msg/s|messages per second)|run 2: [0-9]+ (msg/s|messages per second)" "$tmp/load.out" && r=0 || r=1
check "load prints a score" $r
grep -Eq "Server CPU += [0-9.]+ µs per message|server [0-9.]+(,| µs)" "$tmp/load.out" && r=0 || r=1
check "load prints the server's CPU per message (from its metrics)" $r

# wss:// through a TLS terminator in the server's network namespace.
go build -o "$tmp/tlsproxy" ./bench/image/tlsproxy
pid=$(podman inspect -f '{{.State.Pid}}' "$srv")
nsenter -t "$pid" -n "$tmp/tlsproxy" -listen :8443 -to 127.0.0.1:8080 -name "$srv" -ca "$tmp/ca.pem" -duration 5m >"$tmp/proxy.out" 2>&1 &
proxy=$!
for _ in $(seq 1 100); do
	if [ -s "$tmp/ca.pem" ]; then break; fi
	sleep 0.1
done
wss() {
	timeout 120 "${prun[@]}" --rm --network "$net" "$@" "$img" load --transport ws --url "wss://$srv:8443/chat" \
		-rooms 1 -count 20 -runs 1 -file "" >"$tmp/wss.out" 2>&1
}
set +e
wss
code=$?
set -e
grep -m1 -o "certificate signed by unknown authority" "$tmp/wss.out" || true
check "wss:// with the image's CA bundle rejects an unknown CA (exit $code)" \
	"$([ "$code" = 1 ] && grep -q "certificate signed by unknown authority" "$tmp/wss.out" && echo 0 || echo 1)"
set +e
wss -v "$tmp/ca.pem:/etc/volanogo-test-ca.pem:ro" -e SSL_CERT_FILE=/etc/volanogo-test-ca.pem
code=$?
set -e
grep -m1 "Average throughput" "$tmp/wss.out" || true
check "wss:// verifies a certificate of a CA it trusts (exit $code)" "$([ "$code" = 0 ] && echo 0 || echo 1)"

podman stop -t 30 "$srv" >/dev/null
code=$(podman wait "$srv" 2>/dev/null || podman inspect -f '{{.State.ExitCode}}' "$srv")
check "serve exits 0 when stopped (SIGTERM drains it) (exit $code)" "$([ "$code" = 0 ] && echo 0 || echo 1)"

echo "$fails failed"
[ "$fails" = 0 ]
