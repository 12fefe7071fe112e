#!/usr/bin/env bash
# Runs golangci-lint at the version the project pins. No registry these
# machines reach serves a prebuilt golangci-lint, so the first run builds the
# pinned version from the module proxy into a cache directory and every later
# run executes that binary: the build is paid once per machine.
set -euo pipefail
cd "$(dirname "$0")/.."
GOLANGCI_LINT_VERSION=v2.15.0
dir=${VOLANOGO_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/volanogo/tools}
bin=$dir/golangci-lint-$GOLANGCI_LINT_VERSION
if [[ ! -x $bin ]]; then
	echo "lint: building golangci-lint $GOLANGCI_LINT_VERSION into $dir (once per machine: 5 to 12 minutes on 2 processors)" >&2
	mkdir -p "$dir"
	tmp=$(mktemp -d "$dir/build.XXXXXX")
	trap 'rm -rf "$tmp"' EXIT
	GOBIN=$tmp go install "github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$GOLANGCI_LINT_VERSION"
	mv "$tmp/golangci-lint" "$bin"
	rm -rf "$tmp"
	trap - EXIT
fi
exec "$bin" run "$@"
