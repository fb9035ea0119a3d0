package top

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/elicit"
	"github.com/tai-dev/tai/feed"
	"github.com/tai-dev/tai/internal/cut"
	"github.com/tai-dev/tai/internal/safetext"
)

// Source is where tai top gets its runs and sends its answers: the live
// feeds on this machine (FeedSource), or a test's.
type Source interface {
	Runs(ctx context.Context) ([]feed.State, error)
	// Answer answers ask of run: once, always, deny or never.
	Answer(ctx context.Context, run, ask, answer string) error
	// AnswerQuestion answers question of run with text.
	AnswerQuestion(ctx context.Context, run, question, text string) error
	// AnswerElicitation answers elicitation of run: accept (with the
	// form's content), decline or cancel.
	AnswerElicitation(ctx context.Context, run, elicitation, action string, content map[string]any) error
	// Follow calls fn with each transcript line of run's session until
	// ctx ends or the run does.
	Follow(ctx context.Context, run, session string, fn func(line string)) error
}

type mode int

const (
	modeList mode = iota
	modePeek
	modeFollow
	modeFilter // typing the filter
	modeKeys   // the key map
)

// Model is tai top's bubbletea model.
type Model struct {
	ctx   context.Context
	src   Source
	now   func() time.Time
	color bool
	every time.Duration

	runs          []feed.State
	sel           int
	width, height int
	mode          mode
	peek          Item
	in            Input // what is typed in a peek: a question's answer, a form
	status        string
	filter        string // what the list shows: see Match

	follow       []string
	followTitle  string
	followCancel context.CancelFunc
	followCh     chan string
}

// New returns the model. every is how often it reloads the runs.
func New(ctx context.Context, src Source, now func() time.Time, color bool, every time.Duration) *Model {
	return &Model{ctx: ctx, src: src, now: now, color: color, every: every, width: 80, height: 24}
}

type runsMsg struct {
	runs []feed.State
	err  error
}

type tickMsg struct{}

type answeredMsg struct {
	what string
	err  error
}

type followMsg struct {
	line string
	ok   bool
}

func (m *Model) load() tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(m.ctx, 5*time.Second)
		defer cancel()
		runs, err := m.src.Runs(ctx)
		return runsMsg{runs, err}
	}
}

func (m *Model) tick() tea.Cmd {
	return tea.Tick(m.every, func(time.Time) tea.Msg { return tickMsg{} })
}

// Init implements tea.Model.
func (m *Model) Init() tea.Cmd { return tea.Batch(m.load(), m.tick()) }

// lists are the queue and the rows the filter lets through, as shown.
func (m *Model) lists() ([]Item, []Row) {
	return filterQueue(Queue(m.runs), m.filter), filterRows(Rows(m.runs), m.filter)
}

// selected returns the queue item or row under the cursor.
func (m *Model) selected() (*Item, *Row) {
	q, rows := m.lists()
	if m.sel < len(q) {
		return &q[m.sel], nil
	}
	if i := m.sel - len(q); i < len(rows) {
		return nil, &rows[i]
	}
	return nil, nil
}

func (m *Model) count() int {
	q, rows := m.lists()
	return len(q) + len(rows)
}

// Update implements tea.Model.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
	case runsMsg:
		if msg.err != nil {
			m.status = "error: " + msg.err.Error()
		} else {
			m.runs = msg.runs
		}
		m.sel = min(m.sel, max(m.count()-1, 0))
	case tickMsg:
		return m, tea.Batch(m.load(), m.tick())
	case answeredMsg:
		if msg.err != nil {
			m.status = "not answered: " + msg.err.Error()
		} else {
			m.status = msg.what
			m.mode = modeList
		}
		return m, m.load()
	case followMsg:
		if !msg.ok {
			m.follow = append(m.follow, "(the run ended)")
			return m, nil
		}
		m.follow = append(m.follow, msg.line)
		if len(m.follow) > 2000 {
			m.follow = m.follow[len(m.follow)-2000:]
		}
		return m, m.nextLine()
	case tea.KeyPressMsg:
		if m.mode == modeFilter {
			return m.filterKey(msg)
		}
		if m.mode == modePeek && m.peek.Question != nil {
			return m.typing(msg)
		}
		if m.mode == modePeek && m.peek.Elicit != nil {
			return m.elicitKey(msg)
		}
		return m.key(msg.String())
	}
	return m, nil
}

