package streamjson

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tai-dev/tai/driver"
	sj "github.com/tai-dev/tai/driver/streamjson"
)

// twoTurnScript answers two turns; the second request must carry the
// first turn (PELICAN, and the first answer) for the agent to "remember".
const twoTurnScript = `{"ignore":["SUGGESTION MODE","memory extraction"],"turns":[
  {"text":"Hello from the scripted model."},
  {"text":"The word was PELICAN."}],"untooled":{"text":"ok"},"default":{"text":"Hello again."}}`

const (
	firstPrompt  = "first turn: remember the word PELICAN"
	secondPrompt = "second turn: which word was it?"
)

// checkHistory: the request that played the script's second turn carried
// the whole first turn and the second prompt.
func (w *world) checkHistory() {
	w.t.Helper()
	f, err := os.Open(w.mlog)
	if err != nil {
		w.t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 256<<20)
	found := false
	for sc.Scan() {
		var e struct {
			Turn int             `json:"turn"`
			API  string          `json:"api"`
			Body json.RawMessage `json:"body"`
		}
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.Turn != 1 {
			continue
		}
		found = true
		body := string(e.Body)
		for _, want := range []string{"PELICAN", "Hello from the scripted model.", "second turn"} {
			if !strings.Contains(body, want) {
				w.t.Errorf("the second turn's %s request lacks %q: the first turn is not in its history", e.API, want)
			}
		}
	}
	if !found {
		w.t.Errorf("no request played the script's second turn (see %s)", w.mlog)
	}
}

// events is a driver.Sink that keeps what it is given.
type events struct {
	mu  sync.Mutex
	evs []driver.Event
}

func (e *events) Emit(ev driver.Event) {
	e.mu.Lock()
	e.evs = append(e.evs, ev)
	e.mu.Unlock()
}

func (e *events) count(t driver.EventType) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, ev := range e.evs {
		if ev.Type == t {
			n++
		}
	}
	return n
}

func (e *events) text() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var b strings.Builder
	for _, ev := range e.evs {
		if ev.Type == driver.EventMessage && ev.Message.Role == driver.RoleAgent {
			b.WriteString(ev.Message.Text)
		}
	}
	return b.String()
}

type allowAll struct{}

func (allowAll) Decide(_ context.Context, req driver.PermissionRequest) (driver.PermissionDecision, error) {
	return driver.PermissionDecision{RequestID: req.ID, Outcome: driver.OutcomeSelected, OptionID: "allow", Verdict: driver.VerdictAllow, DecidedBy: "test"}, nil
}

// TestDuplexTurns: two Prompts on one driver session of the real Claude
// Code and Qwen Code keep one process (stdin stays open between turns),
// and the second turn's model request carries the first turn.
func TestDuplexTurns(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T) (*world, []string)
	}{
		{"claude", func(t *testing.T) (*world, []string) {
			exe := claudeExe(t)
			w := newWorld(t, twoTurnScript)
			w.claudeEnv()
			return w, []string{exe, "-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose"}
		}},
		{"qwen", func(t *testing.T) (*world, []string) {
			w, exe := qwenWorld(t, twoTurnScript)
			return w, []string{exe, "--input-format", "stream-json", "--output-format", "stream-json", "--approval-mode", "default"}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, argv := tt.setup(t)
			// Only a guard against a hang; nothing asserts on time.
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			k := &events{}
			s, err := sj.Start(ctx, driver.Launch{Argv: argv, Env: w.env, Cwd: w.repo, Agent: tt.name,
				Host: driver.Host{Sink: k, Decider: allowAll{}}}, sj.Options{})
			if err != nil {
				t.Fatalf("Start: %v", err)
			}
			defer s.Close(context.Background()) //nolint:errcheck // closed below; this is for early failures
			pid := s.Pid()
			for i, p := range []string{firstPrompt, secondPrompt} {
				res, err := s.Prompt(ctx, []driver.Content{driver.TextContent(p)})
				if err != nil || res.StopReason != driver.StopEndTurn {
					t.Fatalf("turn %d: %+v, %v", i+1, res, err)
				}
				if got := s.Pid(); got != pid {
					t.Fatalf("turn %d ran in process %d, the session started %d", i+1, got, pid)
				}
			}
			if n := k.count(driver.EventProcessExited); n != 0 {
				t.Fatalf("the CLI exited between turns (%d process.exited)", n)
			}
			if n := k.count(driver.EventSessionStarted); n != 1 {
				t.Errorf("%d session.started, want 1", n)
			}
			if n := k.count(driver.EventTurnEnded); n != 2 {
				t.Errorf("%d turn.ended, want 2", n)
			}
			if txt := k.text(); !strings.Contains(txt, "Hello from the scripted model.") || !strings.Contains(txt, "The word was PELICAN.") {
				t.Errorf("agent text = %q", txt)
			}
			if err := s.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			if n := k.count(driver.EventProcessExited); n != 1 {
				t.Errorf("%d process.exited after Close, want 1: one process for both turns", n)
			}
			w.checkHistory()
			w.checkNoLeftovers()
		})
	}
}

// TestOneShotResume: a one-shot CLI's second tai run resumes the first
// run's session by the id tai reported, and the CLI sends the first turn
// along with the second.
func TestOneShotResume(t *testing.T) {
	for _, a := range oneshotAgents {
		t.Run(a.name, func(t *testing.T) {
			exe := need(t, a.env, a.fallback, a.hint)
			w := newWorld(t, twoTurnScript)
			a.configure(t, w, false)
			args := []string{"--agent", a.name, "--driver", "stream-json", "--agent-cmd", a.cmd(exe, false), "--output", "json"}
			first := w.result(w.run(append(args, firstPrompt)...))
			if first.Status != "ok" || first.SessionID == "" {
				t.Fatalf("first run: status %q session %q (error %q)", first.Status, first.SessionID, first.Error)
			}
			second := w.result(w.run(append(args, "--resume", first.SessionID, secondPrompt)...))
			if second.Status != "ok" || second.SessionID != first.SessionID {
				t.Fatalf("resumed run: status %q session %q, want ok %q (error %q)", second.Status, second.SessionID, first.SessionID, second.Error)
			}
			if !strings.Contains(second.Message, "The word was PELICAN.") {
				t.Errorf("resumed message = %q", second.Message)
			}
			w.checkHistory()
			w.checkNoLeftovers()
		})
	}
}
