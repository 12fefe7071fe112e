#!/bin/sh
# occupied.sh: can a user get in while attackers hold every descriptor of
# a server at its open-files limit? LIMIT+200 attacker connections that
# never send a byte (ATTACK=squat) or send a refused packet (ATTACK=refused,
# held for --violation-hold), each dialled again at its close, for DUR;
# meanwhile 20 users, one every 100 ms, each connect and send an Access
# until it is answered (a refused connection tried again 100 ms later,
# giving up after 15 s). Prints how many got in and how long it took,
# and the server's closes that made room.
#
#   bench/server/occupied.sh                  # ATTACK=squat LIMIT=1000 ENGINE=goroutine
#   ATTACK=refused ENGINE=epoll bench/server/occupied.sh
#   VOLANOGO=/path/to/other/volanogo bench/server/occupied.sh   # the same against another build
. "$(dirname "$0")/lib.sh"
ATTACK=${ATTACK:-squat}
LIMIT=${LIMIT:-1000}
DUR=${DUR:-25s}
ENGINE=${ENGINE:-goroutine}
case $ATTACK in
squat | refused) ;;
*)
	echo "ATTACK=$ATTACK: squat or refused" >&2
	exit 2
	;;
esac
NOFILE=$LIMIT
start_server --engine "$ENGINE"
echo "engine $ENGINE, attack $ATTACK, open-files limit $LIMIT; $(load)"
"$OUT/attack" -addr "$ADDR" -mode "$ATTACK" -n $((LIMIT + 200)) -duration "$DUR" -probe=false >"$OUT/occupy" 2>&1 &
ap=$!
sleep 3
echo "open after 3 s: $(metric volanogo_connections_open), refused open_files: $(metric 'volanogo_connections_refused_total{reason="open_files"}')"
"$OUT/attack" -addr "$ADDR" -mode admit -n 20 -hold 15s -probe=false | grep admitted
echo "displaced: $(metric 'volanogo_connections_closed_total{reason="displaced"}'), holds cut: $(metric volanogo_violation_holds_cut_total), access timeouts: $(metric 'volanogo_connections_closed_total{reason="access_timeout"}')"
kill "$ap" 2>/dev/null || true
wait "$ap" 2>/dev/null || true
echo "$(load)"
