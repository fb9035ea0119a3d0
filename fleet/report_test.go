package fleet

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func tableState() State {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	return State{Run: "fleet-20261201-100000-abcdef", Order: []string{"lint-the-whole-repository", "docs", "tests"},
		Tasks: map[string]*TaskState{
			"lint-the-whole-repository": {ID: "lint-the-whole-repository", Agent: "builtin", Status: StatusRunning, Started: t0, Usage: Usage{Turns: 1, Tokens: 1234}},
			"docs":                      {ID: "docs", Agent: "claude-code-acp", Status: StatusBlocked, Reason: "which license should the README name, MIT or Apache-2.0 or something else entirely?"},
			"tests":                     {ID: "tests", Agent: "builtin", Status: StatusMerged, ElapsedMS: 4000},
		}, Usage: Usage{Tokens: 1234}}
}

var redraw = regexp.MustCompile("\x1b\\[[0-9]+A\x1b\\[J")

func TestTableFitsTheWidth(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 42, 0, time.UTC)
	for _, width := range []int{80, 100, 200} {
		var out bytes.Buffer
		tb := &Table{W: &out, Now: func() time.Time { return now }, Run: "fleet-20261201-100000-abcdef", Width: func() int { return width }}
		tb.Event(Event{Kind: "started", Task: "lint-the-whole-repository", State: tableState()})
		tb.Hold("lint-the-whole-repository", "permission: Write /tmp/ws/a-very-long-file-name-that-goes-on-and-on.txt")
		lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
		for _, l := range lines {
			l = redraw.ReplaceAllString(l, "") // the redraw's cursor moves
			if n := utf8.RuneCountInString(l); n > width {
				t.Errorf("width %d: a line of %d columns wraps: %q", width, n, l)
			}
		}
		text := out.String()
		if !strings.Contains(text, "fleet fleet-20261201-100000-abcdef") {
			t.Errorf("width %d: no run id in the header:\n%s", width, text)
		}
		last := text[strings.LastIndex(text, "TASK"):]
		if !strings.Contains(last, "permission: Write") || !strings.Contains(last, "WAITING FOR YOU") {
			t.Errorf("width %d: the asking task is not in WAITING FOR YOU:\n%s", width, last)
		}
		if strings.Count(last, "\n") != 4 { // header row and three tasks after the title line
			t.Errorf("width %d: rows stacked or wrapped:\n%s", width, last)
		}
	}
}

// While a question is on screen the table does not draw, and afterwards
// it draws below the question instead of erasing it.
func TestTableNeverDrawsOverAPrompt(t *testing.T) {
	var out bytes.Buffer
	now := time.Date(2026, 12, 1, 10, 0, 42, 0, time.UTC)
	tb := &Table{W: &out, Now: func() time.Time { return now }, Run: "r", Width: func() int { return 80 }}
	tb.Event(Event{Kind: "started", Task: "docs", State: tableState()})
	tb.Hold("docs", "permission: Write a.txt")
	out.WriteString("? the question\n")
	mark := out.Len()
	tb.Tick()
	tb.Event(Event{Kind: "finished", Task: "tests", State: tableState()})
	if out.Len() != mark {
		t.Fatalf("the table drew while the question was open: %q", out.String()[mark:])
	}
	tb.Release()
	tb.Tick()
	after := out.String()[mark:]
	if strings.Contains(after, "\x1b[") && strings.Contains(after, "A\x1b[J") {
		t.Fatalf("the redraw after the answer moved up over the question: %q", after)
	}
	if !strings.Contains(after, "TASK") {
		t.Fatalf("no table after the answer: %q", after)
	}
}

