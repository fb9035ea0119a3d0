#!/usr/bin/env bash
# Installs the pinned Claude Code CLI (@anthropic-ai/claude-code) that tai's
# stream-json driver tests drive headless, into the same cache as
# scripts/install-agents.sh: ${XDG_CACHE_HOME:-$HOME/.cache}/tai-agents/
# claude-code-<version>. A second run reuses the cache and is a fast no-op.
#
#   eval "$(scripts/install-claude.sh | sed 's/^/export /')"
#   eval "$(scripts/install-claude.sh old | sed 's/^/export /')"
#
# "old" installs, instead, the older release that e2e/pty's
# TestRealOlderClaude drives (replies on a version the PTY profile was not
# tuned to); only when named: it is 380 MB.
# Progress goes to stderr; stdout is only KEY=VALUE lines the tests read:
#   TAI_CLAUDE_CLI   the claude executable (a native binary)
#   TAI_CLAUDE_CLI_OLD  the same of the older release, with "old"
# The directory is finished by a .ok stamp written only after npm
# succeeded, so an interrupted install is redone rather than trusted.
set -euo pipefail

VERSION="${TAI_CLAUDE_CODE_VERSION:-2.1.332}"
KEY=TAI_CLAUDE_CLI
case "${1:-}" in
"") ;;
old) VERSION=2.1.300 KEY=TAI_CLAUDE_CLI_OLD ;;
*)
  echo "install-claude: unknown argument $1 (known: old)" >&2
  exit 2
  ;;
esac
CACHE="${TAI_AGENTS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tai-agents}"
mkdir -p "$CACHE"
CACHE="$(cd "$CACHE" && pwd -P)"
DIR="$CACHE/claude-code-$VERSION"
EXE="$DIR/node_modules/.bin/claude"
FALLBACK="$DIR/node_modules/@anthropic-ai/claude-code-linux-x64/claude"

if command -v flock >/dev/null; then
  exec 9>"$CACHE/.claude-code.lock"
  flock 9
fi

if [ ! -f "$DIR/.ok" ]; then
  log="$CACHE/claude-code.install.log"
  echo "install-claude: installing @anthropic-ai/claude-code@$VERSION into $DIR" >&2
  rm -rf "$DIR"
  mkdir -p "$DIR"
  printf '{"name":"tai-agent-claude-code","private":true}\n' >"$DIR/package.json"
  if ! (cd "$DIR" && npm install --no-audit --no-fund --no-update-notifier --loglevel=error --save-exact \
    "@anthropic-ai/claude-code@$VERSION") >"$log" 2>&1; then
    echo "install-claude: npm install failed; its output:" >&2
    cat "$log" >&2
    exit 1
  fi
  if ! "$EXE" --version >/dev/null 2>&1 && ! "$FALLBACK" --version >/dev/null 2>&1; then
    echo "install-claude: installed, but neither $EXE nor $FALLBACK runs" >&2
    exit 1
  fi
  touch "$DIR/.ok"
fi
if "$EXE" --version >/dev/null 2>&1; then
  echo "$KEY=$EXE"
else
  echo "$KEY=$FALLBACK"
fi
