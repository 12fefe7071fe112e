#!/usr/bin/env bash
# Release dry run: checks .goreleaser.yaml, builds every target as a
# snapshot and packs the archives and checksums, and writes the Phoronix
# Test Suite profile of those archives (dist/pts), without publishing.
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

# The container image (dockers_v2) needs docker buildx. Without it the
# release skips the image, and tools/image assembles the same image from
# the snapshot's own linux binaries, with no daemon: dist/image.
skip=(--skip=publish)
buildx=true
if ! docker buildx version >/dev/null 2>&1; then
	echo "note: no docker buildx: the image is assembled by tools/image from the snapshot's binaries (dist/image)" >&2
	skip+=(--skip=docker)
	buildx=false
fi

"${goreleaser[@]}" check
"${goreleaser[@]}" build --snapshot --clean
if [[ "${1:-}" != "--build-only" ]]; then
	"${goreleaser[@]}" release --snapshot --clean "${skip[@]}"
	if [[ $buildx == false ]]; then
		version=$(sed -n 's/.*"version":"\([^"]*\)".*/\1/p' dist/metadata.json)
		bins=()
		for arch in amd64 arm64; do
			bin=$(find dist -path "dist/volanogo_linux_${arch}*/volanogo" -type f | head -n 1)
			bins+=("linux/${arch}=${PWD}/${bin}")
		done
		go -C tools/image run . -o dist/image -version "${version}" -bin "$(IFS=,; echo "${bins[*]}")"
	fi
	# The Phoronix Test Suite profile of these archives, with their SHA256
	# and sizes (a release runs the same after goreleaser release).
	version=$(sed -n 's/.*"version":"\([^"]*\)".*/\1/p' dist/metadata.json)
	sh packaging/pts/profile.sh "${version}" dist dist/pts
fi

echo
echo "dist/:"
find dist -type f \( -name 'volanogo' -o -name 'volanogo.exe' -o -name '*.tar.gz' -o -name '*.zip' -o -name 'checksums.txt' -o -path 'dist/image/index.json' \) \
	-printf '%10s  %p\n' | sort -k2
