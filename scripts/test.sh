#!/usr/bin/env bash
# The project's whole test, as .ci/run runs it on a clean checkout: format,
# vet, lint and the race-enabled tests of the main module; the nested
# modules (each its own go.mod, so that their libraries stay out of
# volanogo's: the Kubernetes manifests' tests, the image builder); and the
# scripts that drive the original VOLANO server and Mark, against a stand-in
# for java (no Java needed).
#
# deploy/kubernetes builds volanogo's internal/cli from this checkout (a
# replace directive): after adding a dependency to volanogo, run
# `go mod tidy` there too, or its tests stop at a missing go.sum entry.
set -euo pipefail
cd "$(dirname "$0")/.."
unformatted=$(gofmt -l cmd internal pkg bench packaging deploy tools)
if [[ -n $unformatted ]]; then
	echo "test: not gofmt-formatted:" >&2
	echo "$unformatted" >&2
	exit 1
fi
go vet ./...
scripts/lint.sh ./...
go test -race -timeout 8m ./...
for m in deploy/kubernetes tools/image; do
	(cd "$m" && go vet ./... && go test -timeout 5m ./...)
done
sh bench/original/test.sh
