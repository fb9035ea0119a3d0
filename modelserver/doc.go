// Package modelserver is a scripted fake LLM provider: an HTTP server that
// speaks the OpenAI Chat Completions, OpenAI Responses, Anthropic Messages
// and Gemini APIs, streaming and not, and answers from a script instead of
// a model. Real coding agents (qwen-code, gemini-cli, codex, opencode,
// Claude Code, Copilot CLI) pointed at it run fully offline and
// deterministically, which makes it tai's test infrastructure and a
// zero-cost backend for CI runs (tai model serve --script FILE).
//
// # Scripts
//
// A script (JSON or YAML) lists turns, consumed in order, one per request
// that offers tools:
//
//	{
//	  "turns": [
//	    {"text": "plain reply"},
//	    {"thinking": "reasoning", "text": "answer"},
//	    {"text": "preamble", "tool": "write_file", "args": {"file_path": "{{CWD}}/a.txt", "content": "x"}},
//	    {"tool": {"write_file": {...}, "write": {...}, "Write": {...}, "create": {...}, "apply_patch": "*** Begin Patch..."}},
//	    {"tools": [{"tool": "read_file", "args": {...}}, {"tool": "glob", "args": {...}}]},
//	    {"json": {"any": "value"}},
//	    {"text": "slow", "delay": 2.5, "chunk_delay": 50},
//	    {"error": 429, "retry_after": 1}, {"error": 500, "message": "boom"}, {"error": 529},
//	    {"text": "waits for a request mentioning X", "match": "X"}
//	  ],
//	  "default":  {"text": "after the last turn"},
//	  "untooled": {"text": "answer to requests that do not consume"},
//	  "consume":  "tooled",
//	  "ignore":   ["SUGGESTION MODE"],
//	  "cwd":      "/abs/repo",
//	  "models":   ["fake-model"],
//	  "limit":    {"after": 2, "until": "2026-12-07T15:00:00Z", "message": "...", "retry_after": 1, "times": 2, "tooled": true}
//	}
//
// A "tool" map lists per-agent-family alternatives: the first name, in
// script order, that the request offers is called, otherwise the first.
// String args are the input of a freeform (custom) tool such as codex's
// apply_patch; sent to a function tool they become its sole string
// parameter. {{CWD}} is replaced in text, thinking, json, args and match.
//
// Requests that offer no tools, that contain an "ignore" substring, that
// force a tool choice, or that arrive while the next turn waits for its
// "match" do not consume a turn; they get "untooled", else "default", else
// "OK.". Requests for structured output get the turn's "json", else text
// that is valid JSON, else a value synthesised from the requested schema.
//
// A 429 (an error turn, or the "limit") says when it resets as each
// provider does: Retry-After and Retry-After-Ms; OpenAI's
// x-ratelimit-{limit,remaining,reset}-{requests,tokens}; Anthropic's
// anthropic-ratelimit-*-reset (RFC 3339) and a rate_limit_error body;
// Gemini's RESOURCE_EXHAUSTED with a google.rpc.RetryInfo retryDelay. The
// "limit" is an account at its usage limit: after "after" requests every
// request gets that 429, consuming no turn, until "until" (none: never);
// then the script goes on. Its 429s say the time to "until" unless
// "retry_after" (seconds) says otherwise. "times" clears it after that many
// refusals whatever the clock says (a test's resume finds it cleared).
// "tooled": true limits only requests that offer tools (an agent's turns),
// not its side requests (a session title).
// "window" (five_hour, seven_day, ...) makes Anthropic's 429s those of a
// Claude plan's usage window: the anthropic-ratelimit-unified-* headers
// (status rejected, reset in Unix seconds, the representative claim), and
// the OpenAI dialects' a ChatGPT plan's (usage_limit_reached, resets_at).
//
// Control endpoints: POST /_script (body: a new script; rewinds),
// POST /_reset (reload the script file; rewinds), GET /_state.
// Every request is logged as one JSON line (LogEntry) to Options.Log.
package modelserver
