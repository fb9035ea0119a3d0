package e2e

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// parent drives `tai --cap-speak stream-json` the way another
// orchestrator would: user messages and control lines in, frames out.
type parent struct {
	t      *testing.T
	cmd    *exec.Cmd
	in     io.WriteCloser
	frames chan map[string]any
	all    []map[string]any
	done   chan struct{} // closed once finish has waited for tai
}

func startParent(t *testing.T, dir string, args ...string) *parent {
	t.Helper()
	cmd := exec.Command(taiBin, append([]string{"--cap-speak", "stream-json", "--no-audit"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "NO_COLOR=1", "XDG_STATE_HOME="+stateDir)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &parent{t: t, cmd: cmd, in: in, frames: make(chan map[string]any, 1024), done: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Errorf("stdout line is not JSON: %q", sc.Text())
				continue
			}
			p.frames <- m
		}
		close(p.frames)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default: // the test failed before finish: do not leave tai behind
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return p
}

func (p *parent) send(v any) {
	p.t.Helper()
	b, _ := json.Marshal(v)
	if _, err := p.in.Write(append(b, '\n')); err != nil {
		p.t.Fatalf("writing to tai: %v", err)
	}
}

func (p *parent) say(text string) {
	p.send(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": text}})
}

// next returns the next line that satisfies match, answering every
// can_use_tool on the way with answer (nil: leave it). The deadline only
// guards against a hang.
func (p *parent) next(match func(map[string]any) bool, answer func(req map[string]any) string) map[string]any {
	p.t.Helper()
	timeout := time.After(2 * time.Minute)
	for {
		select {
		case m, ok := <-p.frames:
			if !ok {
				p.t.Fatalf("tai's output ended first; it printed %d lines", len(p.all))
			}
			p.all = append(p.all, m)
			if m["type"] == "control_request" && answer != nil {
				req, _ := m["request"].(map[string]any)
				if req["subtype"] == "can_use_tool" {
					behavior := answer(req)
					resp := map[string]any{"behavior": behavior}
					if behavior == "deny" {
						resp["message"] = "the parent says no"
					}
					p.send(map[string]any{"type": "control_response", "response": map[string]any{
						"subtype": "success", "request_id": m["request_id"], "response": resp}})
				}
			}
			if match(m) {
				return m
			}
		case <-timeout:
			p.t.Fatalf("no matching line in time; saw %d lines", len(p.all))
		}
	}
}

func ofType(typ string) func(map[string]any) bool {
	return func(m map[string]any) bool { return m["type"] == typ }
}

// finish closes tai's input and returns its result frame and exit code.
func (p *parent) finish(answer func(map[string]any) string) (map[string]any, int) {
	p.t.Helper()
	p.in.Close()
	res := p.next(ofType("result"), answer)
	err := p.cmd.Wait()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		p.t.Fatal(err)
	}
	close(p.done)
	return res, code
}

// Two user messages are two turns of one session in one agent process;
// the conversation ends with the parent's input, with one result frame.
func TestCapSpeakTurnsInOneSession(t *testing.T) {
	// --approve all: the turns run without questions; the turns are the subject.
	p := startParent(t, t.TempDir(), "--approve", "all")
	p.send(map[string]any{"type": "control_request", "request_id": "init", "request": map[string]any{"subtype": "initialize"}})
	resp := p.next(ofType("control_response"), nil)
	if r, _ := resp["response"].(map[string]any); r["subtype"] != "success" || r["request_id"] != "init" {
		t.Fatalf("initialize answered %v", resp)
	}
	p.say("first")
	first := p.next(ofType("turn.ended"), nil)
	p.send("not an object")              // skipped, with a warning
	p.in.Write([]byte("{broken json\n")) // skipped too
	p.say("/help")
	second := p.next(ofType("turn.ended"), nil)
	if first["session"] != second["session"] || first["session"] == nil {
		t.Fatalf("turns ran in sessions %v and %v; want one", first["session"], second["session"])
	}
	res, code := p.finish(nil)
	if code != 0 || res["status"] != "ok" || res["session_id"] != first["session"] {
		t.Fatalf("exit %d, result %v", code, res)
	}
	starts := 0
	for _, m := range p.all {
		if m["type"] == "session.started" {
			starts++
		}
	}
	if starts != 1 {
		t.Fatalf("%d session.started frames; want 1", starts)
	}
}

// Asks that tai's policy leaves open go to the parent as can_use_tool;
// its answers decide, recorded as the answerer's, and a denial sets the
// exit code as usual.
func TestCapSpeakAsksTheParent(t *testing.T) {
	dir := t.TempDir()
	p := startParent(t, dir, "--approve", "ask")
	p.say("go")
	asked := 0
	answer := func(req map[string]any) string {
		asked++
		if asked == 1 {
			return "deny"
		}
		return "allow"
	}
	p.next(ofType("turn.ended"), answer)
	res, code := p.finish(answer)
	if asked < 2 {
		t.Fatalf("the parent was asked %d times; want every ask", asked)
	}
	var byAnswerer, denied int
	for _, m := range p.all {
		if m["type"] != "permission.decided" {
			continue
		}
		d, _ := m["decision"].(map[string]any)
		if d["decided_by"] == "answerer" {
			byAnswerer++
		}
		if d["verdict"] == "deny" {
			denied++
		}
	}
	if byAnswerer != asked || denied != 1 {
		t.Fatalf("%d decisions by the answerer (asked %d), %d denied; want all by it and one denial", byAnswerer, asked, denied)
	}
	if code != 5 || res["status"] != "denied" {
		t.Fatalf("exit %d status %v; want 5 denied", code, res["status"])
	}
}

// An interrupt stops the running turn only: the next message still runs
// in the same session.
func TestCapSpeakInterrupt(t *testing.T) {
	p := startParent(t, t.TempDir(), "--agent-cmd", builtinWith(script("slow.yaml")))
	p.say("take your time")
	p.next(func(m map[string]any) bool {
		msg, _ := m["message"].(map[string]any)
		return m["type"] == "message.chunk" && msg["text"] == "thinking slowly"
	}, nil)
	p.send(map[string]any{"type": "control_request", "request_id": "int-1", "request": map[string]any{"subtype": "interrupt"}})
	ended := p.next(ofType("turn.ended"), nil)
	if turn, _ := ended["turn"].(map[string]any); turn["stop_reason"] != "cancelled" {
		t.Fatalf("interrupted turn ended %v", ended)
	}
	p.say("/help")
	again := p.next(ofType("turn.ended"), nil)
	if turn, _ := again["turn"].(map[string]any); turn["stop_reason"] != "end_turn" || again["session"] != ended["session"] {
		t.Fatalf("the turn after the interrupt: %v", again)
	}
	res, code := p.finish(nil)
	if code != 0 || res["status"] != "ok" {
		t.Fatalf("exit %d, result %v", code, res)
	}
}

func TestCapSpeakUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--input-format", "stream-json", "-o", "json"}, "needs --output stream-json"},
		{[]string{"run", "--input-format", "xml", "-o", "stream-json"}, "must be text or stream-json"},
		{[]string{"--cap-speak", "stream-json", "-"}, "stdin carries the conversation"},
	} {
		o := tai(t, t.TempDir(), tc.args...)
		if o.code != 2 || !strings.Contains(o.stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, o.code, o.stderr, tc.want)
		}
	}
}