func (m *Model) key(k string) (tea.Model, tea.Cmd) {
	switch k {
	case "ctrl+c", "q":
		m.stopFollow()
		return m, tea.Quit
	case "esc":
		m.stopFollow()
		if m.mode == modeList {
			m.setFilter("")
		}
		m.mode = modeList
		return m, nil
	case "?":
		if m.mode == modeKeys {
			m.mode = modeList
		} else if m.mode == modeList {
			m.mode = modeKeys
		}
		return m, nil
	}
	if m.mode == modeFollow || m.mode == modeKeys {
		return m, nil
	}
	switch k {
	case "up", "k":
		m.sel = max(m.sel-1, 0)
	case "down", "j":
		m.sel = min(m.sel+1, max(m.count()-1, 0))
	case "enter":
		if it, _ := m.selected(); it != nil {
			m.peek, m.mode, m.in = *it, modePeek, Input{}
			if it.Elicit != nil {
				m.in.Fields = make([]string, len(it.Elicit.Request.Fields))
			}
		}
	case "y", "a", "f", "n":
		it := &m.peek
		if m.mode != modePeek {
			it, _ = m.selected()
		}
		if it == nil || it.Ask == nil {
			m.status = "nothing to answer here: select an ASK"
			return m, nil
		}
		answer := map[string]string{"y": feed.AnswerOnce, "a": feed.AnswerAlways, "f": feed.AnswerAlways, "n": feed.AnswerDeny}[k]
		run, id, title := it.Run, it.Ask.ID, it.Title
		return m, func() tea.Msg {
			ctx, cancel := context.WithTimeout(m.ctx, 10*time.Second)
			defer cancel()
			err := m.src.Answer(ctx, run, id, answer)
			return answeredMsg{what: fmt.Sprintf("answered %s (%s): %s", id, title, answer), err: err}
		}
	case "/":
		if m.mode == modeList {
			m.mode, m.status = modeFilter, ""
		}
	case "l":
		_, row := m.selected()
		if row == nil || row.Session.ID == "" {
			m.status = "select a session to follow"
			return m, nil
		}
		m.startFollow(row.Run, row.Session.ID)
		return m, m.nextLine()
	}
	return m, nil
}

func (m *Model) startFollow(run, session string) {
	m.stopFollow()
	ctx, cancel := context.WithCancel(m.ctx)
	ch := make(chan string, 256)
	m.followCancel, m.followCh, m.follow, m.mode = cancel, ch, nil, modeFollow
	m.followTitle = fmt.Sprintf("following %s of %s · esc back", session, run)
	go func() {
		defer close(ch)
		_ = m.src.Follow(ctx, run, session, func(l string) {
			select {
			case ch <- l:
			case <-ctx.Done():
			}
		})
	}()
}

func (m *Model) stopFollow() {
	if m.followCancel != nil {
		m.followCancel()
		m.followCancel = nil
	}
}

func (m *Model) nextLine() tea.Cmd {
	ch := m.followCh
	return func() tea.Msg {
		l, ok := <-ch
		return followMsg{l, ok}
	}
}

// filterKey edits the filter, which applies as it is typed: enter keeps
// it, esc clears it.
func (m *Model) filterKey(msg tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	switch msg.String() {
	case "ctrl+c":
		return m, tea.Quit
	case "esc":
		m.mode = modeList
		m.setFilter("")
	case "enter":
		m.mode = modeList
	case "backspace":
		m.setFilter(dropLast(m.filter))
	default:
		if msg.Text != "" {
			m.setFilter(m.filter + msg.Text)
		}
	}
	return m, nil
}

// setFilter changes the filter and keeps the cursor on a shown line.
func (m *Model) setFilter(f string) {
	m.filter = f
	m.sel = min(m.sel, max(m.count()-1, 0))
}

// Screen is what View shows, as text.
func (m *Model) Screen() string {
	switch m.mode {
	case modeKeys:
		return KeyMap(m.width, m.color)
	case modePeek:
		return Peek(m.peek, m.in, m.now(), m.width, m.color) + "\n" + cut.End(m.status, m.width)
	case modeFollow:
		lines := m.follow
		if n := m.height - 2; n > 0 && len(lines) > n {
			lines = lines[len(lines)-n:]
		}
		var b strings.Builder
		b.WriteString(cut.End(m.followTitle, m.width) + "\n")
		for _, l := range lines {
			b.WriteString(cut.End(l, m.width) + "\n")
		}
		return b.String()
	}
	s := Frame(m.runs, Opts{Sel: m.sel, Now: m.now(), Width: m.width, Height: m.height - 1, Color: m.color, Filter: m.filter})
	status := m.status
	if m.mode == modeFilter {
		status = "filter (agent, task, fleet, status): " + safetext.Line(m.filter) + "█ · enter keep · esc clear"
	}
	return s + "\n" + cut.End(status, m.width)
}

