package acpserver

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"testing"
)

// rawEditor speaks JSON-RPC to `tai acp` line by line, so that tests see
// the wire exactly as tai wrote it.
type rawEditor struct {
	t    *testing.T
	cmd  *exec.Cmd
	in   io.WriteCloser
	msgs chan map[string]json.RawMessage
	next int
}

func startRaw(t *testing.T, dir string, args ...string) *rawEditor {
	t.Helper()
	cmd := exec.Command(taiBin, append([]string{"acp"}, args...)...)
	cmd.Dir, cmd.Env, cmd.Stderr = dir, env(dir), os.Stderr
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	e := &rawEditor{t: t, cmd: cmd, in: in, msgs: make(chan map[string]json.RawMessage, 4096)}
	go func() {
		defer close(e.msgs)
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			var m map[string]json.RawMessage
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Errorf("tai wrote a line that is not a JSON object: %q", sc.Text())
				continue
			}
			e.msgs <- m
		}
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return e
}

func (e *rawEditor) send(v any) {
	e.t.Helper()
	b, _ := json.Marshal(v)
	if _, err := e.in.Write(append(b, '\n')); err != nil {
		e.t.Fatalf("writing to tai: %v", err)
	}
}

// call sends a request and returns its id.
func (e *rawEditor) call(method string, params any) int {
	e.next++
	e.send(map[string]any{"jsonrpc": "2.0", "id": e.next, "method": method, "params": params})
	return e.next
}

// until reads messages, handing each to on, until on says stop; tai's
// end of output fails the test.
func (e *rawEditor) until(on func(m map[string]json.RawMessage) (stop bool)) {
	e.t.Helper()
	for m := range e.msgs {
		if on(m) {
			return
		}
	}
	e.t.Fatal("tai closed its output")
}

// result waits for the response to id, passing other messages to on.
func (e *rawEditor) result(id int, on func(m map[string]json.RawMessage)) map[string]json.RawMessage {
	e.t.Helper()
	var res map[string]json.RawMessage
	want, _ := json.Marshal(id)
	e.until(func(m map[string]json.RawMessage) bool {
		if string(m["id"]) == string(want) && m["method"] == nil {
			res = m
			return true
		}
		if on != nil {
			on(m)
		}
		return false
	})
	return res
}

// finish closes tai's stdin and waits for it to exit.
func (e *rawEditor) finish() {
	e.t.Helper()
	e.in.Close()
	for range e.msgs {
	}
	if err := e.cmd.Wait(); err != nil {
		e.t.Fatalf("tai acp: %v", err)
	}
}

func str(raw json.RawMessage) string {
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}
