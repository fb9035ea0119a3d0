// Package top is `tai top`: a terminal UI over the live feeds of every
// tai running on this machine. The attention queue (what waits for a human,
// oldest first) comes first, then one row per session or fleet task; Enter
// peeks at an ask and one key answers it through the run's feed.
package top

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"charm.land/lipgloss/v2"

	"github.com/tai-dev/tai/feed"
	"github.com/tai-dev/tai/policy"
	"github.com/tai-dev/tai/render"
)

// Chip says why a row waits for a human.
type Chip string

// Chips of the attention queue.
const (
	ChipAsk      Chip = "ASK"      // a permission ask
	ChipQuestion Chip = "QUESTION" // an agent's question nobody could answer
	ChipElicit   Chip = "ELICIT"   // an agent's form to fill
	ChipBudget   Chip = "BUDGET"   // a task stopped at its budget
	ChipError    Chip = "ERROR"    // a task failed
	ChipDone     Chip = "DONE"     // a session finished its turn: the next prompt is yours
)

// blocks: the run cannot go on without a human.
func (c Chip) blocks() bool {
	return c == ChipAsk || c == ChipQuestion || c == ChipElicit || c == ChipBudget
}

// Item is one row of the attention queue.
type Item struct {
	Chip     Chip
	Run      string
	Task     string
	Title    string
	Since    time.Time
	Ask      *feed.Ask      // for ASK
	Question *feed.Question // for a QUESTION a human can answer here
}

// Queue builds the attention queue of runs, oldest first.
func Queue(runs []feed.State) []Item {
	var q []Item
	for _, r := range runs {
		for i := range r.Asks {
			a := r.Asks[i]
			q = append(q, Item{Chip: ChipAsk, Run: r.Run, Task: a.Task, Title: askTitle(a), Since: a.Since, Ask: &a})
		}
		for i := range r.Questions {
			qu := r.Questions[i]
			q = append(q, Item{Chip: ChipQuestion, Run: r.Run, Task: qu.Task, Title: lastLine(qu.Text), Since: qu.Since, Question: &qu})
		}
		for _, t := range r.Tasks {
			var c Chip
			switch t.Status {
			case "blocked":
				c = ChipQuestion
			case "budget", "refused":
				c = ChipBudget
			case "failed", "conflict":
				c = ChipError
			default:
				continue
			}
			q = append(q, Item{Chip: c, Run: r.Run, Task: t.ID, Title: t.Detail, Since: t.Updated})
		}
		if r.Kind == feed.KindRun {
			for _, s := range r.Sessions {
				if s.State == feed.StateIdle {
					q = append(q, Item{Chip: ChipDone, Run: r.Run, Title: s.Activity, Since: s.LastEvent})
				}
			}
		}
	}
	sort.SliceStable(q, func(i, j int) bool { return q[i].Since.Before(q[j].Since) })
	return q
}

func askTitle(a feed.Ask) string {
	tc := a.Request.ToolCall
	t := strings.TrimSpace(tc.Title)
	if t == "" {
		t = tc.ID
	}
	if c := policy.Command(tc); c != "" && !strings.Contains(t, c) {
		t += ": " + c
	}
	return t
}

// Row is one session or task.
type Row struct {
	Run     string
	Session feed.Session
	Task    *feed.Task
}

// Rows lists every session, and every fleet task that has none yet.
func Rows(runs []feed.State) []Row {
	var rows []Row
	for _, r := range runs {
		has := map[string]bool{}
		for _, s := range r.Sessions {
			row := Row{Run: r.Run, Session: s}
			for i := range r.Tasks {
				if r.Tasks[i].ID == s.Task {
					row.Task = &r.Tasks[i]
				}
			}
			has[s.Task] = true
			rows = append(rows, row)
		}
		for i := range r.Tasks {
			if !has[r.Tasks[i].ID] {
				rows = append(rows, Row{Run: r.Run, Task: &r.Tasks[i]})
			}
		}
	}
	return rows
}

// styles are the view's colours; plain with NO_COLOR.
type styles struct {
	title, head, sel, dim, add, rm lipgloss.Style
	chips                          map[Chip]lipgloss.Style
}

