package fleet

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// Lines writes one plain progress line per event (for pipes and CI logs).
func Lines(w io.Writer) func(Event) {
	return func(e Event) {
		task := e.Task
		if task == "" {
			task = "fleet"
		}
		fmt.Fprintf(w, "%s %-10s %-9s %s\n", e.Time.UTC().Format("15:04:05"), task, e.Kind, e.Detail)
	}
}

// Table is a live status table for a terminal: it redraws in place on
// every event and on Tick (for the elapsed column).
type Table struct {
	W   io.Writer
	Now func() time.Time

	mu    sync.Mutex
	last  State
	lines int
	notes []string
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

func (t *Table) draw() {
	var b strings.Builder
	if t.lines > 0 {
		fmt.Fprintf(&b, "\x1b[%dA\x1b[J", t.lines)
	}
	rows := TableRows(t.last, t.Now())
	for _, r := range rows {
		b.WriteString(r + "\n")
	}
	for _, n := range t.notes {
		b.WriteString("  " + truncate(n, 150) + "\n")
	}
	t.lines = len(rows) + len(t.notes)
	_, _ = io.WriteString(t.W, b.String())
}

// TableRows renders the status table (also `tai fleet status`).
func TableRows(st State, now time.Time) []string {
	rows := []string{fmt.Sprintf("%-16s %-14s %-10s %5s %8s %8s %8s  %s", "TASK", "AGENT", "STATE", "TURNS", "TOKENS", "COST", "ELAPSED", "WAITING FOR YOU")}
	for _, id := range st.Order {
		ts := st.Tasks[id]
		if ts == nil {
			continue
		}
		el := time.Duration(ts.ElapsedMS) * time.Millisecond
		if ts.Status == StatusRunning || ts.Status == StatusAsking {
			el = now.Sub(ts.Started)
		}
		wait := ""
		switch ts.Status {
		case StatusAsking:
			if n := len(ts.Questions); n >= 0 {
				wait = "question (answerer)"
			}
		case StatusBlocked:
			wait = "answer: " + truncate(lastLine(ts.Reason), 40)
		case StatusConflict:
			wait = "resolve: " + strings.Join(ts.ConflictFiles, ",")
		}
		rows = append(rows, fmt.Sprintf("%-16s %-14s %-10s %5d %8d %8.4g %8s  %s", truncate(id, 16), truncate(ts.Agent, 14), ts.Status,
			ts.Usage.Turns, ts.Usage.Tokens, ts.Usage.Cost, el.Round(time.Second), wait))
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
		c.SystemOut = out.String()
		switch ts.Status {
		case StatusMerged, StatusDone:
		case StatusSkipped:
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
