#!/usr/bin/env bash
# Re-captures the golden screens and recordings of one real agent TUI,
# offline, against `tai model serve` (the recipes of
# e2e/realagents/agents_test.go). Needs the agents installed:
#   eval "$(scripts/install-agents.sh | sed 's/^/export /')"
#   eval "$(scripts/install-claude.sh | sed 's/^/export /')"
#   driver/pty/testdata/capture.sh qwen|gemini|opencode|codex|claude|copilot
# Writes driver/pty/testdata/<agent>/<version>/*.{screen,rec}; the .want
# verdicts are written by hand after looking at the screens.
set -euo pipefail
agent=$1
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
work=$(mktemp -d)
trap 'kill $(cat $work/model.pid 2>/dev/null) 2>/dev/null || true; rm -rf "$work"' EXIT
go build -o "$work/tai" "$root/cmd/tai"
go build -o "$work/capture" "$root/driver/pty/internal/capture"
home=$work/home repo=$work/repo
mkdir -p "$home/tmp" "$repo"
echo "Notes for the agent: n0tes-marker-42" >"$repo/notes.txt"
(cd "$repo" && git init -q -b main && git add notes.txt && git -c user.email=t@t -c user.name=t commit -qm notes)
script=${SCRIPT:-$root/modelserver/testdata/scripts/write.json}
"$work/tai" model serve --script "$script" --cwd "$repo" --url-file "$work/url" --log "$work/model.jsonl" 2>"$work/model.err" &
echo $! >"$work/model.pid"
for _ in $(seq 300); do [ -s "$work/url" ] && break; sleep 0.1; done
url=$(cat "$work/url")
env=(HOME=$home TMPDIR=$home/tmp XDG_CONFIG_HOME=$home/.config XDG_DATA_HOME=$home/.local/share
  XDG_CACHE_HOME=$home/.cache XDG_STATE_HOME=$home/.local/state SHELL=/bin/bash LANG=C.UTF-8 PATH=$PATH)
case $agent in
qwen)
  version=0.24.4
  mkdir -p "$home/.qwen"
  cat >"$home/.qwen/settings.json" <<J
{"security":{"auth":{"selectedType":"openai"}},"model":{"name":"fake-model"},
 "general":{"disableAutoUpdate":true,"disableUpdateNag":true},"ui":{"enableFollowupSuggestions":false},
 "memory":{"enableManagedAutoMemory":false},"privacy":{"usageStatisticsEnabled":false},"telemetry":{"enabled":false}}
J
  env+=(PATH=$TAI_NODE22_BIN:$PATH OPENAI_BASE_URL=$url/v1 OPENAI_API_KEY=sk-fake OPENAI_MODEL=fake-model)
  argv=("$TAI_AGENT_QWEN" --approval-mode default)
  ;;
gemini)
  version=0.61.0
  mkdir -p "$home/.gemini"
  cat >"$home/.gemini/settings.json" <<J
{"security":{"auth":{"selectedType":"gemini-api-key"}},"general":{"disableAutoUpdate":true,"disableUpdateNag":true},
 "privacy":{"usageStatisticsEnabled":false},"telemetry":{"enabled":false}}
J
  env+=(GEMINI_API_KEY=fake-key GOOGLE_GEMINI_BASE_URL=$url)
  argv=("$TAI_AGENT_GEMINI" -m gemini-2.5-flash)
  ;;
opencode)
  version=1.18.33
  mkdir -p "$home/.config/opencode"
  cat >"$home/.config/opencode/opencode.json" <<J
{"autoupdate":false,"share":"disabled","model":"fake/fake-model","small_model":"fake/fake-model",
 "permission":{"edit":"ask","bash":"ask"},
 "provider":{"fake":{"npm":"@ai-sdk/openai-compatible","name":"tai modelserver",
   "options":{"baseURL":"$url/v1","apiKey":"sk-fake"},"models":{"fake-model":{"name":"fake-model","tool_call":true}}}}}
J
  env+=(OPENCODE_DISABLE_MODELS_FETCH=1 OPENCODE_DISABLE_AUTOUPDATE=1 OPENCODE_DISABLE_LSP_DOWNLOAD=1 npm_config_offline=true)
  argv=("$TAI_AGENT_OPENCODE")
  ;;
codex)
  version=0.171.0
  # The e2e/realagents recipe: a known model slug, the model server as a
  # Responses provider. On request in the read-only sandbox: the model's
  # command that asks to leave the sandbox (write.json) gets the approval
  # picker. The folder is not trusted: the trust dialog comes first.
  mkdir -p "$home/.codex"
  cat >"$home/.codex/config.toml" <<T
model = "gpt-5.3-codex"
model_provider = "fake"

[model_providers.fake]
name = "tai modelserver"
base_url = "$url/v1"
wire_api = "responses"
env_key = "FAKE_API_KEY"
T
  env+=(CODEX_HOME=$home/.codex FAKE_API_KEY=sk-fake)
  # --no-daemon: by default it starts a shared app server that outlives
  # the TUI.
  argv=("$TAI_AGENT_CODEX_CLI" -a on-request -s read-only --no-daemon)
  ;;
claude)
  # The first-run screens are answered in ~/.claude.json the way a user
  # who set Claude Code up would have: onboarding done, a theme, the API
  # key approved (by its last 20 characters), and the diff side panel,
  # which opens by itself on a wide terminal once a file changed, off.
  # The folder-trust dialog is left for tai's policy to answer. The
  # default permission mode is "auto" (it writes without asking):
  # --permission-mode default makes it ask.
  version=2.1.332
  key=sk-ant-api03-tai-offline-fake-key-0123456789
  cat >"$home/.claude.json" <<J
{"hasCompletedOnboarding":true,"theme":"dark","autoUpdates":false,"diffSidebarOpen":false,
 "customApiKeyResponses":{"approved":["${key: -20}"],"rejected":[]}}
J
  env+=(ANTHROPIC_BASE_URL=$url ANTHROPIC_API_KEY=$key CLAUDE_CODE_MAX_RETRIES=0
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1)
  argv=("$TAI_CLAUDE_CLI" --permission-mode default)
  ;;
copilot)
  # BYOK (the e2e/realagents recipe): the model server as an OpenAI
  # provider, no GitHub login.
  version=1.0.102
  env+=(COPILOT_PROVIDER_BASE_URL=$url/v1 COPILOT_PROVIDER_API_KEY=sk-fake COPILOT_MODEL=fake-model)
  argv=("$TAI_AGENT_COPILOT")
  ;;
*) echo "unknown agent $agent" >&2; exit 2 ;;
esac
out=${OUT:-$here/$agent/$version}
mkdir -p "$out"
steps=${STEPS:-$here/$agent/steps.txt}
cd "$repo"
env -i "${env[@]}" "$work/capture" -o "$out" -rec "${REC:-session}" -- "${argv[@]}" <"$steps"
echo "model log:" >&2; cut -c1-200 "$work/model.jsonl" >&2 || true
