#!/bin/sh
# floor.sh: volanogo's kernel floor (`volanogo floor`, Go on raw system
# calls) against the C program it follows (bench/floor.c), on this
# machine, in the same sitting.
#
# Builds floor.c (cc -O2; with -DURING too when liburing-dev is installed)
# and volanogo into a temporary directory, then at each size runs the C
# floor and the Go floor alternately, ROUNDS times each, epoll first and
# io_uring after, and prints each round's server and client CPU per
# message, then the medians and the Go/C ratio (of the medians, and the
# median of the rounds' ratios): 1.00 is "costs what C costs". floor.c
# stops after the chats, so the Go floor runs with --chat-only (without
# Mark's exit phase, which it times by default).
#
#   bench/floor.sh                           # 15 rooms x 100, 475 rooms x 10, 3 rounds
#   ROUNDS=5 SIZES="50:100" bench/floor.sh   # rooms:count pairs
#   FLOORC=path/to/floor.c bench/floor.sh
#
# floor.c holds both ends of every connection in one process: a size past
# the open-files limit (ulimit -n, less a few) fails there.
set -eu
cd "$(dirname "$0")/.."
src=${FLOORC:-bench/floor.c}
rounds=${ROUNDS:-3}
sizes=${SIZES:-"15:100 475:10"}
if [ ! -f "$src" ]; then
	echo "floor.sh: $src not found (set FLOORC)" >&2
	exit 2
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/floor.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
cc -O2 -o "$tmp/floor" "$src" -lpthread
engines=epoll
if cc -O2 -DURING -o "$tmp/floor-uring" "$src" -lpthread -luring 2>/dev/null; then
	engines="epoll uring"
else
	echo "(no liburing: the io_uring pair is skipped; apt-get install liburing-dev)"
fi
go build -o "$tmp/volanogo" ./cmd/volanogo

# cfloor and gofloor print one floor's server and client µs per message.
cfloor() {
	if [ "$1" = uring ]; then
		"$tmp/floor-uring" "$2" 20 "$3" uring 2>/dev/null
	else
		"$tmp/floor" "$2" 20 "$3" 2>/dev/null
	fi | sed -n 's|^server \([0-9.]*\) us/msg, client \([0-9.]*\) us/msg.*|\1 \2|p'
}
gofloor() {
	"$tmp/volanogo" floor --chat-only --engine "$1" --rooms "$2" --count "$3" |
		sed -n 's|.*server \([0-9.]*\) µs, client \([0-9.]*\) µs per message|\1 \2|p'
}

echo "machine: $(nproc) processors, $(uname -sr), $(go env GOVERSION), load average $(cut -d' ' -f1-3 /proc/loadavg)"
for size in $sizes; do
	rooms=${size%%:*}
	count=${size##*:}
	for engine in $engines; do
		echo
		echo "$rooms rooms x 20 users x $count, $engine (µs of CPU per message: server, client)"
		for r in $(seq "$rounds"); do
			# Odd rounds run C first, even rounds Go first: neither always
			# follows the other (the kernel is still reaping the previous
			# run's connections when the next one starts).
			if [ $((r % 2)) = 1 ]; then
				c=$(cfloor "$engine" "$rooms" "$count")
				g=$(gofloor "$engine" "$rooms" "$count")
			else
				g=$(gofloor "$engine" "$rooms" "$count")
				c=$(cfloor "$engine" "$rooms" "$count")
			fi
			echo "$c $g" | awk '{ print $0, $3/$1, $4/$2 }' >>"$tmp/$rooms-$engine"
			echo "$c $g" | awk -v r="$r" '{ printf "  round %s: C %5.2f %5.2f   Go %5.2f %5.2f   Go/C %.2f %.2f\n", r, $1, $2, $3, $4, $3/$1, $4/$2 }'
		done
		# The medians of each column: C, Go, and the rounds' Go/C ratios.
		for col in 1 2 3 4 5 6; do
			sort -g -k"$col" "$tmp/$rooms-$engine" | awk -v c="$col" '{ v[NR] = $c } END { m = (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2; print m }'
		done | paste -sd' ' | awk '{ printf "  median: C %5.2f %5.2f   Go %5.2f %5.2f   Go/C server %.2f, client %.2f (median of the rounds: %.2f, %.2f)\n", $1, $2, $3, $4, $3/$1, $4/$2, $5, $6 }'
	done
done
echo
echo "load average $(cut -d' ' -f1-3 /proc/loadavg)"
