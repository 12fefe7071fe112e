#!/bin/sh
# profile.sh VERSION DIST OUT: writes the Phoronix Test Suite profile of a
# release into OUT/volanogo-1.0.0: the profile beside this script with the
# release's version, and a downloads.xml that names each linux archive of
# DIST (GoReleaser's dist directory: the archives and checksums.txt) with
# its SHA256 and size, which PTS checks after downloading. The release runs
# it (.goreleaser.yaml) and publishes the profile with the archives.
#
#   packaging/pts/profile.sh 0.1.0 dist dist/pts
set -eu
version=$1 dist=$2 out=$3
here=$(cd "$(dirname "$0")" && pwd)
profile=volanogo-1.0.0
mkdir -p "$out/$profile"
for f in test-definition.xml results-definition.xml install.sh; do
	sed "s/0\.1\.0/$version/g" "$here/$profile/$f" >"$out/$profile/$f"
done
chmod +x "$out/$profile/install.sh"
{
	echo '<?xml version="1.0"?>'
	echo "<!--The linux archives of volanogo $version, written by packaging/pts/profile.sh"
	echo 'from the release'"'"'s checksums.txt (elements in the order of PTS'"'"'s'
	echo 'test-profile-downloads.xsd).-->'
	echo '<PhoronixTestSuite>'
	echo '  <Downloads>'
	for arch in amd64:x86_64 arm64:aarch64; do
		name=volanogo_${version}_linux_${arch%%:*}.tar.gz
		sum=$(awk -v f="$name" '$2 == f { print $1 }' "$dist/checksums.txt")
		if [ -z "$sum" ] || [ ! -f "$dist/$name" ]; then
			echo "profile.sh: $name is not in $dist (or not in its checksums.txt)" >&2
			exit 1
		fi
		echo '    <Package>'
		echo "      <URL>https://github.com/volanogo/volanogo/releases/download/v$version/$name</URL>"
		echo "      <SHA256>$sum</SHA256>"
		echo "      <FileName>$name</FileName>"
		echo "      <FileSize>$(wc -c <"$dist/$name" | tr -d ' ')</FileSize>"
		echo '      <PlatformSpecific>Linux</PlatformSpecific>'
		echo "      <ArchitectureSpecific>${arch#*:}</ArchitectureSpecific>"
		echo '    </Package>'
	done
	echo '  </Downloads>'
	echo '</PhoronixTestSuite>'
} >"$out/$profile/downloads.xml"
