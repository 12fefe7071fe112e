#!/bin/sh
# markpair.sh: the Volano Report's loopback test on this machine, in one go.
#
# Builds volanogo, then runs `volanogo load --serve -count 100` three times
# (50 rooms x 20 users x 100 messages = 2,000,000 messages a run), each run
# against a fresh `volanogo serve` on a free loopback port, and prints every
# run's score with the client's and the server's CPU per message, the median
# and the average of the best two.
#
#   bench/markpair.sh                  # three runs
#   RUNS=5 bench/markpair.sh           # five runs
#   PROFILE=1 bench/markpair.sh        # also a CPU profile of the client
#   bench/markpair.sh -rooms 15        # any other load option
#
# The result documents and the profile go to $OUT (default: a temporary
# directory, printed at the end).
set -eu
cd "$(dirname "$0")/.."
out=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/markpair.XXXXXX")}
mkdir -p "$out"
bin="$out/volanogo"
go build -o "$bin" ./cmd/volanogo
profile=""
if [ "${PROFILE:-}" != "" ]; then
	profile="--cpuprofile=$out/client.prof"
fi
echo "machine: $(nproc) processors, $(uname -sr), load average $(cut -d' ' -f1-3 /proc/loadavg)"
"$bin" load --serve -runs "${RUNS:-3}" --discard 0 -count 100 -file "$out/volano-mark.log" \
	-o "$out/" --quiet $profile "$@" | grep -E '^(Rooms|Average throughput|Elapsed|Client CPU|Server CPU|Failure|Test|Summary|  )' || true
if [ -n "$profile" ]; then
	echo
	echo "client profile ($out/client.prof), top 15:"
	go tool pprof -top -nodecount=15 "$bin" "$out/client.prof" 2>/dev/null | sed -n '/flat%/,$p'
fi
echo
echo "documents, log and binary in $out"
