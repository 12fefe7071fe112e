#!/bin/sh
# test.sh: serve.sh, mark.sh and pairs.sh against stand-ins, so that no
# Java is needed: a fake `java` that, asked for the original server
# (COM.volano.Main PROPERTIES), checks the properties serve.sh wrote and
# execs `volanogo serve` on the port they name, and, asked for Mark
# (COM.volano.Mark OPTION...), execs `volanogo load` with Mark's options
# (volanogo load takes them as Mark spells them and prints Mark's lines).
#
#   bench/original/test.sh            # builds volanogo with go build
#   VOLANOGO=/path/volanogo bench/original/test.sh
#
# Exit status 0 when every check passed. Runs shellcheck on the scripts
# when it is installed.
set -eu
unset VOLANO_DIR JAVA VOLANO_JAVA_OPTS
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/original-test.XXXXXX")
# pid is a server the test started and has not yet waited for: only that
# one is killed on the way out (a waited-for id may already be another
# process's).
pid=""
cleanup() {
	if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM

fails=0
fail() {
	echo "FAIL: $*" >&2
	fails=$((fails + 1))
}
ok() { echo "ok: $*"; }

if command -v shellcheck >/dev/null 2>&1; then
	if shellcheck "$here"/*.sh; then ok "shellcheck"; else fail "shellcheck"; fi
fi

if [ -n "${VOLANOGO:-}" ]; then
	bin=$VOLANOGO
else
	bin=$tmp/volanogo
	(cd "$here/../.." && go build -o "$bin" ./cmd/volanogo)
fi

# A built tree of the original, as far as the scripts can tell.
tree=$tmp/volano
mkdir -p "$tree/classes" "$tree/lib" "$tree/conf"
printf '%s\n' 'server.port=8000' 'client.authentication=true' 'delay.chat=1000' >"$tree/conf/properties.txt"

mkdir -p "$tmp/bin"
cat >"$tmp/bin/java" <<FAKE
#!/bin/sh
# The stand-in for java: see test.sh.
set -eu
volanogo='$bin'
log='$tmp/java.log'
FAKE
cat >>"$tmp/bin/java" <<'FAKE'
echo "java $*" >>"$log"
class="" cp=""
while [ $# -gt 0 ]; do
	case $1 in
	-cp) cp=$2; shift 2 ;;
	COM.volano.*) class=$1; shift; break ;;
	*) shift ;;
	esac
done
case $cp in *"/classes:"*"/lib/*"*) ;; *) echo "fake java: odd class path $cp" >&2; exit 3 ;; esac
case $class in
COM.volano.Main)
	props=$1
	last() { sed -n "s/^$1=//p" "$props" | tail -n 1; }
	for want in client.authentication=false delay.chat=0 servlet.port=0 server.timeout=0; do
		if [ "$(last "${want%%=*}")" != "${want#*=}" ]; then
			echo "fake java: $props does not end with $want" >&2
			exit 3
		fi
	done
	exec "$volanogo" serve --listen "$(last server.host):$(last server.port)" --metrics-listen ""
	;;
COM.volano.Mark)
	exec "$volanogo" load "$@" --quiet
	;;
esac
echo "fake java: unknown class $class" >&2
exit 3
FAKE
chmod +x "$tmp/bin/java"
JAVA=$tmp/bin/java
export JAVA

# Usage errors exit 2.
for cmd in "serve.sh" "serve.sh --volano-dir $tmp/nothing" "serve.sh --volano-dir $tree --port x" \
	"mark.sh -run" "pairs.sh" "pairs.sh --volano-dir $tree --pairs nope --volanogo $bin"; do
	status=0
	# shellcheck disable=SC2086 # cmd is a command line of simple words
	sh "$here"/$cmd >/dev/null 2>&1 || status=$?
	if [ "$status" = 2 ]; then ok "exit 2: $cmd"; else fail "$cmd exited $status, want 2"; fi
done

# serve.sh on a port of its own: it listens there, keeps the properties in
# --logs, and SIGTERM stops it.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null || echo 18765)
"$here/serve.sh" --volano-dir "$tree" --port "$port" --logs "$tmp/logs" >"$tmp/serve.out" 2>&1 &
spid=$!
pid=$spid
i=0
until grep -q "listening" "$tmp/serve.out" 2>/dev/null; do
	i=$((i + 1))
	if [ "$i" -gt 100 ] || ! kill -0 "$spid" 2>/dev/null; then break; fi
	sleep 0.1
done
if grep -q "chat=127.0.0.1:$port" "$tmp/serve.out"; then ok "serve.sh listens on its port"; else fail "serve.sh: $(cat "$tmp/serve.out")"; fi
if grep -q "^server.port=$port" "$tmp/logs/properties.txt"; then ok "serve.sh wrote the port"; else fail "serve.sh: no server.port=$port"; fi
if grep -q -- "-Dinstall.root=$tree" "$tmp/java.log"; then ok "serve.sh sets install.root"; else fail "serve.sh: no install.root in $(cat "$tmp/java.log")"; fi
kill "$spid"
status=0
wait "$spid" || status=$?
pid=""
if [ "$status" = 0 ]; then ok "serve.sh stops on SIGTERM"; else fail "serve.sh exited $status on SIGTERM"; fi

# Without --logs, the temporary directory goes with the server.
TMPDIR=$tmp/t
export TMPDIR
mkdir -p "$TMPDIR"
"$here/serve.sh" --volano-dir "$tree" --port "$port" >"$tmp/serve2.out" 2>&1 &
spid=$!
pid=$spid
i=0
until grep -q "listening" "$tmp/serve2.out" 2>/dev/null || [ "$i" -gt 100 ]; do i=$((i + 1)); sleep 0.1; done
if [ -n "$(ls "$TMPDIR")" ]; then ok "serve.sh makes a directory"; else fail "serve.sh made no directory"; fi
kill "$spid"
wait "$spid" || true
pid=""
i=0
while [ -n "$(ls "$TMPDIR")" ] && [ "$i" -lt 50 ]; do i=$((i + 1)); sleep 0.1; done
if [ -z "$(ls "$TMPDIR")" ]; then ok "serve.sh removes its directory"; else fail "serve.sh left $(ls "$TMPDIR")"; fi
unset TMPDIR

# The four pairs, each run against a fresh server, then the report.
status=0
"$here/pairs.sh" --volano-dir "$tree" --volanogo "$bin" --out "$tmp/out" --rooms 2 --count 5 --runs 2 \
	-- --stall-timeout 30s >"$tmp/pairs.out" 2>&1 || status=$?
if [ "$status" = 0 ]; then ok "pairs.sh"; else fail "pairs.sh exited $status: $(tail -n 20 "$tmp/pairs.out")"; fi
for p in original mark-serve load-original volanogo; do
	n=$(find "$tmp/out/$p" -name '*.json' | wc -l)
	if [ "$n" -eq 2 ]; then ok "$p: 2 documents"; else fail "$p: $n documents, want 2"; fi
done
for label in "Mark -> VOLANO 2.13.4" "Mark -> volanogo serve" "volanogo load -> VOLANO 2.13.4" "volanogo load -> volanogo serve"; do
	if grep -q -- "$label" "$tmp/out/report.md"; then ok "report: $label"; else fail "report.md lacks $label"; fi
done
if grep -q "COM.volano.Mark -run -host 127.0.0.1 -port [0-9]* -rooms 2 -users 20 -count 5 -start 1 -file /dev/null" "$tmp/java.log"; then
	ok "mark.sh passes Mark's options"
else
	fail "mark.sh: $(grep Mark "$tmp/java.log" | head -n 1)"
fi

if [ "$fails" -gt 0 ]; then
	echo "$fails checks failed" >&2
	exit 1
fi
echo "all checks passed"
