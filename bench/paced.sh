#!/bin/sh
# paced.sh: the paced acceptance (issue 13), measured: "a paced run of
# 19,000 users at 1 msg/s each on the epoll engine: p99 delivery < 50 ms
# with the server under 10% of the machine".
#
# Builds volanogo, then for each reading runs `volanogo load --engine epoll`
# against a fresh `volanogo serve --engine epoll` (load starts it, and reads
# its CPU from its metrics) and prints the delivery latency (from the send
# and from the schedule), the server's and the client's CPU, the rates in
# and out (within the schedule's window: a run that fell behind shows the
# rate it held), the integrity line, and the acceptance: the p99 from the
# schedule against the SLO, the server's share of the machine against 10%,
# the client's share, and the kernel floor of the same traffic.
#
# The floor of a reading is the paced floor (`volanogo floor --pause`),
# measured just before it: the same rooms and users, each user sending a
# chat every pause from a random offset, as load schedules them, for the
# reading's duration; one epoll server thread relaying each chat and
# confirming it to its sender, one client thread sending on the schedule
# (in a child process: one process cannot hold both ends of 19,000
# connections), both on raw system calls with nothing else. At a chat a
# second per user most chats wake the server alone, so this is the least
# CPU this traffic costs on this machine: the script prints our server's
# CPU per message over the paced floor's, and the share of the machine the
# paced floor's server needs next to ours (when it needs more than the
# goal, no server can meet the goal here). It is not a capacity (its
# latency is one bare thread per side, printed for reference), and like
# a paced run's server CPU (read at the drain) it has no exit phase. On a
# loaded machine its threads do not get the processor when they need it:
# it falls behind its schedule, batches (its chats a server wake-up rise
# well above 1) and costs less per message than a paced floor; the script
# says so when the paced floor's own p99 from the schedule is over the SLO,
# and likewise when our run's is (a server behind its schedule batches too).
#
# For context, the turn-taking floor of the same rooms (`volanogo floor
# --chat-only`, whose waits return many events: a floor no paced run can
# reach) is printed too, labelled as such; TURNS_FLOOR=0 skips it. The
# load average is printed before and after each run: the machine is
# shared, and the shares are of the whole machine.
#
# A reading is users-per-room:pause. The default three:
#   20:1s   19,000 users in rooms of 20, one chat a second each: 19,000 chats
#           in and 361,000 deliveries out a second (each chat reaches 19
#           others), about 3x what this kind of machine's kernel floor
#           carries in all (`volanogo floor --rooms 15`): expect saturation
#   2:1s    the same users and rate with a fan-out of one (rooms of 2):
#           19,000 chats in and 19,000 deliveries (and 19,000 confirms) out
#           a second
#   20:20s  19,000 users in rooms of 20 at one chat every 20 s each: about
#           the same deliveries a second as 2:1s, with Mark's rooms
#
#   bench/paced.sh
#   READINGS="2:1s" DURATION=60s bench/paced.sh
#   READINGS="2:1s" COALESCE=500us bench/paced.sh   # serve --coalesce 500us
#   READINGS="2:1s" COALESCE="0 250us" bench/paced.sh  # each reading without, then with
#   USERS=9500 SLO=100ms LOOPS=2 FLOOR=0 bench/paced.sh
#   READINGS="2:1s" NICE=-10 bench/paced.sh      # floors, server and client at nice -10
#
# LOOPS is the client's event loops (load --loops; default half the
# processors), COALESCE the server's coalescing windows, each reading run
# once with each in turn after the one floor (serve --coalesce; 0: none;
# default none: it is recorded in each result document and printed),
# FLOOR=0 skips both floors, TURNS_FLOOR=0 the turn-taking one, FLOOR_COUNT
# is each turn-taking floor user's messages (default 10), NICE the
# niceness of the floors, the server and the client (nice -n; below 0 needs
# root: on a machine shared with other work, so that the measured threads
# get the processor when they need it, at the expense of that work, which
# the figures should then say; default: the shell's). The acceptance
# needs jq for its figures; without it the run's own lines, the floors'
# CPU per message and the verdict are printed.
#
# The server and the client each hold one end of every connection (19,000
# each, within the 20,000 open files of a process); the floor runs its
# clients in a child process when one process cannot hold both ends.
set -eu
cd "$(dirname "$0")/.."
users=${USERS:-19000}
readings=${READINGS:-"20:1s 2:1s 20:20s"}
duration=${DURATION:-30s}
slo=${SLO:-50ms}
goal=${SERVER_GOAL:-10}
floor=${FLOOR:-1}
floorcount=${FLOOR_COUNT:-10}
turnsfloor=${TURNS_FLOOR:-1}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/paced.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
go build -o "$tmp/volanogo" ./cmd/volanogo
vg=$tmp/volanogo
loops=
if [ -n "${LOOPS:-}" ]; then
	loops="--loops $LOOPS"
fi
coalesces=${COALESCE:-0}
havejq=false
if command -v jq >/dev/null 2>&1; then
	havejq=true
