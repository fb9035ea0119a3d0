#!/usr/bin/env bash
# Runs tai's whole test suite: vet, staticcheck, unit tests with the race detector, and
# the end-to-end tests against the real tai binary (built with -race) and the
# pinned third-party ACP peers (installed into a cache outside the clone).
set -euo pipefail
cd "$(dirname "$0")/.."
eval "$(./scripts/install-peers.sh | sed 's/^/export /')"
# The real coding agents, pinned, into ~/.cache/tai-agents (a no-op when cached).
eval "$(./scripts/install-agents.sh | sed 's/^/export /')"
# The claude CLI for the stream-json driver (400 MB, so a script of its own).
eval "$(./scripts/install-claude.sh | sed 's/^/export /')"
go vet ./...
# A build without cgo has the Go launcher instead of the native one: it must
# build, and its launcher pass the same tests (the cgo build runs both).
CGO_ENABLED=0 go vet ./...
CGO_ENABLED=0 go test -count=1 ./sandbox
# staticcheck, pinned, into a cache outside the clone (a no-op when cached).
SC_VERSION=v0.8.2
SC_DIR="${TAI_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tai-tools}/staticcheck-$SC_VERSION"
if [ ! -x "$SC_DIR/staticcheck" ]; then
  mkdir -p "$SC_DIR"
  GOBIN="$SC_DIR" go install "honnef.co/go/tools/cmd/staticcheck@$SC_VERSION" >&2
fi
"$SC_DIR/staticcheck" ./...
unformatted=$(gofmt -l .)
if [ -n "$unformatted" ]; then
  echo "gofmt needed:" >&2
  echo "$unformatted" >&2
  exit 1
fi
# The e2e packages build tai (and their test programs) once for the run, here.
TAI_E2E_BIN_CACHE=$(mktemp -d -t tai-e2e-bin-XXXXXX)
export TAI_E2E_BIN_CACHE
trap 'rm -rf "$TAI_E2E_BIN_CACHE"' EXIT
TAI_E2E_RACE=1 go test -race -count=1 -timeout 20m ./...
# RSS means nothing under the race detector, so the memory bounds run once
# more without it (a plain build of tai).
go test -count=1 -run 'TestLongLinePeakIsOneLine|TestPipelinedReadsBoundedMemory|TestBigLinePeak' ./internal/lines ./e2e