func newStyles(color bool) styles {
	s := styles{title: lipgloss.NewStyle().Bold(true), head: lipgloss.NewStyle().Bold(true), sel: lipgloss.NewStyle().Reverse(true),
		dim: lipgloss.NewStyle(), add: lipgloss.NewStyle(), rm: lipgloss.NewStyle(), chips: map[Chip]lipgloss.Style{}}
	if !color {
		s.title, s.head, s.sel = lipgloss.NewStyle(), lipgloss.NewStyle(), lipgloss.NewStyle()
		return s
	}
	s.dim = lipgloss.NewStyle().Faint(true)
	s.add = lipgloss.NewStyle().Foreground(lipgloss.Color("2"))
	s.rm = lipgloss.NewStyle().Foreground(lipgloss.Color("1"))
	for c, col := range map[Chip]string{ChipAsk: "3", ChipQuestion: "3", ChipElicit: "3", ChipBudget: "5", ChipError: "1", ChipDone: "2"} {
		s.chips[c] = lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color(col))
	}
	return s
}

// clip cuts s to w display columns.
func clip(s string, w int) string {
	if w <= 0 {
		return ""
	}
	if lipgloss.Width(s) <= w {
		return s
	}
	r := []rune(s)
	for len(r) > 0 && lipgloss.Width(string(r))+1 > w {
		r = r[:len(r)-1]
	}
	return string(r) + "…"
}

func pad(s string, w int) string {
	s = clip(s, w)
	return s + strings.Repeat(" ", max(w-lipgloss.Width(s), 0))
}

