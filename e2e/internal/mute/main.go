// Command mute is a hostile ACP agent for tai's end-to-end tests: it
// answers initialize and session/new, and on the first session/prompt it
// sends one message chunk, closes its stdout and lives on, ignoring
// SIGTERM, SIGINT and SIGHUP and session/cancel, until it is killed. It
// writes its pid to the file named by its first argument before it closes
// its stdout, so the test can check that nothing of it outlives tai.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  any             `json:"result,omitempty"`
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: mute PIDFILE")
		os.Exit(2)
	}
	signal.Ignore(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGPIPE)
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 64<<20)
	enc := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var m message
		if err := json.Unmarshal(in.Bytes(), &m); err != nil || m.ID == nil {
			continue // notifications (session/cancel among them) go unheeded
		}
		reply := message{JSONRPC: "2.0", ID: m.ID}
		switch m.Method {
		case "initialize":
			reply.Result = map[string]any{"protocolVersion": 1, "agentCapabilities": map[string]any{}}
		case "session/new":
			reply.Result = map[string]any{"sessionId": "mute-1"}
		case "session/prompt":
			_ = enc.Encode(message{JSONRPC: "2.0", Method: "session/update", Params: json.RawMessage(
				`{"sessionId":"mute-1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"going quiet"}}}`)})
			if err := os.WriteFile(os.Args[1], fmt.Appendf(nil, "%d\n", os.Getpid()), 0o600); err != nil {
				fmt.Fprintln(os.Stderr, "mute:", err)
				os.Exit(1)
			}
			os.Stdout.Close()
			live() // silent, deaf to signals: only SIGKILL ends it
		default:
			reply.Result = map[string]any{}
		}
		_ = enc.Encode(reply)
	}
	live() // stdin closed: still alive
}

// live blocks for good (a bare select{} would be the runtime's deadlock).
func live() {
	for {
		time.Sleep(time.Hour)
	}
}
