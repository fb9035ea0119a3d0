package streamjson

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestCapSpeakClaudeTurns: several turns in one claude process through the
// real tai binary: a parent drives `tai --cap-speak stream-json`, which
// drives the claude CLI over stream-json with stdin kept open between the
// turns. One claude process serves both; the second request carries the
// first turn.
func TestCapSpeakClaudeTurns(t *testing.T) {
	exe := claudeExe(t)
	w := newWorld(t, twoTurnScript)
	w.claudeEnv()
	args := append([]string{"--cap-speak", "stream-json", "-C", w.repo, "--no-audit"}, claudeArgs(exe)...)
	cmd := exec.Command(taiBin, args...)
	cmd.Dir, cmd.Env = w.repo, w.env
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	frames := make(chan map[string]any, 256)
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				frames <- m
			}
		}
		close(frames)
	}()
	var seen []map[string]any
	// next waits for a frame of type typ; the deadline guards a hang only.
	next := func(typ string) map[string]any {
		t.Helper()
		deadline := time.After(3 * time.Minute)
		for {
			select {
			case m, ok := <-frames:
				if !ok {
					t.Fatalf("tai's output ended before a %s frame\nstderr:\n%s", typ, tailStr(stderr.String(), 3000))
				}
				seen = append(seen, m)
				if m["type"] == typ {
					return m
				}
			case <-deadline:
				t.Fatalf("no %s frame in time", typ)
			}
		}
	}
	say := func(text string) {
		b, _ := json.Marshal(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": text}})
		if _, err := in.Write(append(b, '\n')); err != nil {
			t.Fatal(err)
		}
	}
	say(firstPrompt)
	first := next("turn.ended")
	say(secondPrompt)
	second := next("turn.ended")
	if first["session"] != second["session"] {
		t.Fatalf("turns in sessions %v and %v", first["session"], second["session"])
	}
	for _, m := range seen {
		if m["type"] == "process.exited" {
			t.Fatalf("claude exited between turns: %v", m)
		}
	}
	in.Close()
	res := next("result")
	if res["status"] != "ok" || res["exit_code"] != float64(0) {
		t.Fatalf("result %v", res)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("tai: %v", err)
	}
	exits := 0
	for _, m := range seen {
		if m["type"] == "process.exited" {
			exits++
		}
	}
	if exits != 1 {
		t.Errorf("%d process.exited frames; want 1: one claude process for both turns", exits)
	}
	w.checkHistory()
	w.checkNoLeftovers()
}

// TestClaudeSetModel: --model becomes a set_model control request, and the
// CLI's next model request names that model.
func TestClaudeSetModel(t *testing.T) {
	exe := claudeExe(t)
	w := newWorld(t, textScript)
	w.claudeEnv()
	const model = "claude-tai-test-model"
	r := w.result(w.run(append(claudeArgs(exe), "--model", model, "--output", "json", "Say hello.")...))
	if r.Status != "ok" {
		t.Fatalf("status %q (%s)", r.Status, r.Error)
	}
	if n := w.wire("out", `"subtype":"set_model"`); n != 1 {
		t.Errorf("%d set_model requests on the wire, want 1", n)
	}
	f, err := os.Open(w.mlog)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, _ := io.ReadAll(f)
	if !strings.Contains(string(b), fmt.Sprintf("%q", model)) {
		t.Errorf("no model request named %s (see %s)", model, w.mlog)
	}
}
