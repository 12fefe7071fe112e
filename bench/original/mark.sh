#!/bin/sh
# mark.sh: run the original VolanoMark client (java COM.volano.Mark) from a
# tree you built yourself; for `volanogo load --client-cmd`. This
# repository holds none of the original's code and no recipe to build it:
# see README, "Measuring the original VOLANO server".
#
#   bench/original/mark.sh --volano-dir DIR MARK-OPTION...
#
#   volanogo load --serve -rooms 15 -count 100 --client-cmd \
#     'bench/original/mark.sh --volano-dir DIR -run -host {host} -port {port} -rooms {rooms} -users {users} -count {count} -start {start}'
#
# DIR is a built tree: compiled classes in DIR/classes and/or jars in
# DIR/lib. The MARK-OPTIONs are Mark's own (-run, -host, -port, -rooms,
# -users, -count, -start, -pause, -file). Mark writes its result lines to
# standard output, where volanogo reads them, and again, with the Java
# environment, to its -file: unless you give one, that is /dev/null (not a
# volano-mark.log in whatever directory the caller is in).
#
# The script ends by exec-ing java, so that the process a caller started
# is the client itself (its CPU time is the client's). Environment: JAVA
# (default: java), VOLANO_JAVA_OPTS (default: "-server -Xmx64m", what the
# original loopback test used; past 50 rooms Mark needs more, such as the
# original network test's "-server -Xmx256m -Xss256k"). VOLANO_DIR may
# stand for --volano-dir.
set -eu

usage() {
	echo "usage: $0 --volano-dir DIR MARK-OPTION..." >&2
	exit 2
}

dir=${VOLANO_DIR:-}
case ${1:-} in
--volano-dir) [ $# -ge 2 ] || usage; dir=$2; shift 2 ;;
--volano-dir=*) dir=${1#*=}; shift ;;
-h | --help) usage ;;
esac
[ -n "$dir" ] || { echo "$0: --volano-dir (or VOLANO_DIR) is required" >&2; usage; }
if [ ! -d "$dir/classes" ] && [ ! -d "$dir/lib" ]; then
	echo "$0: $dir has neither classes/ nor lib/: not a built tree" >&2
	exit 2
fi
dir=$(cd "$dir" && pwd)

file=""
for a in "$@"; do
	if [ "$a" = -file ]; then file=given; fi
done
if [ -z "$file" ]; then
	set -- "$@" -file /dev/null
fi

# shellcheck disable=SC2086 # VOLANO_JAVA_OPTS is a list of options
exec "${JAVA:-java}" ${VOLANO_JAVA_OPTS:--server -Xmx64m} \
	-cp "$dir/classes:$dir/lib/*:$dir" COM.volano.Mark "$@"
