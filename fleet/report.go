package fleet

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/tai-dev/tai/internal/safetext"
)

// Lines writes one plain progress line per event (for pipes and CI logs).
func Lines(w io.Writer) func(Event) {
	return func(e Event) {
		task := e.Task
		if task == "" {
			task = "fleet"
		}
		// A detail may quote an agent (its title, its error): escaped (safetext).
		fmt.Fprintf(w, "%s %-10s %-9s %s\n", e.Time.UTC().Format("15:04:05"), safetext.Line(task), e.Kind, safetext.Line(e.Detail))
	}
}

// Table is a live status table for a terminal: it redraws in place on
// every event and on Tick (for the elapsed column), within Width columns
// (no line wraps), and keeps off the screen while a question is asked on
// it (Hold).
type Table struct {
	W   io.Writer
	Now func() time.Time
	Run string // shown in the header
	// Width is the terminal's width now; nil = 120.
	Width func() int

	mu      sync.Mutex
	last    State
	lines   int
	notes   []string
	held    bool
	waiting map[string]string // task → what it waits for you for (a permission ask)
}

// Event takes a progress event.
func (t *Table) Event(e Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.last = e.State
	switch e.Kind {
	case EventBudget, EventConflict, EventBlocked, EventRefused, EventFailed, EventAsked, EventAnswered, EventWarning:
		task := e.Task
		if task == "" {
			task = "fleet"
		}
		t.notes = append(t.notes, fmt.Sprintf("%s %s: %s", task, e.Kind, e.Detail))
		if len(t.notes) > 5 {
			t.notes = t.notes[len(t.notes)-5:]
		}
	}
	t.draw()
}

// Tick redraws (elapsed times move).
func (t *Table) Tick() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.last.Tasks != nil {
		t.draw()
	}
}

// Hold draws the table once more with task in WAITING FOR YOU (what: "permission:
// Write a.txt"), then leaves the screen to the question below it until
// Release: the table never draws over a prompt.
func (t *Table) Hold(task, what string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.waiting == nil {
		t.waiting = map[string]string{}
	}
	t.waiting[task] = what
	t.draw()
	t.held = true
	t.lines = 0 // the question goes below; the next table starts after it
}

// Release ends a Hold: the next draw starts below the answered question.
func (t *Table) Release() {
	t.mu.Lock()
	defer t.mu.Unlock()
	clear(t.waiting)
	t.held = false
}

func (t *Table) width() int {
	if t.Width == nil {
		return 120
	}
	return max(t.Width(), 40)
}

func (t *Table) draw() {
	if t.held {
		return
	}
	var b strings.Builder
	if t.lines > 0 {
		fmt.Fprintf(&b, "\x1b[%dA\x1b[J", t.lines)
	}
	w := t.width()
	rows := append([]string{Header(t.Run, t.last, len(t.waiting))}, TableRowsWidth(t.last, t.Now(), w, t.waiting)...)
	for _, n := range t.notes {
		rows = append(rows, "  "+n)
	}
	for _, r := range rows {
		// Every row may hold an agent's words (a title waiting for you, a
		// detail): escaped, one line each, so that the redraw's count of
		// lines holds and nothing moves the cursor.
		b.WriteString(clip(safetext.Line(r), w) + "\n")
	}
	t.lines = len(rows)
	_, _ = io.WriteString(t.W, b.String())
}

// Header is the table's first line: the run, its counts and what blocks.
func Header(run string, st State, asks int) string {
	counts := map[TaskStatus]int{}
	for _, id := range st.Order {
		if ts := st.Tasks[id]; ts != nil {
			counts[ts.Status]++
		}
	}
	wait := asks + counts[StatusBlocked] + counts[StatusConflict]
	h := fmt.Sprintf("fleet %s · %d tasks: %d running, %d done", run, len(st.Order), counts[StatusRunning]+counts[StatusAsking],
		counts[StatusDone]+counts[StatusMerged])
	if wait > 0 {
		h += fmt.Sprintf(" · %d WAITING FOR YOU", wait)
	}
	return h + fmt.Sprintf(" · %d tokens", st.Usage.Tokens)
}

