// Package builtin is tai's built-in ACP agent: a real Agent Client Protocol
// (v1) agent that lives inside the tai binary and needs no model.
//
// Instead of an LLM it plays a Script: a list of steps (text, thoughts, a plan,
// file reads and writes through the client's fs/* service, a command through
// the client's terminal/* service, permission requests, mode switches, usage
// and session info updates) plus fault-injection steps (crash, hang, garbage
// on stdout, oversized lines, late updates, floods) that tai's own tests use.
// It serves three purposes: the first demo in the README (`tai run "prompt"`),
// a conformance peer for tai's ACP client, and a peer for any other ACP client.
//
// Serve speaks NDJSON JSON-RPC 2.0 on the given reader and writer (normally
// stdin/stdout) until EOF or context cancellation. stdout carries only ACP
// messages (except the deliberate `garbage` step); logs go to Options.Logger.
//
// Scripts are YAML or JSON (see LoadScript); DefaultScript shows every
// non-fault feature. A prompt that starts with "/" is a slash command
// (/echo, /help, /plan, /mode) instead of a run of the script.
package builtin
