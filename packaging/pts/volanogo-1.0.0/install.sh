#!/bin/sh
# Installs the release's static binary from the archive that the Phoronix
# Test Suite downloaded (downloads.xml) into bin/, and writes the test's
# executable, volanogo: one trial of the Volano Report's run rule, 4 runs
# of `volanogo load` each against a fresh server on loopback (--serve), the
# first discarded (a cold server), the result the counted runs' mean
# throughput in the JSON line of --json in $LOG_FILE
# (results-definition.xml). PTS repeats the trial TimesToRun times.
set -e
case $(uname -m) in
x86_64) arch=amd64 ;;
aarch64 | arm64) arch=arm64 ;;
*) echo "volanogo: no release for $(uname -m)" >&2; exit 1 ;;
esac
mkdir -p bin
tar -xzf volanogo_0.1.0_linux_${arch}.tar.gz -C bin volanogo
chmod +x bin/volanogo

cat > volanogo <<'SCRIPT'
#!/bin/sh
# -users 20 -count 100: VolanoMark's room of 20, 100 messages each.
./bin/volanogo load --serve --json --quiet -runs 4 --discard 1 -file "" -users 20 -count 100 "$@" > "$LOG_FILE" 2> volanogo-text.log
echo $? > ~/test-exit-status
SCRIPT
chmod +x volanogo
