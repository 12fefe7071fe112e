#!/usr/bin/env bash
# Runs golangci-lint at the version the project pins, built from the module
# proxy by `go run` (cached after the first build): no binary to install.
set -euo pipefail
cd "$(dirname "$0")/.."
GOLANGCI_LINT_VERSION=v2.15.0
exec go run "github.com/golangci/golangci-lint/v2/cmd/golangci-lint@${GOLANGCI_LINT_VERSION}" run "$@"
