#!/bin/sh
# serve.sh: start the original VOLANO chat server (Java) from a tree you
# built yourself, on a port you name, configured for VolanoMark; for
# `volanogo load --server-cmd`. This repository holds none of the original's
# code and no recipe to build it: see README, "Measuring the original VOLANO
# server".
#
#   bench/original/serve.sh --volano-dir DIR [--port PORT] [--host ADDR]
#                           [--logs DIR] [-- JAVA-OPTION...]
#
#   volanogo load --server-cmd 'bench/original/serve.sh --volano-dir DIR --port {port}'
#
# DIR is a built tree: compiled classes in DIR/classes and/or jars in
# DIR/lib (the Tomcat 4 catalina jar among them: the server logs through
# it), and the shipped configuration in DIR/conf. The tree is only read.
# The server reads DIR/conf/properties.txt with these settings put after
# it (the later setting wins): listen on ADDR:PORT (127.0.0.1:8000), no
# client authentication, no read timeout, no per-packet read delays, no
# embedded servlet runner, no admin port, logs in a directory of its own.
# That directory (--logs, or a temporary one removed once the server is
# gone) also holds the generated properties file.
#
# The script ends by exec-ing java, so that the process a caller started
# is the server itself: its CPU time is the server's, and SIGTERM stops
# it. Environment: JAVA (default: java), VOLANO_JAVA_OPTS (default:
# "-server -Xmx64m", what the original loopback test used); JAVA-OPTIONs
# after "--" are added after them.
set -eu

usage() {
	echo "usage: $0 --volano-dir DIR [--port PORT] [--host ADDR] [--logs DIR] [-- JAVA-OPTION...]" >&2
	exit 2
}

dir="" port=8000 host=127.0.0.1 logs=""
while [ $# -gt 0 ]; do
	case $1 in
	--volano-dir) [ $# -ge 2 ] || usage; dir=$2; shift 2 ;;
	--volano-dir=*) dir=${1#*=}; shift ;;
	--port) [ $# -ge 2 ] || usage; port=$2; shift 2 ;;
	--port=*) port=${1#*=}; shift ;;
	--host) [ $# -ge 2 ] || usage; host=$2; shift 2 ;;
	--host=*) host=${1#*=}; shift ;;
	--logs) [ $# -ge 2 ] || usage; logs=$2; shift 2 ;;
	--logs=*) logs=${1#*=}; shift ;;
	--) shift; break ;;
	-h | --help) usage ;;
	*) echo "$0: unknown argument $1" >&2; usage ;;
	esac
done
[ -n "$dir" ] || { echo "$0: --volano-dir is required" >&2; usage; }
case $port in '' | *[!0-9]*) echo "$0: --port must be a number: $port" >&2; exit 2 ;; esac
if [ ! -d "$dir" ]; then
	echo "$0: --volano-dir $dir: not a directory" >&2
	exit 2
fi
dir=$(cd "$dir" && pwd)
if [ ! -d "$dir/classes" ] && [ ! -d "$dir/lib" ]; then
	echo "$0: $dir has neither classes/ nor lib/: not a built tree" >&2
	exit 2
fi

if [ -n "$logs" ]; then
	mkdir -p "$logs"
	work=$(cd "$logs" && pwd)
else
	work=$(mktemp -d "${TMPDIR:-/tmp}/volano-serve.XXXXXX")
	# Removed once the server (this process, after exec) is gone. The
	# watcher keeps none of the caller's pipes open.
	(
		trap '' HUP INT TERM
		while kill -0 "$$" 2>/dev/null; do sleep 1; done
		rm -rf "$work"
	) </dev/null >/dev/null 2>&1 &
fi
mkdir -p "$work/logs"
props=$work/properties.txt
{
	if [ -f "$dir/conf/properties.txt" ]; then
		cat "$dir/conf/properties.txt"
		echo
	fi
	echo "# set by volanogo bench/original/serve.sh"
	echo "server.host=$host"
	echo "server.port=$port"
	echo "client.authentication=false"
	echo "server.timeout=0"
	echo "servlet.port=0"
	echo "admin.port=0"
	for d in access authenticate beep chat enter.private enter.room exit.private exit.room kick ping room.list user.list; do
		echo "delay.$d=0"
	done
	echo "log.directory=$work/logs"
	echo "log.support=$work/logs/support.log"
} >"$props"

# The original raised the soft open-files limit for its tests; so does the
# JVM on Linux, but not everywhere (dash and bash know -S and -H).
# shellcheck disable=SC3045
ulimit -Sn "$(ulimit -Hn)" 2>/dev/null || true

# Some of the configuration's files are read relative to the working
# directory, as when the original ran from the root of its tree.
cd "$dir"
# shellcheck disable=SC2086 # VOLANO_JAVA_OPTS is a list of options
exec "${JAVA:-java}" ${VOLANO_JAVA_OPTS:--server -Xmx64m} "$@" \
	-Dinstall.root="$dir" -Dcatalina.home="$dir" \
	-cp "$dir/classes:$dir/lib/*:$dir" COM.volano.Main "$props"
