#!/usr/bin/env bash
# Runs the real-agent suite (e2e/realagents) against the registry's newest
# release of every agent, not the pins, and prints a matrix of what each
# did through tai: a Markdown table for the README's "Newest-versions
# matrix". Not part of CI's gate (the newest releases change under it):
# run it before a release.
#
#   scripts/agent-matrix.sh                 # every agent, every scenario
#   TAI_MATRIX_RUN='TestRealAgents/codex/' scripts/agent-matrix.sh
#
# The newest releases go to a cache of their own
# (${XDG_CACHE_HOME:-$HOME/.cache}/tai-agents-latest; TAI_AGENTS_LATEST_DIR
# overrides it), installed by scripts/install-agents.sh with
# TAI_AGENTS_LATEST=1. The table's columns come from the approve scenario
# (read notes.txt, write hello.txt, run a command, everything allowed):
#   handshake  the session started
#   asked      the agent asked tai for a permission
#   file       hello.txt landed, its edit decided by tai's policy (audited)
#   command    the command was decided by tai's policy, its output reached the model
#   reply      the model's last answer came back as the result
#   exit       tai's exit code
#   scenarios  the suite's scenarios for that agent: pass, or those that failed
# The go test log is kept (its path is printed on stderr).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

export TAI_AGENTS_LATEST=1
export TAI_AGENTS_DIR="${TAI_AGENTS_LATEST_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tai-agents-latest}"
eval "$(scripts/install-agents.sh | sed 's/^/export /')"

work="$(mktemp -d "${TMPDIR:-/tmp}/tai-agent-matrix.XXXXXX")"
export TAI_REALAGENTS_MATRIX="$work/rows.jsonl"
log="$work/go-test.log"
run="${TAI_MATRIX_RUN:-TestRealAgents|TestAgentsArePinned}"
echo "agent-matrix: go test ./e2e/realagents -run '$run' (log: $log)" >&2
status=0
go test ./e2e/realagents -count=1 -v -timeout 60m -run "$run" >"$log" 2>&1 || status=$?

# field NAME LINE: a string, number or boolean member of one JSON line
# (the suite writes flat objects of those).
field() { sed -E 's/.*"'"$1"'":("([^"]*)"|([^,}]*)).*/\2\3/' <<<"$2"; }
yn() { if [ "$1" = true ]; then echo yes; else echo NO; fi; }

echo "Newest releases, $(date -u +%Y-%m-%d) (tai $(git rev-parse --short HEAD 2>/dev/null || echo unknown)):"
echo
echo "| agent | version | driver | handshake | asked | file through tai | command through tai | reply | exit | scenarios |"
echo "|---|---|---|---|---|---|---|---|---|---|"
touch "$TAI_REALAGENTS_MATRIX"
while IFS= read -r line; do
  [ -n "$line" ] || continue
  a="$(field agent "$line")"
  failed="$(sed -nE 's/^ *--- FAIL: TestRealAgents\/'"$a"'\/([^ ]+).*/\1/p' "$log" | tr '\n' ' ')"
  scen=pass
  [ -z "$failed" ] || scen="FAIL: ${failed% }"
  echo "| $a | $(field version "$line") | $(field driver "$line") | $(yn "$(field handshake "$line")") | $(yn "$(field asked "$line")") |" \
    "$(yn "$(field file "$line")") | $(yn "$(field command "$line")") | $(yn "$(field reply "$line")") | $(field exit "$line") | $scen |"
done < <(sort "$TAI_REALAGENTS_MATRIX")
# Agents that never reached the approve scenario (not installed, or the
# suite stopped before it).
for a in $(sed -nE 's/^ *--- (FAIL|SKIP): TestRealAgents\/([^/ ]+) .*/\2/p' "$log" | sort -u); do
  grep -q "\"agent\":\"$a\"" "$TAI_REALAGENTS_MATRIX" || echo "| $a | - | - | - | - | - | - | - | - | did not run: see $log |"
done
[ "$status" = 0 ] || echo "agent-matrix: go test failed (exit $status); see $log" >&2
exit "$status"