// A parent tai drives a child tai (`--cap-speak stream-json`) with its
// stream-json driver: the child's session is the session, the child asks
// the parent's policy, the child's frames (files written) reach the
// parent's result, and --resume goes through to the child's agent.
func TestTaiDrivesTai(t *testing.T) {
	child := taiBin + " --cap-speak stream-json --approve ask"
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		status string
		files  int
	}{
		{"parent allows", []string{"--approve", "all"}, 0, "ok", 2},
		{"parent denies", []string{"--approve", "deny"}, 5, "denied", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			args := append([]string{"run", "--agent-cmd", child, "--driver", "stream-json", "-o", "json"}, tc.args...)
			r := jsonResult(t, tai(t, dir, append(args, "hello")...))
			if r.ExitCode != tc.code || r.Status != tc.status || len(r.FilesWritten) != tc.files {
				t.Fatalf("exit %d status %s, %d files written; want %d %s %d (%s)", r.ExitCode, r.Status, len(r.FilesWritten), tc.code, tc.status, tc.files, r.Error)
			}
			if !strings.HasPrefix(r.SessionID, "builtin-") {
				t.Errorf("session %q; want the child's agent's session", r.SessionID)
			}
			for _, d := range r.Permissions {
				if d.DecidedBy != "default" {
					t.Errorf("a decision by %q; want every ask decided by the parent's policy", d.DecidedBy)
				}
			}
		})
	}

	t.Run("resume", func(t *testing.T) {
		dir := t.TempDir()
		first := jsonResult(t, tai(t, dir, "run", "--agent-cmd", child, "--driver", "stream-json", "--approve", "all", "-o", "json", "one"))
		second := jsonResult(t, tai(t, dir, "run", "--agent-cmd", child, "--driver", "stream-json", "--approve", "all", "-o", "json", "--resume", first.SessionID, "two"))
		if second.Status != "ok" || second.SessionID != first.SessionID {
			t.Fatalf("resumed run: %s %q, want ok %q (%s)", second.Status, second.SessionID, first.SessionID, second.Error)
		}
	})

	t.Run("timeout reaches the grandchild", func(t *testing.T) {
		dir := t.TempDir()
		marker := script("slow.yaml")
		slow := taiBin + " --cap-speak stream-json --agent-cmd '" + builtinWith(marker) + "'"
		o := tai(t, dir, "run", "--agent-cmd", slow, "--driver", "stream-json", "--timeout", "2s", "-o", "json", "hello")
		r := jsonResult(t, o)
		if r.ExitCode != 3 || r.Status != "timeout" {
			t.Fatalf("exit %d status %s; want 3 timeout", r.ExitCode, r.Status)
		}
		if left := agentProcesses(t, marker); len(left) > 0 {
			t.Fatalf("processes left behind: %v", left)
		}
	})
}
