#!/bin/sh
# engines.sh: the engine matrix, each figure as a ratio to the kernel floor
# measured in the same round (machines of one kind differ several times in
# the cost of a system call, and a shared machine's noise moves the floor
# within a sitting, so only ratios to a floor measured alongside compare).
#
# Every round, at each size (rooms:count), it measures the floor
# (`volanogo floor`, whose timing includes Mark's exit phase as a run's
# does; FLOOR_ARGS=--chat-only leaves it out, as floor.c does), then runs
# `volanogo load` against a fresh `volanogo serve` for every pair of
# server engine and client engine, and prints per run: msg/s, server and client CPU per message, and their
# ratios to that round's floor (msg/s: the floor's share reached, higher is
# better; CPU: 1.00 costs what the floor costs, lower is better). Then:
#   - the medians of those ratios per size and pair, with their range
#     over the rounds (a goal a few percent wide is decided only when the
#     whole range is on one side of it), and the floor's drift;
#   - per pair, the score ratio largest/smallest size (950/15 by default)
#     next to the floor's own throughput ratio (acceptance: at least the
#     floor's: the engine loses no more than the kernel does as the rooms
#     grow);
#   - per server engine, its memory per connection at the largest size
#     (its RSS growth from before the run's connections, from its metrics,
#     over the connections);
#   - `volanogo report` over the result documents, each carrying the floor
#     of its round: a Volano Report of the engines ("Which engine?").
#
#   bench/engines.sh                                  # 15 rooms x 100, 475 x 10, 950 x 5; 3 rounds
#   SIZES="15:20 950:1" ROUNDS=3 bench/engines.sh     # quicker
#   CLIENT_ENGINES=epoll SERVER_ENGINES="goroutine epoll" bench/engines.sh
#   OUT=results/engines bench/engines.sh              # where the documents go (default: a new /tmp directory)
#   FLOOR_ARGS=--chat-only bench/engines.sh           # the floor without the exits, as floor.c
#   SERVER_ENGINES="epoll epoll:--loops=2" bench/engines.sh   # ENGINE:FLAGS: serve flags, commas for spaces
#   FLOOR_AFTER=0 bench/engines.sh                    # the floor before the runs only
#   SETTLE=0 bench/engines.sh                         # do not wait for TIME_WAIT sockets to go before each measurement
#   URING_FLOOR=0 bench/engines.sh                    # no io_uring floor (default: measured when uring is a server engine)
#
# Each round measures the floor before its runs and again after them
# (FLOOR_AFTER=1, the default), divides each run by the mean of the two
# and prints the drift (after/before): in one quiet sitting the floor at
# 475 rooms moved from 13.8 to 6.9 us a message between rounds, so a
# round whose drift is far from 1.00 says little, and a goal a few percent
# wide needs many rounds (ROUNDS=5 or more). Both readings go into the
# round's documents, and `volanogo report` divides by their mean too.
# Even rounds run the server engines in the reverse order.
#
# The server engines default to those `volanogo serve --help` lists
# (goroutine, epoll, and uring when this build has it). 950 rooms are 19,000
# connections: the server holds one end within its 20,000 open files, the
# client splits itself into shard processes (load's --procs auto, its
# default for a step one process cannot hold) and the floor runs its
# clients in a child process. Recording each round's floor in the
# documents needs jq; without it the report has no efficiency.
set -eu
cd "$(dirname "$0")/.."
rounds=${ROUNDS:-3}
sizes=${SIZES:-"15:100 475:10 950:5"}
clients=${CLIENT_ENGINES:-"goroutine epoll"}
floor_after=${FLOOR_AFTER:-1}
uring_floor=${URING_FLOOR:-}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/engines.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
out=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/engines-results.XXXXXX")}
mkdir -p "$out"
go build -o "$tmp/volanogo" ./cmd/volanogo
vg=$tmp/volanogo
if [ -z "${SERVER_ENGINES:-}" ]; then
	help=$("$vg" serve --help 2>&1 | grep -- '--engine' || true)
	SERVER_ENGINES=goroutine
	for e in epoll uring; do
		case $help in *"$e"*) SERVER_ENGINES="$SERVER_ENGINES $e" ;; esac
	done
fi
if [ -z "$uring_floor" ]; then
	uring_floor=0
	case " $SERVER_ENGINES " in *" uring "* | *" uring:"*) uring_floor=1 ;; esac
