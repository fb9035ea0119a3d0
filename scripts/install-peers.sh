#!/usr/bin/env bash
# Installs the third-party ACP (and A2A) peers tai's e2e tests run against, pinned, into
# a cache directory outside the clone (default ~/.cache/tai-peers). A second
# run reuses the cache. Prints the env lines the tests read.
set -euo pipefail
CACHE="${TAI_PEERS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tai-peers}"
mkdir -p "$CACHE"

# TypeScript SDK example agent (1.9.0 is the last release that ships examples).
TS_DIR="$CACHE/acp-ts-1.9.0"
TS_AGENT="$TS_DIR/node_modules/@agentclientprotocol/sdk/dist/examples/agent.js"
if [ ! -f "$TS_AGENT" ]; then
  mkdir -p "$TS_DIR"
  (cd "$TS_DIR" && { [ -f package.json ] || npm init -y >/dev/null; } &&
    npm install --no-audit --no-fund --loglevel=error @agentclientprotocol/sdk@1.9.0 >&2)
fi

# Go SDK example agent.
GO_AGENT="$CACHE/acp-go-0.13.0/agent"
if [ ! -x "$GO_AGENT" ]; then
  mkdir -p "$CACHE/acp-go-0.13.0"
  GOBIN="$CACHE/acp-go-0.13.0" go install github.com/coder/acp-go-sdk/example/agent@v0.13.0 >&2
fi

# acpx, a headless ACP client, drives `tai acp` in e2e/acpserver.
ACPX_DIR="$CACHE/acpx-0.19.1"
ACPX="$ACPX_DIR/node_modules/.bin/acpx"
if [ ! -x "$ACPX" ]; then
  mkdir -p "$ACPX_DIR"
  (cd "$ACPX_DIR" && { [ -f package.json ] || npm init -y >/dev/null; } &&
    npm install --no-audit --no-fund --loglevel=error acpx@0.19.1 >&2)
fi

# The A2A JavaScript SDK's server (with express, its peer) for the A2A agents
# e2e/a2a writes on it (e2e/a2a/testdata).
A2A_JS_DIR="$CACHE/a2a-js-1.3.0"
if [ ! -f "$A2A_JS_DIR/node_modules/@a2a-js/sdk/package.json" ] || [ ! -f "$A2A_JS_DIR/node_modules/express/package.json" ]; then
  mkdir -p "$A2A_JS_DIR"
  (cd "$A2A_JS_DIR" && { [ -f package.json ] || npm init -y >/dev/null; } &&
    npm install --no-audit --no-fund --loglevel=error @a2a-js/sdk@1.3.0 express@5.3.0 >&2)
fi

echo "TAI_TS_AGENT=$TS_AGENT"
echo "TAI_TS_CLIENT=$(dirname "$TS_AGENT")/client.js"
echo "TAI_ACPX=$ACPX"
echo "TAI_GO_AGENT=$GO_AGENT"
echo "TAI_A2A_JS=$A2A_JS_DIR"