fi
nice=
if [ -n "${NICE:-}" ]; then
	nice="nice -n $NICE"
fi
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
ncpu=$(nproc)

echo "machine: $ncpu processors, $(uname -sr), $(go env GOVERSION), open files $(ulimit -n)"
echo "acceptance: $users users, p99 delivery (from the schedule) under $slo, server under $goal% of the machine"
echo "server: serve --engine epoll, --coalesce $coalesces; client: load --engine epoll ${loops:-(default loops)}; $duration a reading${nice:+; floors, server and client under $nice}"
for reading in $readings; do
	per=${reading%%:*}
	pause=${reading#*:}
	rooms=$((users / per))
	echo
	echo "== $rooms rooms x $per users, one chat every $pause each, $duration"
	fs=
	ps=
	pp=
	pt=
	if [ "$floor" != 0 ]; then
		echo "paced floor: volanogo floor --rooms $rooms --users $per --pause $pause --duration $duration (load average $(loadavg))"
		# shellcheck disable=SC2086 # $nice is a command or nothing
		if $nice "$vg" floor --rooms "$rooms" --users "$per" --pause "$pause" --duration "$duration" --json >"$tmp/pfloor.json" 2>"$tmp/floor.err"; then
			ps=$(sed -n 's/.*"server_cpu_per_message_us": *\([0-9.eE+-]*\).*/\1/p' "$tmp/pfloor.json")
			pc=$(sed -n 's/.*"client_cpu_per_message_us": *\([0-9.eE+-]*\).*/\1/p' "$tmp/pfloor.json")
			pt=$(sed -n 's/.*"throughput": *\([0-9.eE+-]*\).*/\1/p' "$tmp/pfloor.json")
			pp=$(sed -n 's/.*"server_cpu_percent": *\([0-9.eE+-]*\).*/\1/p' "$tmp/pfloor.json")
			pcp=$(sed -n 's/.*"client_cpu_percent": *\([0-9.eE+-]*\).*/\1/p' "$tmp/pfloor.json")
			printf 'Paced floor        = %.0f msg/s; server %.2f us, client %.2f us per message; server %.1f%%, client %.1f%% of the machine\n' \
				"$pt" "$ps" "$pc" "$(echo "$pp $ncpu" | awk '{ print $1 / $2 }')" "$(echo "$pcp $ncpu" | awk '{ print $1 / $2 }')"
			if $havejq; then
				jq -r 'def ms: . / 1e6 | if . >= 100 then "\(. | round) ms" else "\(. * 100 | round / 100) ms" end;
					def dur: capture("^(?<v>[0-9.]+)(?<u>[a-zµ]+)$") | (.v | tonumber) * {"ns": 1, "us": 1e3, "µs": 1e3, "ms": 1e6, "s": 1e9, "m": 6e10}[.u];
					"Paced floor delay  = p50 \(.paced.delivery_scheduled.p50_ns | ms), p99 \(.paced.delivery_scheduled.p99_ns | ms) from the schedule (from the send: p99 \(.paced.delivery.p99_ns | ms)); \(.paced.sent) chats sent, \(.paced.delivered) delivered in \(.elapsed_seconds * 100 | round / 100) s; \(if (.paced.server_wakeups // 0) > 0 then .paced.sent / .paced.server_wakeups * 100 | round / 100 else "?" end) chats a server wake-up",
					(if .paced.delivery_scheduled.p99_ns > ($slo | dur) then
						"Paced floor behind = its p99 from the schedule is over \($slo): the machine did not give its two threads the processor they needed when they needed it; where it fell behind it batched (chats a wake-up well above 1), and then its CPU per message is below a paced floor'"'"'s: measure on a quieter machine"
					 else empty end)' --arg slo "$slo" "$tmp/pfloor.json"
			fi
		else
			echo "the paced floor failed:"
			tail -n 5 "$tmp/floor.err"
		fi
		if [ "$turnsfloor" != 0 ]; then
			echo "turn-taking floor (context, not this traffic): volanogo floor --rooms $rooms --users $per --count $floorcount --chat-only (load average $(loadavg))"
			# shellcheck disable=SC2086 # $nice is a command or nothing
			if $nice "$vg" floor --rooms "$rooms" --users "$per" --count "$floorcount" --chat-only --json >"$tmp/floor.json" 2>"$tmp/floor.err"; then
				fs=$(sed -n 's/.*"server_cpu_per_message_us": *\([0-9.eE+-]*\).*/\1/p' "$tmp/floor.json")
				fc=$(sed -n 's/.*"client_cpu_per_message_us": *\([0-9.eE+-]*\).*/\1/p' "$tmp/floor.json")
				ft=$(sed -n 's/.*"throughput": *\([0-9.eE+-]*\).*/\1/p' "$tmp/floor.json")
				printf 'Turn-taking floor  = %.0f msg/s; server %.2f us, client %.2f us per message\n' "$ft" "$fs" "$fc"
			else
				echo "the turn-taking floor failed:"
				tail -n 5 "$tmp/floor.err"
			fi
		fi
	fi
	for co in $coalesces; do
		coalesce=
		if [ "$co" != 0 ]; then
			coalesce="--coalesce $co"
		fi
		echo "run: serve --engine epoll ${coalesce:-(no --coalesce)} (load average $(loadavg))"
		rm -f "$tmp/doc.json"
		# shellcheck disable=SC2086 # $loops and $coalesce are one option or none, $nice a command or nothing
		if $nice "$vg" load --server-cmd "$vg serve --engine epoll $coalesce --listen 127.0.0.1:{port} --metrics-listen 127.0.0.1:0" \
			-rooms "$rooms" -users "$per" -pause "$pause" --duration "$duration" --slo "$slo" -runs 1 \
			--engine epoll $loops --quiet --file "" -o "$tmp/doc.json" >"$tmp/out.txt" 2>&1; then
			:
		fi
		la=$(loadavg)
		grep -E '^(Delivery latency|From schedule|Fan-out|Connections|Client CPU|Server CPU|Server coalescing|TCP|Integrity|Paced|Step broken) ' "$tmp/out.txt" || {
			echo "the run failed:"
			tail -n 15 "$tmp/out.txt"
			continue
		}
		if $havejq && [ -s "$tmp/doc.json" ]; then
			# The acceptance's figures, from the result document.
			jq -r --argjson n "$ncpu" --argjson goal "$goal" --arg slo "$slo" --arg fs "${fs:-}" --arg ps "${ps:-}" --arg pp "${pp:-}" --arg pt "${pt:-0}" '
				def ms: . / 1e6 | if . >= 100 then "\(. | round) ms" else "\(. * 100 | round / 100) ms" end;
				def dur: capture("^(?<v>[0-9.]+)(?<u>[a-zµ]+)$") | (.v | tonumber) * {"ns": 1, "us": 1e3, "µs": 1e3, "ms": 1e6, "s": 1e9, "m": 6e10}[.u];
				def pct: "\(. * 10 | round / 10)%";
				(.latency.delivery_scheduled // .latency.delivery) as $h
				| ((.server.cpu_percent // 0) / $n) as $srv
				| ((.client.cpu_user_seconds + .client.cpu_system_seconds) / .elapsed_seconds * 100 / $n) as $cli
				| (.config.users * .config.rooms / .config.pause_seconds) as $chats
				| ($chats * .config.users) as $msgs
				| "Acceptance         = p99 from the schedule \($h.p99_ns | ms) (SLO \($slo)); server \($srv | pct) of the machine (goal under \($goal)%); client \($cli | pct) of the machine",
				  (if $ps != "" then
					($ps | tonumber) as $f
					| ($f * $msgs / 1e4 / $n) as $need
					| "Against the paced floor = ours \((.server.cpu_per_message_us // 0) / $f * 100 | round / 100)x its server CPU per message; at the schedule'"'"'s \($msgs | round) msg/s its server needs \($need | pct) of the machine (its CPU per message times the rate; it used \(($pp | tonumber) / $n | pct) over its run at \($pt | tonumber | round) msg/s), ours \($srv | pct) at \(.counts.total / .elapsed_seconds | round) msg/s (goal under \($goal)%\(if $need >= $goal then ": the goal is below this machine'"'"'s kernel floor" else "" end))",
					  (if $h.p99_ns > ($slo | dur) then "Ours behind        = our p99 from the schedule is over \($slo): where our run fell behind, its server could read several chats a wake-up, so its CPU per message may be below what it would cost on schedule (the ratio may flatter it)" else empty end)
				   else empty end),
				  (if $fs != "" then
					($fs | tonumber) as $f
					| "Against the turn-taking floor (context) = at \($chats | round) chats and \($msgs | round) messages a second its server would use \($f * $msgs / 1e4 / $n | pct) of the machine; ours \((.server.cpu_per_message_us // 0) / $f * 100 | round / 100)x its CPU per message"
				   else empty end),
				  "Verdict            = \(if (.paced.broken | not) and $srv < $goal then "held" else "not held" end)\([(if .paced.broken then .paced.reason else empty end), (if $srv >= $goal then "server at \($srv | pct) of the machine" else empty end)] | if length > 0 then " (" + join("; ") + ")" else "" end)"
			' "$tmp/doc.json"
		else
			# The client's CPU as a share of the machine, over the timed phase.
			awk -v n="$ncpu" '
				/^Elapsed time/ { e = $4 }
				/^Client CPU/ { u = $4; s = $7 }
				END { if (e > 0) printf "Client share       = %.1f%% of the machine (%.2f s of CPU in %.1f s)\n", 100 * (u + s) / e / n, u + s, e }
			' "$tmp/out.txt"
			grep -q '^Step broken' "$tmp/out.txt" || echo "Verdict            = p99 within $slo, nothing lost (server share: see Server CPU)"
		fi
		echo "load average after: $la"
	done
done
