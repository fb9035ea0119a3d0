// Package top is `tai top`: a terminal UI over the live feeds of every
// tai running on this machine. The attention queue (what waits for a human,
// oldest first) comes first, then one row per session or fleet task; Enter
// peeks at an ask (one key answers it), a question or an elicitation's form
// (typed answers), and the answer goes through the run's feed.
package top

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"charm.land/lipgloss/v2"

	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/elicit"
	"github.com/tai-dev/tai/feed"
	"github.com/tai-dev/tai/internal/cut"
	"github.com/tai-dev/tai/internal/safetext"
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
	Agent    string // the agent of the session or task, if known
	Status   string // a task's status, for a task's chip
	Cwd      string // the asking session's workspace: its diff's files are named from it
	Title    string
	Since    time.Time
	Ask      *feed.Ask         // for ASK
	Question *feed.Question    // for a QUESTION a human can answer here
	Elicit   *feed.Elicitation // for ELICIT
	Budget   *feed.Budget      // for a fleet's BUDGET
}

// Queue builds the attention queue of runs, oldest first.
func Queue(runs []feed.State) []Item {
	var q []Item
	for _, r := range runs {
		cwds := map[string]string{}   // by session id
		agents := map[string]string{} // by session id and by task id
		for _, t := range r.Tasks {
			agents[t.ID] = t.Agent
		}
		for _, s := range r.Sessions {
			agents[s.ID], cwds[s.ID] = s.Agent, s.Cwd
		}
		for i := range r.Asks {
			a := r.Asks[i]
			q = append(q, Item{Chip: ChipAsk, Run: r.Run, Task: a.Task, Agent: agents[a.Session], Cwd: cwds[a.Session], Title: askTitle(a), Since: a.Since, Ask: &a})
		}
		for i := range r.Questions {
			qu := r.Questions[i]
			q = append(q, Item{Chip: ChipQuestion, Run: r.Run, Task: qu.Task, Agent: agents[qu.Task], Title: lastLine(qu.Text), Since: qu.Since, Question: &qu})
		}
		for i := range r.Elicitations {
			el := r.Elicitations[i]
			q = append(q, Item{Chip: ChipElicit, Run: r.Run, Task: el.Task, Agent: agents[el.Session], Title: lastLine(el.Request.Message), Since: el.Since, Elicit: &el})
		}
		if b := r.Budget; b != nil && len(b.Over) > 0 {
			q = append(q, Item{Chip: ChipBudget, Run: r.Run, Title: "budget used up: " + budgetLine(*b), Since: b.Updated, Budget: b})
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
			q = append(q, Item{Chip: c, Run: r.Run, Task: t.ID, Agent: t.Agent, Status: t.Status, Title: t.Detail, Since: t.Updated})
		}
		if r.Kind == feed.KindRun {
			for _, s := range r.Sessions {
				if s.State == feed.StateIdle {
					q = append(q, Item{Chip: ChipDone, Run: r.Run, Agent: s.Agent, Title: s.Activity, Since: s.LastEvent})
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
	// What runs, not the agent's word for it: the command is always on the line.
	if c, ok := render.ShownCommand(tc); ok {
		if c = safetext.Line(c); t != c { // one line: a script's newlines shown as \n
			t += ": $ " + c
		}
	} else if tc.Kind == driver.KindExecute {
		t += " (command not given by the agent)"
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

func pad(s string, w int) string {
	s = cut.End(s, w)
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

// Opts is how a frame is drawn: the selected line (-1: none), the time,
// the size (height 0: as many lines as needed), colour, and the filter.
type Opts struct {
	Sel           int
	Now           time.Time
	Width, Height int
	Color         bool
	Filter        string // shows what matches it (see Match); "" shows all
}

// Frame renders the whole screen.
func Frame(runs []feed.State, o Opts) string {
	runs = safeRuns(runs)
	width := o.Width
	f := &frame{st: newStyles(o.Color), sel: o.Sel, now: o.Now, width: width}
	allQ, allRows := Queue(runs), Rows(runs)
	q, rows := filterQueue(allQ, o.Filter), filterRows(allRows, o.Filter)
	blocking := 0
	for _, it := range allQ {
		if it.Chip.blocks() {
			blocking++
		}
	}
	title := fmt.Sprintf("tai top · %d runs · %d sessions · %d waiting for you", len(runs), len(allRows), blocking)
	if o.Filter != "" {
		title += fmt.Sprintf(" · filter %q: %d of %d shown", o.Filter, len(q)+len(rows), len(allQ)+len(allRows))
	}
	f.b = append(f.b, f.st.title.Render(cut.End(title, width)))
	f.queue(q)
	f.b = append(f.b, "")
	f.sessions(runs, rows)
	if len(runs) == 0 {
		f.b = append(f.b, f.st.dim.Render(cut.End("no tai is running on this machine (tai run, tai fleet run and tai chat show up here)", width)))
	}
	help := "↑/↓ select · enter peek · y once · a always (run) · f always (fleet) · n deny · l follow · / filter · ? keys · q quit"
	if width < 120 {
		help = "↑↓ enter:peek y:once a:always f:fleet n:deny l:follow /:filter ?:keys q:quit"
	}
	b := f.b
	if o.Height > 0 {
		for len(b) < o.Height-1 {
			b = append(b, "")
		}
		if len(b) > o.Height-1 {
			b = b[:o.Height-1]
		}
	}
	b = append(b, f.st.dim.Render(cut.End(help, width)))
	return strings.Join(b, "\n")
}

// Match reports whether the filter matches one of the fields (an agent,
// a task, a fleet or run, a status): a case-insensitive substring.
func Match(filter string, fields ...string) bool {
	filter = strings.ToLower(strings.TrimSpace(filter))
	if filter == "" {
		return true
	}
	for _, f := range fields {
		if strings.Contains(strings.ToLower(f), filter) {
			return true
		}
	}
	return false
}

// filtered keeps the xs whose fields match filter (all, for none).
func filtered[T any](xs []T, filter string, fields func(T) []string) []T {
	if filter == "" {
		return xs
	}
	var out []T
	for _, x := range xs {
		if Match(filter, fields(x)...) {
			out = append(out, x)
		}
	}
	return out
}

func filterQueue(q []Item, filter string) []Item {
	return filtered(q, filter, func(it Item) []string { return []string{it.Agent, it.Task, it.Run, string(it.Chip), it.Status} })
}

func filterRows(rows []Row, filter string) []Row {
	return filtered(rows, filter, func(r Row) []string { return []string{r.agent(), r.taskID(), r.Run, r.state()} })
}

// KeyMap is the help screen (?): every key of the list and the peeks.
func KeyMap(width int, color bool) string {
	st := newStyles(color)
	keys := [][2]string{
		{"↑/k ↓/j", "select"},
		{"enter", "peek at the selected ask, question, form or budget"},
		{"y", "allow the ask once"},
		{"a", "allow always for this run"},
		{"f", "allow always for the whole fleet"},
		{"n", "deny"},
		{"l", "follow the selected session's transcript"},
		{"/", "filter by agent, task, fleet or status; enter keeps, esc clears"},
		{"esc", "back; clears the filter"},
		{"?", "this key map"},
		{"q ctrl+c", "quit"},
		{"", ""},
		{"in a question", "type the answer, enter sends it"},
		{"in a form", "type a value, tab/↓ next field, ↑ previous, enter accept,"},
		{" ", "ctrl+d decline, ctrl+x cancel"},
		{"in a URL", "a accept, d decline, c cancel"},
	}
	b := []string{st.title.Render(cut.End("tai top · keys", width)), ""}
	for _, k := range keys {
		if k[0] == "" {
			b = append(b, "")
			continue
		}
		b = append(b, cut.End(fmt.Sprintf("  %-14s %s", k[0], k[1]), width))
	}
	b = append(b, "", st.dim.Render(cut.End("esc or ? back · q quit", width)))
	return strings.Join(b, "\n")
}

// frame is a screen being rendered: its lines so far, and the index of the
// next selectable line (asks first, then sessions).
type frame struct {
	st       styles
	b        []string
	sel, idx int
	width    int
	now      time.Time
}

// item adds the next selectable line, marked if it is the selected one.
func (f *frame) item(s string) {
	selected := f.idx == f.sel
	cursor := "  "
	if selected {
		cursor = "▸ " // visible without colour too
	}
	s = cut.End(cursor+s, f.width)
	if selected {
		s = f.st.sel.Render(s)
	}
	f.b = append(f.b, s)
	f.idx++
}

// queue adds the asks waiting for the user, oldest first.
func (f *frame) queue(q []Item) {
	if len(q) == 0 {
		return
	}
	f.b = append(f.b, "", f.st.head.Render(cut.End("  ATTENTION (oldest first)", f.width)))
	for _, it := range q {
		chip := fmt.Sprintf("%-8s", it.Chip)
		if cs, ok := f.st.chips[it.Chip]; ok && f.idx != f.sel {
			chip = cs.Render(chip)
		}
		who := it.Run
		if it.Task != "" {
			who = it.Task + " @ " + shortRun(it.Run)
		}
		whoW := 28
		if f.width < 100 {
			whoW = 20
		}
		rest := fmt.Sprintf(" %6s  %s  %s", age(f.now, it.Since), pad(who, whoW), it.Title)
		f.item(chip + rest)
	}
}

// layout is the table's columns at a width: the task always (a fleet's
// tasks told apart at every width), more of the rest as room allows.
type layout struct {
	task     int  // the TASK column's width
	diff     bool // DIFF
	model    bool // MODEL and COST
	driver   bool // DRIVER
	worktree int  // the WORKTREE column's width, 0 for none
}

func layoutFor(width int) layout {
	switch {
	case width >= 160:
		return layout{task: 22, diff: true, model: true, driver: true, worktree: 24}
	case width >= 120:
		return layout{task: 16, diff: true, model: true}
	case width >= 100:
		return layout{task: 14, diff: true}
	}
	return layout{task: 12}
}

// sessions adds the table of sessions, grouped under their run: a fleet's
// line names it, counts its tasks and gives its budget.
func (f *frame) sessions(runs []feed.State, rows []Row) {
	lo := layoutFor(f.width)
	f.b = append(f.b, f.st.head.Render(cut.End("  "+lo.header(), f.width)))
	for _, r := range runs {
		var mine []Row
		for _, row := range rows {
			if row.Run == r.Run {
				mine = append(mine, row)
			}
		}
		if len(mine) == 0 && len(rows) > 0 {
			continue // filtered out
		}
		f.b = append(f.b, f.st.dim.Render(cut.End("  "+groupLine(r), f.width)))
		if r.Budget != nil {
			f.b = append(f.b, cut.End("     budget: "+budgetLine(*r.Budget), f.width))
		}
		for _, l := range parkLines(r, f.now) {
			f.b = append(f.b, cut.End("     "+l, f.width))
		}
		for _, row := range mine {
			f.item(lo.line(row, f.now))
		}
	}
}

// groupLine heads a run's rows: its kind and whole name, a fleet's tasks
// and budget.
func groupLine(r feed.State) string {
	s := fmt.Sprintf("%s %s", kindName(r.Kind), r.Run)
	if len(r.Tasks) > 0 {
		n := map[string]int{}
		var order []string
		for _, t := range r.Tasks {
			if n[t.Status] == 0 {
				order = append(order, t.Status)
			}
			n[t.Status]++
		}
		var parts []string
		for _, st := range order {
			parts = append(parts, fmt.Sprintf("%d %s", n[st], st))
		}
		noun := "tasks"
		if len(r.Tasks) == 1 {
			noun = "task"
		}
		s += fmt.Sprintf(" · %d %s: %s", len(r.Tasks), noun, strings.Join(parts, ", "))
	}
	return "── " + s
}

func kindName(k feed.Kind) string {
	if k == "" {
		return "run"
	}
	return string(k)
}

func (lo layout) header() string {
	return lo.cols("AGENT", "TASK", "STATE", "DRIVER", "MODEL", "ELAPSED", "TOKENS", "COST", "DIFF", "LAST", "WORKTREE", "ACTIVITY")
}

// cols lays out one line's cells in the layout's columns.
func (lo layout) cols(agent, task, state, driver, model, el, tok, cost, diff, last, where, activity string) string {
	var b strings.Builder
	b.WriteString(pad(agent, 12) + " " + pad(cut.Middle(task, lo.task), lo.task) + " " + pad(state, 8) + " ")
	if lo.driver {
		b.WriteString(pad(driver, 6) + " ")
	}
	if lo.model {
		b.WriteString(pad(model, 14) + " ")
	}
	fmt.Fprintf(&b, "%7s %9s ", el, tok)
	if lo.model {
		fmt.Fprintf(&b, "%10s ", cost)
	}
	if lo.diff {
		fmt.Fprintf(&b, "%9s ", diff)
	}
	fmt.Fprintf(&b, "%5s ", last)
	if lo.worktree > 0 {
		b.WriteString(pad(cut.Start(where, lo.worktree), lo.worktree) + " ")
	}
	b.WriteString(" " + activity)
	return strings.TrimRight(b.String(), " ")
}

func (r Row) agent() string {
	if r.Session.Agent == "" && r.Task != nil {
		return r.Task.Agent
	}
	return r.Session.Agent
}

func (r Row) taskID() string {
	if r.Task != nil {
		return r.Task.ID
	}
	return r.Session.Task
}

func (r Row) state() string {
	if r.Task != nil && (r.Session.ID == "" || r.Task.Status == taskParked) {
		return r.Task.Status
	}
	return string(r.Session.State)
}

// taskParked is a fleet task's status while its account is parked.
const taskParked = "parked"

// activity is what the row's session does, or what its parked task
// waits for: the countdown to its account's reset (live: the model's
// clock renders it), or a release by hand. The account is on the fleet's
// parked line (parkLines): too long for this column.
func (r Row) activity(now time.Time) string {
	if t := r.Task; t != nil && t.Status == taskParked {
		return parkWait(*t, now)
	}
	return r.Session.Activity
}

func parkWait(t feed.Task, now time.Time) string {
	if t.ResetsAt.IsZero() {
		return "paused by hand"
	}
	return "reset in " + max(t.ResetsAt.Sub(now), 0).Round(time.Second).String()
}

// parkLines are a fleet's parked accounts, one line each: the account,
// the countdown to its reset (or the release by hand it waits for) and
// its parked tasks.
func parkLines(r feed.State, now time.Time) []string {
	var order []string
	tasks := map[string][]string{}
	wait := map[string]string{}
	for _, t := range r.Tasks {
		if t.Status != taskParked {
			continue
		}
		if _, ok := tasks[t.Account]; !ok {
			order = append(order, t.Account)
			wait[t.Account] = parkWait(t, now)
		}
		tasks[t.Account] = append(tasks[t.Account], t.ID)
	}
	var out []string
	for _, a := range order {
		w := wait[a]
		if w == "paused by hand" {
			w += " until tai fleet resume"
		}
		acct := a
		if acct == "" {
			acct = "an account"
		}
		out = append(out, fmt.Sprintf("parked: %s %s (%s)", acct, w, strings.Join(tasks[a], ", ")))
	}
	return out
}

// line is one session's row of the table.
func (lo layout) line(r Row, now time.Time) string {
	s := r.Session
	where := s.Cwd
	var tb *feed.Budget
	if r.Task != nil {
		if where == "" {
			where = r.Task.Branch
		}
		tb = r.Task.Budget
	}
	el := "-"
	if !s.Started.IsZero() {
		el = age(now, s.Started)
	}
	return lo.cols(r.agent(), r.taskID(), r.state(), s.Driver, s.Model, el, tokens(s.Tokens, tb), cost(s.Cost, tb),
		fmt.Sprintf("+%d/-%d", s.Added, s.Removed), age(now, s.LastEvent), where, r.activity(now))
}

func shortRun(r string) string {
	if len(r) > 12 {
		return "…" + r[len(r)-6:]
	}
	return r
}

// Peek renders an ask in full: the tool call, the options, the diff and
// the rule that asked.
func Peek(it Item, in Input, now time.Time, width int, color bool) string {
	it = safeItem(it)
	st := newStyles(color)
	var b []string
	add := func(s string) {
		for _, l := range strings.Split(s, "\n") {
			b = append(b, cut.End(l, width))
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
		add("answer: " + in.Text + "█")
		add("")
		add(st.dim.Render("type the answer · enter send · esc back"))
		return strings.Join(b, "\n")
	}
	if it.Elicit != nil {
		peekElicit(add, st, it.Elicit, in)
		return strings.Join(b, "\n")
	}
	if it.Budget != nil {
		add("")
		add(budgetLine(*it.Budget))
		add("")
		add(st.dim.Render("the fleet is at its budget: a task that needs more is refused or stopped · esc back"))
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
	if c, ok := render.ShownCommand(tc); ok {
		add(st.head.Render("  $ " + c))
	} else if tc.Kind == driver.KindExecute {
		add("  (command not given by the agent)")
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
		lines, err := render.UnifiedDiff(c, it.Cwd)
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

// count is n short: 950, 1.2k, 45k, 1.5M.
func count(n int64) string {
	switch {
	case n < 1000:
		return fmt.Sprintf("%d", n)
	case n < 10000:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(n)/1000), ".0") + "k"
	case n < 1000000:
		return fmt.Sprintf("%dk", n/1000)
	}
	return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(n)/1e6), ".0") + "M"
}

// tokens is a session's tokens, against its task's token limit if it has one.
func tokens(used int64, b *feed.Budget) string {
	if b == nil || b.Limit.Tokens == 0 {
		return count(used)
	}
	return count(used) + "/" + count(b.Limit.Tokens)
}

// cost is a session's cost, against its task's cost limit if it has one.
func cost(used float64, b *feed.Budget) string {
	switch {
	case b != nil && b.Limit.Cost > 0:
		return fmt.Sprintf("%.2f/%.2f", used, b.Limit.Cost)
	case used > 0:
		return fmt.Sprintf("%.3f", used)
	}
	return "-"
}

// budgetLine is a budget's use against each of its limits.
func budgetLine(b feed.Budget) string {
	var parts []string
	pct := func(used, limit float64) string { return fmt.Sprintf(" (%d%%)", int(100*used/limit)) }
	if l := b.Limit.Tokens; l > 0 {
		parts = append(parts, "tokens "+count(b.Used.Tokens)+"/"+count(l)+pct(float64(b.Used.Tokens), float64(l)))
	}
	if l := b.Limit.Turns; l > 0 {
		parts = append(parts, fmt.Sprintf("turns %d/%d", b.Used.Turns, l))
	}
	if l := b.Limit.Cost; l > 0 {
		parts = append(parts, fmt.Sprintf("cost %.2f/%.2f", b.Used.Cost, l)+pct(b.Used.Cost, l))
	}
	if l := b.Limit.WallTimeMS; l > 0 {
		parts = append(parts, "wall time "+(time.Duration(l)*time.Millisecond).String())
	}
	if len(parts) == 0 {
		return "no limits"
	}
	return strings.Join(parts, " · ")
}

// Input is what is being typed in a peek: a question's answer, or an
// elicitation's form, one value per field, with the field being edited.
type Input struct {
	Text   string
	Fields []string
	Field  int
}

// peekElicit shows an elicitation: the message, then the form's fields
// with their types, constraints, choices and the values typed so far (a
// secret's as dots), or the URL to visit.
func peekElicit(add func(string), st styles, el *feed.Elicitation, in Input) {
	req := el.Request
	add("")
	add(req.Message)
	if req.Mode == driver.ElicitURL {
		add("")
		add("  " + req.URL)
		add("")
		add(st.dim.Render("a accept (I visited it) · d decline · c cancel · esc back"))
		return
	}
	add("")
	add(st.head.Render("Form"))
	for i, f := range req.Fields {
		cursor := "  "
		if i == in.Field {
			cursor = "▸ "
		}
		val := ""
		if i < len(in.Fields) {
			val = in.Fields[i]
		}
		if f.Secret {
			val = strings.Repeat("•", len([]rune(val)))
		}
		if i == in.Field {
			val += "█"
		}
		add(fmt.Sprintf("%s%s (%s): %s", cursor, fieldLabel(f), fieldNotes(f), val))
		if len(f.Enum) > 0 {
			var ch []string
			for j, e := range f.Enum {
				ch = append(ch, fmt.Sprintf("%d) %s", j+1, e))
			}
			add("      " + strings.Join(ch, "  "))
		}
	}
	add("")
	add(st.dim.Render("type a value · tab/↓ next field · ↑ previous · enter accept · ctrl+d decline · ctrl+x cancel · esc back"))
}

func fieldLabel(f driver.ElicitField) string {
	if f.Title != "" && f.Title != f.Name {
		return f.Title + " [" + f.Name + "]"
	}
	return f.Name
}

// fieldNotes is a field's type, constraints and default, as the
// terminal's form shows them (in short words).
func fieldNotes(f driver.ElicitField) string {
	notes := elicit.Notes(f, true)
	if f.Default != nil {
		notes = append(notes, fmt.Sprintf("default %v", f.Default))
	}
	return strings.Join(notes, ", ")
}
