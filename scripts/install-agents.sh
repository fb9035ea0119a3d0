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
#
# The pins are preset/tested.tsv's (--print-pins prints them). With
# TAI_AGENTS_LATEST=1 it installs the registry's newest release of each
# agent instead, into ${XDG_CACHE_HOME:-$HOME/.cache}/tai-agents-latest
# (scripts/agent-matrix.sh runs the suite against them).
set -euo pipefail

# The pins live in preset/tested.tsv, which tai reads too (tai agents and
# tai doctor compare an installed agent with them): name, npm package,
# version, executable relative to the install directory.
TESTED="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)/preset/tested.tsv"
PINS=()
NAMES=()
while IFS=$'\t' read -r n pkg v e; do
  [[ -z "$n" || "$n" = \#* ]] && continue
  PINS+=("$n|$v|$pkg@$v|$e")
  NAMES+=("$n")
done <"$TESTED"
[ ${#PINS[@]} -gt 0 ] || {
  echo "install-agents: no pins in $TESTED" >&2
  exit 1
}

# TAI_AGENTS_LATEST=1 (scripts/agent-matrix.sh): the registry's newest
# release of every agent instead of the pins, in a cache of its own; the
# -old releases have no newest of their own, and Node 22 stays pinned.
LATEST="${TAI_AGENTS_LATEST:-}"
if [ -n "$LATEST" ]; then
  DEFAULT_CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/tai-agents-latest"
else
  DEFAULT_CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/tai-agents"
fi

# --print-pins: the pins as this script reads them (name|version|spec|exe),
# nothing installed; preset's test compares them with tai's own reading.
if [ "${1:-}" = --print-pins ]; then
  printf '%s\n' "${PINS[@]}"
  exit 0
fi

CACHE="${TAI_AGENTS_DIR:-$DEFAULT_CACHE}"
JOBS="${TAI_AGENTS_JOBS:-2}"
mkdir -p "$CACHE"
CACHE="$(cd "$CACHE" && pwd -P)"
# One install at a time per cache (two test runs on one machine share it).
if command -v flock >/dev/null; then
  exec 9>"$CACHE/.lock"
  flock 9
fi

if [ -n "$LATEST" ]; then
  # One registry look-up per package: its newest release, which becomes
  # the pin (and so the install directory's name).
  for i in "${!PINS[@]}"; do
    IFS='|' read -r n v s e <<<"${PINS[$i]}"
    [[ "$n" = node22 || "$n" = *-old ]] && continue
    pkg="${s%@*}"
    v="$(npm view --no-update-notifier "$pkg@latest" version)" || {
      echo "install-agents: npm view $pkg failed" >&2
      exit 1
    }
    PINS[i]="$n|$v|$pkg@$v|$e"
  done
fi

pin() { # pin NAME -> sets P_VERSION P_SPEC P_EXE P_DIR
  local line
  for line in "${PINS[@]}"; do
    IFS='|' read -r n v s e <<<"$line"
    if [ "$n" = "$1" ]; then
      P_VERSION=$v P_SPEC=$s P_EXE=$e P_DIR="$CACHE/$n-$v"
      return 0
    fi
  done
  echo "install-agents: unknown agent $1 (known: ${NAMES[*]})" >&2
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
if [ ${#want[@]} -eq 0 ]; then
  want=(node22 qwen gemini codex codex-cli opencode claude copilot)
  [ -n "$LATEST" ] || want+=(qwen-old)
fi
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
