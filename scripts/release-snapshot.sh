#!/usr/bin/env bash
# Release dry run: checks .goreleaser.yaml, builds every target as a
# snapshot and packs the archives and checksums, without publishing.
# Slow (the first run downloads and compiles GoReleaser), so it is not
# part of CI. Output goes to dist/, which git ignores.
#
# Usage: scripts/release-snapshot.sh [--build-only]
set -euo pipefail
cd "$(dirname "$0")/.."

goreleaser=(go run github.com/goreleaser/goreleaser/v2@v2.16.0)

if [[ -z "$(git remote)" ]]; then
	# GoReleaser reads the remote's URL; without one, a snapshot goes on
	# with placeholder git information and the binaries' commit is "none".
	echo "note: no git remote: the snapshot's binaries will say 'commit none'" >&2
fi

"${goreleaser[@]}" check
"${goreleaser[@]}" build --snapshot --clean
if [[ "${1:-}" != "--build-only" ]]; then
	"${goreleaser[@]}" release --snapshot --clean --skip=publish
fi

echo
echo "dist/:"
find dist -type f \( -name 'volanogo' -o -name 'volanogo.exe' -o -name '*.tar.gz' -o -name '*.zip' -o -name 'checksums.txt' \) \
	-printf '%10s  %p\n' | sort -k2
