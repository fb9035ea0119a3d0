// Command oneupdate is the least an ACP agent can be, for the start-up
// benchmark (e2e BenchmarkStartup/minimal): it answers initialize and
// session/new, sends one agent_message_chunk for a prompt and ends the
// turn, and exits at EOF. A small program, so that the benchmark measures
// the client's start-up, not the agent's.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
)

type message struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 0, 64<<10), 16<<20)
	out := bufio.NewWriter(os.Stdout)
	reply := func(id json.RawMessage, result string) {
		fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", id, result)
	}
	for in.Scan() {
		var m message
		if json.Unmarshal(in.Bytes(), &m) != nil || len(m.ID) == 0 || m.Method == "" {
			continue // notifications and responses need nothing
		}
		switch m.Method {
		case "initialize":
			reply(m.ID, `{"protocolVersion":1,"agentCapabilities":{},"authMethods":[]}`)
		case "session/new":
			reply(m.ID, `{"sessionId":"s1"}`)
		case "session/prompt":
			fmt.Fprintln(out, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"one update"}}}}`)
			reply(m.ID, `{"stopReason":"end_turn"}`)
		default:
			fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`+"\n", m.ID)
		}
		if err := out.Flush(); err != nil {
			os.Exit(1)
		}
	}
}
