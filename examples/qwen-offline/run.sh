#!/bin/sh
# Runs the qwen-offline fleet against tai's scripted model server: no
# network, no keys. Usage: run.sh REPO [tai fleet run flags...]
#   TAI=path/to/tai   the tai binary (default: tai on PATH)
#   RUN_ID=name       the fleet run's id (default: qwen-offline-<pid>)
# qwen gets a throw-away HOME with its settings (qwen-settings.json); tai's
# own state stays where XDG_STATE_HOME (or your HOME) says.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "${1:?usage: run.sh REPO [tai fleet run flags...]}" && pwd)
shift
tai=${TAI:-tai}
run=${RUN_ID:-qwen-offline-$$}
work=$(mktemp -d)
model=
cleanup() {
	[ -n "$model" ] && kill "$model" 2>/dev/null && wait "$model" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT INT TERM

# The model writes into the task's worktree: tai makes it at
# <repo>/.tai/worktrees/<run>/<task>.
"$tai" model serve --script "$here/model.json" --cwd "$repo/.tai/worktrees/$run/hello" --url-file "$work/url" >&2 &
model=$!
tries=0
until [ -s "$work/url" ]; do
	kill -0 "$model" 2>/dev/null || { echo "run.sh: tai model serve exited" >&2; exit 1; }
	tries=$((tries + 1))
	[ "$tries" -lt 300 ] || { echo "run.sh: tai model serve printed no URL" >&2; exit 1; }
	sleep 0.1
done
url=$(cat "$work/url")

mkdir -p "$work/home/.qwen" "$work/home/tmp"
cp "$here/qwen-settings.json" "$work/home/.qwen/settings.json"
: "${XDG_STATE_HOME:=$HOME/.local/state}"
export XDG_STATE_HOME
HOME="$work/home" TMPDIR="$work/home/tmp" \
	OPENAI_BASE_URL="$url/v1" OPENAI_API_KEY=sk-offline OPENAI_MODEL=fake-model \
	"$tai" fleet run --run-id "$run" -C "$repo" "$@" "$here/plan.yaml"