// An agent's words in the table (the title it waits on, a note's detail, a
// blocked task's reason) are escaped: no row moves the cursor, and none
// holds a newline that would throw off the redraw's count of lines.
func TestTableEscapesAgentText(t *testing.T) {
	var out bytes.Buffer
	now := time.Date(2026, 12, 1, 10, 0, 42, 0, time.UTC)
	tb := &Table{W: &out, Now: func() time.Time { return now }, Run: "r", Width: func() int { return 200 }}
	st := tableState()
	st.Tasks["docs"].Reason = "which license?\x1b[2K\nMIT\u202e"
	tb.Event(Event{Kind: EventFailed, Task: "tests", Detail: "exit 1\x1b[1A\x1b[J", State: st})
	tb.Hold("lint-the-whole-repository", "permission: Run tests\x1b[8D\x1b[K")
	text := redraw.ReplaceAllString(out.String(), "")
	if strings.ContainsAny(text, "\x1b\u202e") {
		t.Fatalf("a control or bidi character reaches the terminal:\n%q", text)
	}
	for _, want := range []string{`exit 1\x1b[1A\x1b[J`, `permission: Run tests\x1b[8D\x1b[K`} {
		if !strings.Contains(text, want) {
			t.Errorf("the table lacks %q:\n%s", want, text)
		}
	}
	var lines bytes.Buffer
	Lines(&lines)(Event{Kind: EventFailed, Task: "t\x1b[2K", Detail: "a\nb\u2066"})
	if got := lines.String(); !strings.HasSuffix(got, " t\\x1b[2K   failed    a\\nb\\u2066\n") {
		t.Fatalf("Lines: %q", got)
	}
}

// At 160 columns the whole task ids and agents show (ids are what tell
// tasks apart); at 80 the rows fit, the ids cut only as far as needed.
func TestTableUsesTheWidth(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 42, 0, time.UTC)
	st := tableState()
	for _, tt := range []struct {
		width    int
		whole    bool // the longest id and agent show whole
		minTaskW int  // else the task column is at least this wide
	}{
		{160, true, 0},
		{120, true, 0},
		{80, false, 16},
	} {
		rows := TableRowsWidth(st, now, tt.width, nil)
		for _, r := range rows {
			if n := utf8.RuneCountInString(r); n > tt.width {
				t.Errorf("width %d: a row of %d columns: %q", tt.width, n, r)
			}
		}
		text := strings.Join(rows, "\n")
		whole := strings.Contains(text, "lint-the-whole-repository ") && strings.Contains(text, "claude-code-acp")
		if whole != tt.whole {
			t.Errorf("width %d: whole names %v, want %v:\n%s", tt.width, whole, tt.whole, text)
		}
		if !tt.whole && strings.Index(rows[1], " ") < tt.minTaskW {
			t.Errorf("width %d: the task column is narrower than %d though there is room:\n%s", tt.width, tt.minTaskW, text)
		}
	}
}

// A parked task's row says what it waits for: its account's reset as a
// countdown, or a release by hand.
func TestTableShowsParkedTasks(t *testing.T) {
	now := time.Date(2026, 12, 7, 8, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		park *AccountPark
		want string
	}{
		{name: "at a limit", park: &AccountPark{Account: "claude:sha256:ab", ResetsAt: now.Add(2*time.Hour + 13*time.Minute)}, want: "reset in 2h13m0s (claude:sha256:ab)"},
		{name: "paused by hand", park: &AccountPark{Account: "claude:sha256:ab", ByHand: true}, want: "tai fleet resume (claude:sha256:ab paused)"},
		{name: "ended parked", want: "tai fleet resume (claude:sha256:ab)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := State{Order: []string{"api"}, Tasks: map[string]*TaskState{"api": {ID: "api", Agent: "claude", Status: StatusParked, Account: "claude:sha256:ab"}}}
			if tt.park != nil {
				st.Parks = map[string]*AccountPark{tt.park.Account: tt.park}
			}
			rows := TableRowsWidth(st, now, 160, nil)
			if len(rows) != 2 || !strings.Contains(rows[1], "parked") || !strings.HasSuffix(rows[1], tt.want) {
				t.Fatalf("rows:\n%s\nwant the row to end with %q", strings.Join(rows, "\n"), tt.want)
			}
		})
	}
}