fi
# add_floor FILE: add the floor in FILE to the documents of this round's
# runs at this size (r, rooms), beside the floor they already carry.
add_floor() {
	$havejq || return 0
	for doc in "$out"/r"$r"-"$rooms"-*.json; do
		[ -s "$doc" ] || continue
		jq --slurpfile f "$1" '.environment.floor += $f' "$doc" >"$tmp/doc.json" && mv "$tmp/doc.json" "$doc"
	done
}

havejq=false
if command -v jq >/dev/null 2>&1; then
	havejq=true
else
	echo "(no jq: the documents will not carry the floor; the report has no efficiency)"
fi

# shellcheck source=bench/lib.sh
. bench/lib.sh

echo "machine: $(nproc) processors, $(uname -sr), $(go env GOVERSION), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "server engines: $SERVER_ENGINES; client engines: $clients; sizes (rooms:count): $sizes; $rounds rounds"
echo "documents: $out"
# rows: rooms round pair msg/s msg-ratio server-us server-ratio client-us client-ratio score
: >"$tmp/rows"
# floors: rooms round throughput server-us client-us
: >"$tmp/floors"
r=1
while [ "$r" -le "$rounds" ]; do
	for size in $sizes; do
		rooms=${size%:*}
		count=${size#*:}
		ff=$tmp/floor-$rooms-$r.json
		settle
		# shellcheck disable=SC2086 # FLOOR_ARGS are words
		if ! "$vg" floor --rooms "$rooms" --count "$count" ${FLOOR_ARGS:-} --json >"$ff" 2>"$tmp/floor.err"; then
			echo "round $r, $rooms rooms: the floor failed:" >&2
			tail -n 5 "$tmp/floor.err" >&2
			continue
		fi
		# the floor before the runs; ft fs fc: the floor the runs are divided by
		ft0=$(field throughput <"$ff")
		fs0=$(field server_cpu_per_message_us <"$ff")
		fc0=$(field client_cpu_per_message_us <"$ff")
		ft=$ft0 fs=$fs0 fc=$fc0
		fx="chats only"
		grep -q '"exits": *true' "$ff" && fx="with exits"
		la=$(cut -d' ' -f1 /proc/loadavg)
		# raw: pair msg/s server-us client-us score of this round's runs
		: >"$tmp/raw"
		# Even rounds run the server engines in the reverse order, so
		# that none is always the first after the floor.
		order=$SERVER_ENGINES
		if [ $((r % 2)) = 0 ]; then
			order=$(for se in $SERVER_ENGINES; do echo "$se"; done | awk '{ l[NR] = $0 } END { for (i = NR; i > 0; i--) printf "%s ", l[i] }')
		fi
		for se in $order; do
			for ce in $clients; do
				doc=$out/r$r-$rooms-$se-$ce.json
				# ENGINE:ARGS is the engine with serve flags (commas for spaces)
				serve="$vg serve --listen 127.0.0.1:{port} --metrics-listen 127.0.0.1:0 --engine ${se%%:*}"
				case $se in *:*) serve="$serve $(echo "${se#*:}" | tr ',' ' ')" ;; esac
				settle
				if ! "$vg" load --server-cmd "$serve" -rooms "$rooms" -count "$count" -runs 1 \
					--engine "$ce" --label "volanogo${se#"${se%%:*}"}" --run-id "r$r-$rooms-$se-$ce" \
					--json --quiet -o "$doc" >"$tmp/run.json" 2>"$tmp/run.err"; then
					echo "$se/$ce: the run failed:" >&2
					tail -n 5 "$tmp/run.err" >&2
					continue
				fi
				if $havejq && [ -s "$doc" ]; then
					jq --slurpfile f "$ff" '.environment.floor = $f' "$doc" >"$tmp/doc.json" && mv "$tmp/doc.json" "$doc"
				fi
				echo "$se/$ce $(field msgs_per_sec <"$tmp/run.json") $(field server_cpu_per_msg_us <"$tmp/run.json") $(field client_cpu_per_msg_us <"$tmp/run.json") $(field score <"$tmp/run.json")" >>"$tmp/raw"
			done
		done
		# The floor again after the runs: a shared machine's floor moves
		# between two minutes (by 2x in one quiet sitting), so each run
		# is divided by the mean of the floors around it, and the drift
		# (after/before) says how far to trust the round.
		# The io_uring floor, between the epoll floor's two readings (URING_FLOOR=1,
		# the default when uring is among the server engines): the ratio of the
		# uring engine to what io_uring itself costs on this machine.
		uf=""
		[ "$uring_floor" = 1 ] && settle
		# shellcheck disable=SC2086 # FLOOR_ARGS are words
		if [ "$uring_floor" = 1 ] && "$vg" floor --engine uring --rooms "$rooms" --count "$count" ${FLOOR_ARGS:-} --json >"$tmp/floor-uring.json" 2>"$tmp/floor.err"; then
			uf=$(field server_cpu_per_message_us <"$tmp/floor-uring.json")
			add_floor "$tmp/floor-uring.json"
		fi
		fafter="" sd=1 cd=1
		[ "$floor_after" = 1 ] && settle
		# shellcheck disable=SC2086 # FLOOR_ARGS are words
		if [ "$floor_after" = 1 ] && "$vg" floor --rooms "$rooms" --count "$count" ${FLOOR_ARGS:-} --json >"$tmp/floor-after.json" 2>"$tmp/floor.err"; then
			ft2=$(field throughput <"$tmp/floor-after.json")
			fs2=$(field server_cpu_per_message_us <"$tmp/floor-after.json")
			fc2=$(field client_cpu_per_message_us <"$tmp/floor-after.json")
			fafter=$(awk -v a="$fs0" -v b="$fs2" -v c="$fc0" -v d="$fc2" 'BEGIN { printf "; after the runs server %.2f us, client %.2f us (drift %.2f / %.2f); ratios to the means", b, d, b / a, d / c }')
			ft=$(mean "$ft0" "$ft2") fs=$(mean "$fs0" "$fs2") fc=$(mean "$fc0" "$fc2")
			sd=$(awk -v a="$fs0" -v b="$fs2" 'BEGIN { print b / a }') cd=$(awk -v a="$fc0" -v b="$fc2" 'BEGIN { print b / a }')
			# The documents carry both readings: volanogo report's
			# efficiency divides by their mean, as the lines below do.
			add_floor "$tmp/floor-after.json"
		fi
		echo "$rooms $r $ft $fs $fc $sd $cd ${uf:-0}" >>"$tmp/floors"
		if [ -n "$uf" ]; then
			fafter=$fafter$(awk -v u="$uf" -v f="$fs" 'BEGIN { printf "; io_uring floor: server %.2f us, %.2f of the epoll floor", u, u / f }')
		fi
		printf '\nround %s, %s rooms x %s: floor (%s) %.0f msg/s, server %.2f us, client %.2f us per message (load average %s)%s\n' \
			"$r" "$rooms" "$count" "$fx" "$ft0" "$fs0" "$fc0" "$la" "$fafter"
		printf '%-22s %9s %6s %10s %7s %10s %7s\n' "server/client" "msg/s" "/floor" "server us" "/floor" "client us" "/floor"
		while read -r p ms ss cs sc; do
			line=$(awk -v p="$p" -v ms="${ms:-0}" -v ss="${ss:-0}" -v cs="${cs:-0}" -v ft="$ft" -v fs="$fs" -v fc="$fc" \
				'BEGIN { printf "%-22s %9.0f %6.2f %10.2f %7.2f %10.2f %7.2f", p, ms, ms / ft, ss, ss / fs, cs, cs / fc }')
			echo "$line"
			echo "$rooms $r $line ${sc:-0}" >>"$tmp/rows"
		done <"$tmp/raw"
	done
	r=$((r + 1))
done



echo
echo "medians of the rounds' ratios to their floor, with the range over the rounds (msg/s: higher is better; CPU: lower is better):"
printf '%-6s %-22s %9s %6s %7s %-11s %7s %-11s\n' "rooms" "server/client" "msg/s" "/floor" "server" "(range)" "client" "(range)"
for size in $sizes; do
	rooms=${size%:*}
	# shellcheck disable=SC2013 # pairs are words
	for p in $(awk -v r="$rooms" '$1 == r { print $3 }' "$tmp/rows" | sort -u); do
		col() { awk -v r="$rooms" -v p="$p" -v c="$1" '$1 == r && $3 == p { print $c }' "$tmp/rows"; }
		printf '%-6s %-22s %9.0f %6.2f %7.2f %-11s %7.2f %-11s\n' "$rooms" "$p" "$(col 4 | med)" "$(col 5 | med)" \
			"$(col 7 | med)" "($(col 7 | span))" "$(col 9 | med)" "($(col 9 | span))"
	done
	if [ "$floor_after" = 1 ]; then
		printf '%-6s %-22s server drift %s, client drift %s (after/before the runs, over the rounds)\n' "$rooms" "floor" \
			"$(awk -v r="$rooms" '$1 == r { print $6 }' "$tmp/floors" | span)" "$(awk -v r="$rooms" '$1 == r { print $7 }' "$tmp/floors" | span)"
	fi
	if [ "$uring_floor" = 1 ]; then
		# per round: the io_uring floor over the epoll floor, and the uring
		# runs' server CPU per message over the io_uring floor
		uf=$(awk -v r="$rooms" '$1 == r && $8 > 0 { print $8 / $4 }' "$tmp/floors")
		ur=$(awk -v r="$rooms" 'FNR == NR { if ($1 == r && $8 > 0) u[$2] = $8; next }
			$1 == r && $3 ~ /^uring\// && ($2 in u) { print $6 / u[$2] }' "$tmp/floors" "$tmp/rows")
		printf '%-6s %-22s %.2f (%s) of the epoll floor'"'"'s server CPU per message; uring server / io_uring floor %.2f (%s)\n' "$rooms" "io_uring floor" \
			"$(echo "$uf" | med)" "$(echo "$uf" | span)" "$(echo "$ur" | med)" "$(echo "$ur" | span)"
	fi
done

small=$(for s in $sizes; do echo "${s%:*}"; done | sort -n | head -n 1)
large=$(for s in $sizes; do echo "${s%:*}"; done | sort -n | tail -n 1)
if [ "$small" != "$large" ]; then
	fsmall=$(awk -v r="$small" '$1 == r { print $3 }' "$tmp/floors" | med)
	flarge=$(awk -v r="$large" '$1 == r { print $3 }' "$tmp/floors" | med)
	fratio=$(awk -v a="$flarge" -v b="$fsmall" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print 0 }')
	echo
	echo "score ratio $large/$small rooms (medians) against the floor's throughput ratio $large/$small ($fratio; acceptance: at least it):"
	# shellcheck disable=SC2013 # pairs are words
	for p in $(awk '{ print $3 }' "$tmp/rows" | sort -u); do
		a=$(awk -v r="$large" -v p="$p" '$1 == r && $3 == p { print $10 }' "$tmp/rows" | med)
		b=$(awk -v r="$small" -v p="$p" '$1 == r && $3 == p { print $10 }' "$tmp/rows" | med)
		awk -v p="$p" -v a="$a" -v b="$b" -v f="$fratio" 'BEGIN {
			if (b <= 0) { printf "%-22s no score at the smaller size\n", p; exit }
			x = a / b
			printf "%-22s %6.2f  (%s: %.0f / %.0f)\n", p, x, (x >= f ? "at least the floor'"'"'s" : "BELOW the floor'"'"'s"), a, b
		}'
	done
	# The same goal round by round, where both sizes ran: the run's share of
	# its round's floor throughput at the large size over that at the small
	# one (1.00: it loses what the floor loses; the acceptance is at least 1).
	echo "the same, round by round: (msg/s / floor at $large) / (msg/s / floor at $small), median (range) over the rounds; at least 1.00 holds:"
	# shellcheck disable=SC2013 # pairs are words
	for p in $(awk '{ print $3 }' "$tmp/rows" | sort -u); do
		rel=$(awk -v s="$small" -v l="$large" -v p="$p" '$3 == p && $1 == s { a[$2] = $5 } $3 == p && $1 == l { b[$2] = $5 }
			END { for (r in a) if ((r in b) && a[r] > 0) print b[r] / a[r] }' "$tmp/rows")
		if [ -z "$rel" ]; then
			printf '%-22s no round ran both sizes\n' "$p"
			continue
		fi
		printf '%-22s %6.2f  (%s)\n' "$p" "$(echo "$rel" | med)" "$(echo "$rel" | span)"
	done

	echo
	echo "server memory per connection at $large rooms (RSS growth from before the run's connections, medians):"
	if $havejq; then
		for se in $SERVER_ENGINES; do
			m=$(for f in "$out"/r*-"$large"-"$se"-*.json; do
				[ -s "$f" ] || continue
				jq -r 'if (.server.rss_before_bytes // 0) > 0 and .connections.peak > 0
					then (([.server.rss_start_bytes, .server.rss_end_bytes] | max) - .server.rss_before_bytes) / .connections.peak
					else empty end' "$f"
			done | med)
			awk -v se="$se" -v m="$m" 'BEGIN { if (m > 0) printf "%-10s %8.1f KiB\n", se, m / 1024; else printf "%-10s unknown\n", se }'
		done
	else
		echo "(needs jq)"
	fi
fi

echo
echo "load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo
"$vg" report "$out"