// View implements tea.Model.
func (m *Model) View() tea.View {
	v := tea.NewView(m.Screen())
	v.AltScreen = true
	v.WindowTitle = "tai top"
	return v
}

// typing edits the answer to a question: enter sends it, esc goes back.
func (m *Model) typing(msg tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	switch msg.String() {
	case "ctrl+c":
		return m, tea.Quit
	case "esc":
		m.mode, m.in = modeList, Input{}
		return m, nil
	case "backspace":
		m.in.Text = dropLast(m.in.Text)
		return m, nil
	case "enter":
		text := strings.TrimSpace(m.in.Text)
		if text == "" {
			m.status = "type an answer first"
			return m, nil
		}
		run, id, task := m.peek.Run, m.peek.Question.ID, m.peek.Task
		return m, func() tea.Msg {
			ctx, cancel := context.WithTimeout(m.ctx, 10*time.Second)
			defer cancel()
			err := m.src.AnswerQuestion(ctx, run, id, text)
			return answeredMsg{what: fmt.Sprintf("answered %s (task %s): %q", id, task, text), err: err}
		}
	}
	if msg.Text != "" {
		m.in.Text += msg.Text
	}
	return m, nil
}

func dropLast(s string) string {
	if r := []rune(s); len(r) > 0 {
		return string(r[:len(r)-1])
	}
	return s
}

// elicitKey fills in and answers an elicitation: a form's fields are typed
// one by one (tab or ↓ to the next), enter accepts, ctrl+d declines,
// ctrl+x cancels; a URL's is a, d or c.
func (m *Model) elicitKey(msg tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	el := m.peek.Elicit
	k := msg.String()
	switch k {
	case "ctrl+c":
		return m, tea.Quit
	case "esc":
		m.mode, m.in = modeList, Input{}
		return m, nil
	case "ctrl+d":
		return m, m.answerElicit(el, driver.ElicitDecline, nil)
	case "ctrl+x":
		return m, m.answerElicit(el, driver.ElicitCancel, nil)
	}
	if el.Request.Mode == driver.ElicitURL {
		switch k {
		case "a":
			return m, m.answerElicit(el, driver.ElicitAccept, nil)
		case "d":
			return m, m.answerElicit(el, driver.ElicitDecline, nil)
		case "c":
			return m, m.answerElicit(el, driver.ElicitCancel, nil)
		}
		return m, nil
	}
	n := len(el.Request.Fields)
	switch k {
	case "tab", "down":
		m.in.Field = min(m.in.Field+1, max(n-1, 0))
		return m, nil
	case "shift+tab", "up":
		m.in.Field = max(m.in.Field-1, 0)
		return m, nil
	case "backspace":
		if m.in.Field < len(m.in.Fields) {
			m.in.Fields[m.in.Field] = dropLast(m.in.Fields[m.in.Field])
		}
		return m, nil
	case "enter":
		content, err := formContent(el.Request, m.in.Fields)
		if err != nil {
			m.status = "the form is not complete: " + err.Error()
			return m, nil
		}
		return m, m.answerElicit(el, driver.ElicitAccept, content)
	}
	if msg.Text != "" && m.in.Field < len(m.in.Fields) {
		m.in.Fields[m.in.Field] += msg.Text
	}
	return m, nil
}

// formContent reads the typed values as the fields' types and checks the
// form (an empty value takes the field's default, if it has one).
func formContent(req driver.ElicitationRequest, typed []string) (map[string]any, error) {
	content := map[string]any{}
	var errs []error
	for i, f := range req.Fields {
		if i >= len(typed) || strings.TrimSpace(typed[i]) == "" {
			continue
		}
		v, err := elicit.ParseInput(f, strings.TrimSpace(typed[i]))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", f.Name, err))
			continue
		}
		content[f.Name] = v
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return elicit.Validate(req, content)
}

func (m *Model) answerElicit(el *feed.Elicitation, action driver.ElicitAction, content map[string]any) tea.Cmd {
	run := m.peek.Run
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(m.ctx, 10*time.Second)
		defer cancel()
		err := m.src.AnswerElicitation(ctx, run, el.ID, string(action), content)
		return answeredMsg{what: fmt.Sprintf("answered %s (%s): %s", el.ID, lastLine(el.Request.Message), action), err: err}
	}
}