// clip cuts s to w runes (columns, for the table's text), so a row never
// wraps.
func clip(s string, w int) string {
	r := []rune(s)
	if len(r) <= w {
		return s
	}
	if w <= 1 {
		return string(r[:w])
	}
	return string(r[:w-1]) + "…"
}

// TableRows renders the status table (also `tai fleet status`).
func TableRows(st State, now time.Time) []string {
	return TableRowsWidth(st, now, 160, nil)
}

// TableRowsWidth renders the table within width columns: below 100 the
// turns and cost columns go. The task and agent columns are as wide as
// their longest name, as far as the width leaves room (ids are what tell
// tasks apart), narrowing first the agent's, then the task's, down to
// 16 and 14 columns (12 and 10 below 100). waiting names the tasks whose
// permission ask waits for you.
func TableRowsWidth(st State, now time.Time, width int, waiting map[string]string) []string {
	wide := width >= 100
	// fixed is the other columns with their separators, minT and minA
	// the narrowest task and agent columns.
	fixed, minT, minA := 46, 16, 14
	if !wide {
		fixed, minT, minA = 29, 12, 10
	}
	taskW, agentW := len("TASK"), len("AGENT")
	for _, id := range st.Order {
		if ts := st.Tasks[id]; ts != nil {
			taskW, agentW = max(taskW, utf8.RuneCountInString(id)), max(agentW, utf8.RuneCountInString(ts.Agent))
		}
	}
	room := width - fixed - 24 // 24 left for WAITING FOR YOU
	if taskW+agentW > room {
		agentW = max(min(agentW, minA), room-taskW)
	}
	if taskW+agentW > room {
		taskW = max(min(taskW, minT), room-agentW)
	}
	row := func(task, agent, state, turns, tokens, cost, elapsed, wait string) string {
		var l string
		if wide {
			l = fmt.Sprintf("%-*s %-*s %-10s %5s %8s %8s %8s  ", taskW, clip(task, taskW), agentW, clip(agent, agentW), state, turns, tokens, cost, elapsed)
		} else {
			l = fmt.Sprintf("%-*s %-*s %-9s %7s %7s  ", taskW, clip(task, taskW), agentW, clip(agent, agentW), clip(state, 9), tokens, elapsed)
		}
		if wait != "" {
			l += clip(wait, max(width-utf8.RuneCountInString(l), 8))
		}
		return strings.TrimRight(l, " ")
	}
	rows := []string{row("TASK", "AGENT", "STATE", "TURNS", "TOKENS", "COST", "ELAPSED", "WAITING FOR YOU")}
	for _, id := range st.Order {
		ts := st.Tasks[id]
		if ts == nil {
			continue
		}
		el := time.Duration(ts.ElapsedMS) * time.Millisecond
		if ts.Status == StatusRunning || ts.Status == StatusAsking {
			el = now.Sub(ts.Started)
		}
		wait := waiting[id]
		switch {
		case wait != "":
		case ts.Status == StatusAsking:
			wait = "question (answerer)"
		case ts.Status == StatusBlocked:
			wait = "answer: " + truncate(lastLine(ts.Reason), 40)
		case ts.Status == StatusConflict:
			wait = "resolve: " + strings.Join(ts.ConflictFiles, ",")
		case ts.Status == StatusParked:
			wait = parkedNote(st, ts, now)
		}
		rows = append(rows, row(id, ts.Agent, string(ts.Status), fmt.Sprint(ts.Usage.Turns), fmt.Sprint(ts.Usage.Tokens),
			fmt.Sprintf("%.4g", ts.Usage.Cost), el.Round(time.Second).String(), wait))
	}
	return rows
}