func age(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

// Frame renders the whole screen: width columns, height lines (0: as
// many as needed).
func Frame(runs []feed.State, sel int, now time.Time, width, height int, color bool) string {
	st := newStyles(color)
	q := Queue(runs)
	rows := Rows(runs)
	blocking := 0
	for _, it := range q {
		if it.Chip.blocks() {
			blocking++
		}
	}
	var b []string
	title := fmt.Sprintf("tai top · %d runs · %d sessions · %d waiting for you", len(runs), len(rows), blocking)
	b = append(b, st.title.Render(clip(title, width)))
	line := func(s string, selected bool) {
		cursor := "  "
		if selected {
			cursor = "▸ " // visible without colour too
		}
		s = clip(cursor+s, width)
		if selected {
			s = st.sel.Render(s)
		}
		b = append(b, s)
	}
	idx := 0
	if len(q) > 0 {
		b = append(b, "", st.head.Render(clip("  ATTENTION (oldest first)", width)))
		for _, it := range q {
			chip := fmt.Sprintf("%-8s", it.Chip)
			if cs, ok := st.chips[it.Chip]; ok && idx != sel {
				chip = cs.Render(chip)
			}
			who := it.Run
			if it.Task != "" {
				who = it.Task + " @ " + shortRun(it.Run)
			}
			whoW := 28
			if width < 100 {
				whoW = 20
			}
			rest := fmt.Sprintf(" %6s  %s  %s", age(now, it.Since), pad(who, whoW), it.Title)
			line(chip+rest, idx == sel)
			idx++
		}
	}
	b = append(b, "")
	wide := width >= 120
	header := fmt.Sprintf("%-14s %-10s %-8s %7s %7s %9s %5s  %s", "AGENT", "STATE", "TASK", "ELAPSED", "TOKENS", "DIFF", "LAST", "ACTIVITY")
	if wide {
		header = fmt.Sprintf("%-14s %-6s %-14s %-22s %-8s %7s %7s %8s %9s %5s  %s", "AGENT", "DRIVER", "MODEL", "WORKTREE", "STATE", "ELAPSED", "TOKENS", "COST", "DIFF", "LAST", "ACTIVITY")
	}
	b = append(b, st.head.Render(clip("  "+header, width)))
	for _, r := range rows {
		s := r.Session
		state := string(s.State)
		task, where := "", ""
		if s.Cwd != "" {
			where = filepath.Base(s.Cwd)
		}
		if r.Task != nil {
			task = r.Task.ID
			if r.Task.Branch != "" {
				where = r.Task.Branch
			}
			if s.ID == "" {
				state = r.Task.Status
			}
		}
		agent := s.Agent
		if agent == "" && r.Task != nil {
			agent = r.Task.Agent
		}
		diff := fmt.Sprintf("+%d/-%d", s.Added, s.Removed)
		el := "-"
		if !s.Started.IsZero() {
			el = age(now, s.Started)
		}
		var l string
		if wide {
			cost := "-"
			if s.Cost > 0 {
				cost = fmt.Sprintf("%.3f", s.Cost)
			}
			l = fmt.Sprintf("%s %s %s %s %s %7s %7d %8s %9s %5s  %s", pad(agent, 14), pad(s.Driver, 6), pad(s.Model, 14), pad(where, 22), pad(state, 8),
				el, s.Tokens, cost, diff, age(now, s.LastEvent), s.Activity)
		} else {
			l = fmt.Sprintf("%s %s %s %7s %7d %9s %5s  %s", pad(agent, 14), pad(state, 10), pad(task, 8), el, s.Tokens, diff, age(now, s.LastEvent), s.Activity)
		}
		line(l, idx == sel)
		idx++
	}
	if len(runs) == 0 {
		b = append(b, st.dim.Render(clip("no tai is running on this machine (tai run, tai fleet run and tai chat show up here)", width)))
	}
	help := "↑/↓ select · enter peek · y once · a always (run) · f always (fleet) · n deny · l follow · q quit"
	if width < 100 {
		help = "↑↓ enter:peek y:once a:always f:fleet n:deny l:follow q:quit"
	}
	if height > 0 {
		for len(b) < height-1 {
			b = append(b, "")
		}
		if len(b) > height-1 {
			b = b[:height-1]
		}
	}
	b = append(b, st.dim.Render(clip(help, width)))
	return strings.Join(b, "\n")
}

func shortRun(r string) string {
	if len(r) > 12 {
		return "…" + r[len(r)-6:]
	}
	return r
}

// Peek renders an ask in full: the tool call, the options, the diff and
// the rule that asked.
func Peek(it Item, input string, now time.Time, width int, color bool) string {
	st := newStyles(color)
	var b []string
	add := func(s string) {
		for _, l := range strings.Split(s, "\n") {
			b = append(b, clip(l, width))
		}
	}
	who := it.Run
	if it.Task != "" {
		who = "task " + it.Task + " of " + it.Run
	}
	add(st.title.Render(fmt.Sprintf("%s · %s · waiting %s", it.Chip, who, age(now, it.Since))))
	if it.Question != nil {
		add("")
		add(it.Question.Text)
		add("")
		add("answer: " + input + "█")
		add("")
		add(st.dim.Render("type the answer · enter send · esc back"))
		return strings.Join(b, "\n")
	}
	if it.Ask == nil {
		add("")
		add(it.Title)
		add("")
		add(st.dim.Render("esc back · q quit"))
		return strings.Join(b, "\n")
	}
	a := it.Ask
	tc := a.Request.ToolCall
	add("")
	add(fmt.Sprintf("%s [%s]", strings.TrimSpace(tc.Title), tc.Kind))
	if c := policy.Command(tc); c != "" {
		add("  $ " + c)
	}
	for _, l := range tc.Locations {
		add("  " + l.Path)
	}
	add("")
	add(st.head.Render("Options"))
	for _, o := range a.Request.Options {
		add(fmt.Sprintf("  %s (%s)", o.Name, o.Kind))
	}
	if a.DecidedBy != "" || a.Why != "" {
		add("")
		add(st.head.Render("Why it asks"))
		add(fmt.Sprintf("  %s: %s", a.DecidedBy, a.Why))
	}
	for _, c := range tc.Content {
		if c.Type != "diff" {
			continue
		}
		lines, err := render.UnifiedDiff(c)
		if err != nil {
			continue
		}
		add("")
		add(st.head.Render("Diff"))
		for i, l := range lines {
			if i == 60 {
				add(fmt.Sprintf("  … (%d more lines)", len(lines)-i))
				break
			}
			switch {
			case strings.HasPrefix(l, "+") && !strings.HasPrefix(l, "+++"):
				l = st.add.Render(l)
			case strings.HasPrefix(l, "-") && !strings.HasPrefix(l, "---"):
				l = st.rm.Render(l)
			}
			add("  " + l)
		}
	}
	add("")
	add(st.dim.Render("y allow once · a allow always (this run) · f allow always (the fleet) · n deny · esc back"))
	return strings.Join(b, "\n")
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[i+1:])
	}
	return s
}