// JUnit writes a JUnit XML report: one test case per task.
func JUnit(w io.Writer, st State) error {
	type failure struct {
		Message string `xml:"message,attr"`
		Type    string `xml:"type,attr"`
		Text    string `xml:",chardata"`
	}
	type skipped struct {
		Message string `xml:"message,attr"`
	}
	type testcase struct {
		Name      string   `xml:"name,attr"`
		Classname string   `xml:"classname,attr"`
		Time      string   `xml:"time,attr"`
		Failure   *failure `xml:"failure,omitempty"`
		Skipped   *skipped `xml:"skipped,omitempty"`
		SystemOut string   `xml:"system-out,omitempty"`
	}
	type testsuite struct {
		XMLName  xml.Name   `xml:"testsuite"`
		Name     string     `xml:"name,attr"`
		Tests    int        `xml:"tests,attr"`
		Failures int        `xml:"failures,attr"`
		Errors   int        `xml:"errors,attr"`
		Skipped  int        `xml:"skipped,attr"`
		Time     string     `xml:"time,attr"`
		Stamp    string     `xml:"timestamp,attr"`
		Cases    []testcase `xml:"testcase"`
	}
	s := testsuite{Name: "tai fleet " + st.Run, Stamp: st.Created.UTC().Format(time.RFC3339), Errors: 0}
	var total int64
	for _, id := range st.Order {
		ts := st.Tasks[id]
		total += ts.ElapsedMS
		c := testcase{Name: id, Classname: "fleet." + st.Run, Time: fmt.Sprintf("%.3f", float64(ts.ElapsedMS)/1000)}
		var out strings.Builder
		fmt.Fprintf(&out, "agent: %s\nstatus: %s\nbranch: %s\nturns: %d tokens: %d cost: %g\n", ts.Agent, ts.Status, ts.Branch, ts.Usage.Turns, ts.Usage.Tokens, ts.Usage.Cost)
		if ts.Diff != nil {
			out.WriteString("diff: " + ts.Diff.Summary() + "\n")
		}
		if ts.Message != "" {
			out.WriteString("message:\n" + truncate(ts.Message, 4000) + "\n")
		}
		if ts.Check != nil {
			fmt.Fprintf(&out, "check passed: %v\n", ts.Check.Passed)
		}
		c.SystemOut = out.String()
		switch {
		case (ts.Status == StatusMerged || ts.Status == StatusDone) && ts.Check != nil && !ts.Check.Passed:
			// merge: false: the score is the check's.
			c.Failure = &failure{Message: "check failed: " + truncate(ts.Check.Output, 500), Type: "check", Text: ts.Check.Output}
			s.Failures++
		case ts.Status == StatusMerged || ts.Status == StatusDone:
		case ts.Status == StatusSkipped:
			c.Skipped = &skipped{Message: ts.Reason}
			s.Skipped++
		default:
			c.Failure = &failure{Message: string(ts.Status) + ": " + truncate(ts.Reason, 500), Type: string(ts.Status), Text: ts.Reason}
			s.Failures++
		}
		s.Cases = append(s.Cases, c)
	}
	s.Tests = len(s.Cases)
	s.Time = fmt.Sprintf("%.3f", float64(total)/1000)
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(s); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// NextStep is the command that takes a stopped run further, for its
// summary ("" when it finished or has none): after a merge conflict,
// resolving it in the task's worktree, then a resume; after an
// interruption, the resume.
func NextStep(st State) string {
	resume := "tai fleet resume " + st.Run
	for _, id := range st.Order {
		if ts := st.Tasks[id]; ts.Status == StatusConflict && ts.Worktree != "" {
			return fmt.Sprintf("resolve task %s's conflict in its worktree (cd %s && git rebase %s, fix the files, git add them, git rebase --continue), then: %s",
				id, ts.Worktree, st.Target, resume)
		}
	}
	if st.Status == RunInterrupted || st.ExitCode == 130 {
		return resume
	}
	return ""
}

// parkedNote is what a parked task waits for: its account's reset, as a
// countdown, or a release by hand.
func parkedNote(st State, ts *TaskState, now time.Time) string {
	p := st.Parks[ts.Account]
	switch {
	case p == nil:
		return "tai fleet resume (" + ts.Account + ")"
	case p.ByHand || p.ResetsAt.IsZero():
		return "tai fleet resume (" + p.Account + " paused)"
	}
	left := max(p.ResetsAt.Sub(now), 0).Round(time.Second)
	return "reset in " + left.String() + " (" + p.Account + ")"
}
