// Package profile reads a TUI agent's screen structurally: is it working,
// idle (and is its composer empty), or waiting on a picker, and if so which
// options does the picker offer. Each agent has a Profile; the parser fails
// closed: a screen it does not recognise is Unknown, never Idle, so a
// change in an agent's UI text makes tai slower (it falls back to the
// quiescence window), not wrong.
package profile

import (
	"regexp"
	"strings"
	"time"

	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/internal/lazyre"
)

// State is what the agent is doing, as far as the screen tells.
type State string

// States. Working and Waiting beat Idle: an agent that shows its input box
// while it works (qwen, gemini accept queued input) is working.
const (
	Unknown State = "unknown"
	Working State = "working"
	Idle    State = "idle"
	Waiting State = "waiting"
)

// Composer is the state of the agent's input box.
type Composer string

// Composer states.
const (
	ComposerUnknown Composer = "unknown"
	ComposerEmpty   Composer = "empty"
	ComposerDraft   Composer = "draft"
)

// PickerKind says what a picker asks.
type PickerKind string

// Picker kinds. A question (options that are neither an allow nor a deny)
// cannot be answered by policy.
const (
	PickerPermission PickerKind = "permission"
	PickerTrust      PickerKind = "trust"
	PickerQuestion   PickerKind = "question"
)

// Verdict is one reading of the screen.
type Verdict struct {
	State    State
	Composer Composer
	Draft    string  // the composer's text, when ComposerDraft
	Picker   *Picker // when Waiting
	Why      string  // the line that decided, for logs and test failures
}

// Picker is a selection prompt on screen.
type Picker struct {
	Kind     PickerKind
	Title    string   // the tool line or question above the options
	Context  []string // the lines between the tool line and the options
	Options  []Option
	Selected int // index into Options of the highlighted one
	ToolKind driver.ToolKind
	Path     string // a file the picker names, if any
	// Horizontal: the options stand side by side; left and right arrows
	// move the highlight.
	Horizontal bool
}

var inlineSep = lazyre.New(`\s{2,}`)

// Option is one choice of a picker.
type Option struct {
	Label  string // as shown, without number and marker
	Number string // "1", "2"...; "" in an arrow-only list
	Kind   string // driver.OptionAllowOnce, ...; "" when unclassified
}

// Signature identifies a picker instance, so that one answered picker is
// not answered twice while it is still on screen.
func (p *Picker) Signature() string {
	var b strings.Builder
	b.WriteString(p.Title)
	for _, o := range p.Options {
		b.WriteString("|" + o.Label)
	}
	return b.String()
}

// Profile describes one agent's TUI. The zero values of the durations
// take the defaults below.
type Profile struct {
	Name string
	// Quiet is the quiescence window used when the screen is not
	// recognised (agentapi's rule: 2 s with no change).
	Quiet time.Duration
	// SubmitDelay is the wait between the end of a paste and the submitting
	// CR: Claude holds a paste open ~100 ms and an Enter inside it becomes a
	// newline. Never below 150 ms.
	SubmitDelay time.Duration
	// Bottom is how many of the last non-blank rows hold the live area
	// (spinner, pickers, input box); history above it is ignored, so an old
	// "esc to cancel" in the transcript does not read as working.
	Bottom int

	Working     []*regexp.Regexp // a row that means working
	Composer    *regexp.Regexp   // the input row; group 1 is the draft text
	Placeholder *regexp.Regexp   // the draft text that is really an empty box's hint
	PickerHint  []*regexp.Regexp // rows that confirm a picker (besides a marked option)
	TrustHint   []*regexp.Regexp // rows that make a picker a trust dialog
	ToolLine    *regexp.Regexp   // the tool call's header row above a picker
	Marker      string           // characters that mark the highlighted option
	CancelKeys  string           // keystrokes that cancel the running turn

	// Transcript extraction.
	ReplyPrefix []string         // prefixes of the agent's text rows ("✦ ")
	EchoPrefix  string           // prefix of the echoed prompt row ("> ")
	Chrome      []*regexp.Regexp // rows that are never part of a reply
	// Notices are rows the agent prints by itself, whatever the turn
	// (Copilot's "● MCP Servers reloaded", drawn a few seconds into its
	// start: after the echoed prompt on a loaded machine). They are chrome,
	// and the fallback drops them too: they name no layout.
	Notices []*regexp.Regexp
	// ComposerUnderRule: the composer row sits right under a horizontal
	// rule; an echoed "> prompt" in the transcript does not.
	ComposerUnderRule bool
	// ComposerHeader matches rows that may sit between that rule and the
	// composer (gemini's mode line "Shift+Tab to accept edits"); blank
	// rows may too. Any other row there means it is not the composer.
	ComposerHeader *regexp.Regexp
	// ReadyQuiet: the first idle screen means ready only once the output
	// has been quiet for the window too. gemini draws an idle composer
	// ~150 ms before its trust dialog pops up over it; a prompt typed
	// into that frame lands in the dialog.
	ReadyQuiet bool
	// StartQuiet: a picker shown before the first idle screen is answered
	// only once the output has been quiet for the window. Claude Code
	// draws its trust dialog before its input is set up and redraws it
	// ~200 ms later with the first option highlighted again: an arrow
	// typed before is undone, and the Enter after it picks "No, exit".
	StartQuiet bool
	// PickerDelay is how long a picker must have been on screen before it
	// is answered: Claude Code ignores keys for ~150 ms after it shows a
	// permission dialog (a guard against keystrokes meant for the
	// composer), so an Enter sent at once is lost and the turn hangs.
	PickerDelay time.Duration
	// PickerQuiet is how long the output must have paused before a picker
	// is answered. Codex drains its input as it draws a screen that takes
	// a decision (trust, approval); a key that comes during the drain is
	// lost (0.160) or makes it exit "timed out discarding buffered
	// terminal input" (0.171), and the drain lasts longer the busier the
	// machine. Its end draws nothing, so a pause after the last frame is
	// the only sign of it.
	PickerQuiet time.Duration
	// EndSettle: an idle screen ends a turn only once the output has
	// paused this long and the agent's processes are at rest (or after
	// the quiet window). Copilot types a reply out after its footer has
	// gone idle when the machine is busy; read at once, the reply stops
	// mid-word ("Hello from the scripted mo").
	EndSettle time.Duration
	// EscOption: an option labelled "(Esc …)" is chosen with Esc, not
	// with arrows and Enter: Copilot's "No, and tell Copilot what to do
	// differently (Esc to stop)" takes Enter as the start of a message to
	// type and stays on screen.
	EscOption bool
	// ReadyOnScreen: only the profile's own idle verdict means ready, not
	// quiescence: opencode is silent for over 2 s before its first frame.
	ReadyOnScreen bool
	// ComposerBox, when set, finds the composer instead of Composer: the
	// last row matching it is the footer inside the input box (opencode's
	// "┃  Build · model"), the box's bottom edge right under it; the box's
	// rows above it ("┃  text") hold the draft, the first non-empty one.
	ComposerBox *regexp.Regexp
	// InlinePicker matches a row of options side by side (opencode's
	// "┃   Allow once   Allow always   Reject   ⇆ select"); group 1 holds
	// them, two or more spaces apart. It is a picker only with a
	// PickerHint row; the first option is the highlighted one (the
	// highlight is a colour the screen text does not carry), and left and
	// right arrows move it.
	InlinePicker *regexp.Regexp
	// ArrowList: a picker may also be a list without numbers, one row
	// marked and the others indented to the marked row's label (claude's
	// trust dialog "❯ No, exit" / "  Yes, I trust this folder"). It is a
	// picker only with a PickerHint row; options are numbered by position
	// for the decision and chosen with arrows.
	ArrowList bool
	// ReplyIndent: the agent's text rows are the rows indented by exactly
	// this (opencode's 5 spaces), chrome excluded; blank rows are dropped.
	ReplyIndent string
	// PaneGap: text after a run of this many spaces belongs to another
	// pane (opencode's sidebar) and is cut from transcript rows.
	PaneGap int
	// ContinueIndent is the indent of a reply block's further rows
	// ("" means four spaces); codex indents them by two.
	ContinueIndent string
	// TurnOpen and TurnDone: when the lowest transcript row above the
	// composer that matches either matches TurnOpen (the echoed prompt, the
	// agent's text), a turn is still running though no spinner shows:
	// codex drops its status row for a frame between its text and the
	// tool call that follows. The verdict is then Unknown, not Idle, so
	// only the agent's end-of-turn row (TurnDone) or quiescence ends it.
	TurnOpen, TurnDone []*regexp.Regexp
	// LimitRows match the first row of the TUI's own rendering of a
	// request its provider refused at a usage or rate limit (claude's "●
	// API Error: Request rejected (429) · …"); see Limit. None: the
	// generic shapes.
	LimitRows []*regexp.Regexp
	// AutoResume matches a row by which the TUI offers to resume the turn
	// by itself at a limit's reset (claude's "Continuing automatically at
	// 12:04pm · Esc to cancel"); tai cancels it with CancelKeys, as the
	// run resumes the session itself, within its bounds.
	AutoResume *regexp.Regexp
}

var boxBottom = lazyre.New(`^\s*[╹└╰┗][▀─━]{8,}`)

// boxComposer is the composer of a ComposerBox profile: found, its draft
// (placeholder included) and the row that decided.
func (p *Profile) boxComposer(region []string) (bool, string, string) {
	for i := len(region) - 2; i >= 0; i-- {
		if !p.ComposerBox.MatchString(region[i]) || !boxBottom().MatchString(region[i+1]) {
			continue
		}
		draft := ""
		for k := i - 1; k >= 0; k-- {
			t := strings.TrimSpace(region[k])
			if !strings.HasPrefix(t, "┃") {
				break
			}
			// The input starts two columns in; text far to the right
			// (the workspace path) is the footer's, not a draft.
			c := strings.TrimPrefix(t, "┃")
			if lead := len(c) - len(strings.TrimLeft(c, " ")); lead > 0 && lead < 8 {
				if k := strings.Index(c[lead:], "        "); k >= 0 {
					c = c[:lead+k]
				}
				draft = strings.TrimSpace(c)
			}
		}
		return true, draft, strings.TrimSpace(region[i])
	}
	return false, "", ""
}

// Defaults.
const (
	DefaultQuiet       = 2 * time.Second
	MinSubmitDelay     = 150 * time.Millisecond
	DefaultBottom      = 30
	defaultMarkerChars = "›❯>●▶→*"
)

// QuietWindow is p.Quiet or the default.
func (p *Profile) QuietWindow() time.Duration {
	if p.Quiet > 0 {
		return p.Quiet
	}
	return DefaultQuiet
}

// SubmitWait is p.SubmitDelay, at least MinSubmitDelay.
func (p *Profile) SubmitWait() time.Duration {
	if p.SubmitDelay < MinSubmitDelay {
		return MinSubmitDelay
	}
	return p.SubmitDelay
}

var optionRow = lazyre.New(`^\s*(?:([^\s\w])\s*)?(\d{1,2})[.)]\s+(\S.*?)\s*$`)

// Parse reads one screen (rows, trailing blanks allowed).
func (p *Profile) Parse(lines []string) Verdict {
	region, base := p.region(lines)
	if pk := p.picker(region); pk != nil {
		return Verdict{State: Waiting, Composer: ComposerUnknown, Picker: pk, Why: "picker: " + pk.Title}
	}
	for _, l := range region {
		for _, re := range p.Working {
			if re.MatchString(l) {
				return Verdict{State: Working, Composer: p.composer(region), Why: strings.TrimSpace(l)}
			}
		}
	}
	if p.ComposerBox != nil {
		ok, draft, why := p.boxComposer(region)
		if !ok {
			return Verdict{State: Unknown, Composer: ComposerUnknown}
		}
		v := Verdict{State: Idle, Composer: ComposerEmpty, Why: why}
		if draft != "" && (p.Placeholder == nil || !p.Placeholder.MatchString(draft)) {
			v.Composer, v.Draft = ComposerDraft, draft
		}
		return v
	}
	if p.Composer != nil {
		for i := len(region) - 1; i >= 0; i-- {
			m := p.Composer.FindStringSubmatch(region[i])
			if m == nil || !p.underRule(region, i) {
				continue
			}
			v := Verdict{State: Idle, Composer: ComposerEmpty, Why: strings.TrimSpace(region[i])}
			draft := ""
			if len(m) > 1 {
				draft = strings.TrimSpace(m[1])
			}
			if draft != "" && (p.Placeholder == nil || !p.Placeholder.MatchString(draft)) {
				v.Composer, v.Draft = ComposerDraft, draft
			}
			if row, open := p.turnOpen(lines[:base+i]); open {
				v.State, v.Why = Unknown, "turn open: "+row
			}
			return v
		}
	}
	return Verdict{State: Unknown, Composer: ComposerUnknown}
}

// turnOpen reports whether the transcript's last turn row opens a turn
// (see Profile.TurnOpen), and the row.
func (p *Profile) turnOpen(transcript []string) (string, bool) {
	for k := len(transcript) - 1; k >= 0 && len(p.TurnOpen) > 0; k-- {
		l := transcript[k]
		for _, re := range p.TurnDone {
			if re.MatchString(l) {
				return "", false
			}
		}
		for _, re := range p.TurnOpen {
			if re.MatchString(l) {
				return strings.TrimSpace(l), true
			}
		}
	}
	return "", false
}

func (p *Profile) composer(region []string) Composer {
	if p.ComposerBox != nil {
		ok, draft, _ := p.boxComposer(region)
		switch {
		case !ok:
			return ComposerUnknown
		case draft != "" && (p.Placeholder == nil || !p.Placeholder.MatchString(draft)):
			return ComposerDraft
		}
		return ComposerEmpty
	}
	if p.Composer == nil {
		return ComposerUnknown
	}
	for i := len(region) - 1; i >= 0; i-- {
		if m := p.Composer.FindStringSubmatch(region[i]); m != nil && p.underRule(region, i) {
			if len(m) > 1 && strings.TrimSpace(m[1]) != "" && (p.Placeholder == nil || !p.Placeholder.MatchString(strings.TrimSpace(m[1]))) {
				return ComposerDraft
			}
			return ComposerEmpty
		}
	}
	return ComposerUnknown
}

// underRule says whether region[i] may be the composer: always, unless
// ComposerUnderRule, when a rule must be above it with only blank rows
// and ComposerHeader rows between.
func (p *Profile) underRule(region []string, i int) bool {
	if !p.ComposerUnderRule || rule().MatchString(region[i]) {
		return !rule().MatchString(region[i])
	}
	for k := i - 1; k >= 0; k-- {
		switch l := region[k]; {
		case rule().MatchString(l):
			return true
		case strings.TrimSpace(l) == "", p.ComposerHeader != nil && p.ComposerHeader.MatchString(l):
			continue
		}
		return false
	}
	return false
}

// unbox strips the borders of the boxes a row sits in ("│ ● 1. Allow │").
func unbox(s string) string {
	for {
		t := strings.TrimSpace(s)
		t = strings.TrimSpace(strings.TrimRight(strings.TrimLeft(t, "│┃|"), "│┃|"))
		if t == strings.TrimSpace(s) {
			return t
		}
		s = t
	}
}

// region is the live area: the last Bottom rows up to the last non-blank.
func (p *Profile) region(lines []string) ([]string, int) {
	end := len(lines)
	for end > 0 && strings.TrimSpace(lines[end-1]) == "" {
		end--
	}
	n := p.Bottom
	if n <= 0 {
		n = DefaultBottom
	}
	start := max(end-n, 0)
	return lines[start:end], start
}

// picker finds a run of numbered options (1, 2, 3... in order) of which
// exactly one carries a selection marker. Numbered lists in an agent's
// reply have no marker, so they never read as a picker; a list with a
// marker needs a confirming hint row too, or the composer gone.
func (p *Profile) picker(region []string) *Picker {
	if p.InlinePicker != nil && p.hinted(region) {
		for i := len(region) - 1; i >= 0; i-- {
			m := p.InlinePicker.FindStringSubmatch(region[i])
			if m == nil {
				continue
			}
			var opts []Option
			for _, l := range inlineSep().Split(strings.TrimSpace(m[1]), -1) {
				opts = append(opts, Option{Label: l, Number: itoa(len(opts) + 1), Kind: classify(l)})
			}
			if len(opts) < 2 {
				return nil
			}
			pk := &Picker{Kind: PickerPermission, Options: opts, Selected: 0, Horizontal: true}
			p.describe(pk, region, i)
			return pk
		}
	}
	markers := p.Marker
	if markers == "" {
		markers = defaultMarkerChars
	}
	for i := len(region) - 1; i >= 0; i-- {
		m := optionRow().FindStringSubmatch(unbox(region[i]))
		if m == nil {
			continue
		}
		// Walk up to the start of the run.
		end := i
		start := i
		for start > 0 {
			if optionRow().MatchString(unbox(region[start-1])) {
				start--
				continue
			}
			break
		}
		var opts []Option
		selected, marks := -1, 0
		for k := start; k <= end; k++ {
			mm := optionRow().FindStringSubmatch(unbox(region[k]))
			if mm[2] != itoa(len(opts)+1) {
				opts = nil
				break
			}
			if mm[1] != "" && strings.Contains(markers, mm[1]) {
				selected, marks = len(opts), marks+1
			}
			opts = append(opts, Option{Label: mm[3], Number: mm[2], Kind: classify(mm[3])})
		}
		if len(opts) < 2 || marks != 1 {
			return nil
		}
		if !p.hinted(region) && p.composer(region) != ComposerUnknown {
			return nil
		}
		pk := &Picker{Kind: PickerPermission, Options: opts, Selected: selected}
		p.describe(pk, region, start)
		return pk
	}
	if p.ArrowList && p.hinted(region) {
		return p.arrowPicker(region, markers)
	}
	return nil
}

// arrowPicker finds an ArrowList picker: the last marked row that is not
// the composer, with the rows right above and below it that start at the
// column of its label (no blank row between). Fewer than two options is
// no picker.
func (p *Profile) arrowPicker(region []string, markers string) *Picker {
	for i := len(region) - 1; i >= 0; i-- {
		r := []rune(unbox(region[i]))
		if len(r) < 3 || !strings.ContainsRune(markers, r[0]) || r[1] != ' ' {
			continue
		}
		if p.Composer != nil && p.Composer.MatchString(region[i]) && p.underRule(region, i) {
			continue
		}
		raw := []rune(region[i])
		col := 0
		for col < len(raw) && raw[col] == ' ' {
			col++
		}
		col++ // the marker
		for col < len(raw) && raw[col] == ' ' {
			col++
		}
		sibling := func(k int) bool {
			l := []rune(region[k])
			lead := 0
			for lead < len(l) && l[lead] == ' ' {
				lead++
			}
			return lead == col && lead < len(l)
		}
		start, end := i, i
		for start > 0 && sibling(start-1) {
			start--
		}
		for end < len(region)-1 && sibling(end+1) {
			end++
		}
		if start == end {
			return nil
		}
		var opts []Option
		for k := start; k <= end; k++ {
			label := strings.TrimSpace(string([]rune(region[k])[col:]))
			opts = append(opts, Option{Label: label, Number: itoa(len(opts) + 1), Kind: classify(label)})
		}
		pk := &Picker{Kind: PickerPermission, Options: opts, Selected: i - start}
		p.describe(pk, region, start)
		return pk
	}
	return nil
}

func (p *Profile) hinted(region []string) bool {
	for _, l := range region {
		for _, re := range p.PickerHint {
			if re.MatchString(l) {
				return true
			}
		}
	}
	return false
}

// describe fills in title, kind and context from the rows above the
// options.
func (p *Profile) describe(pk *Picker, region []string, optStart int) {
	title, question := "", ""
	var context []string
	lookback := 12
	if pk.Horizontal {
		lookback = 24 // opencode shows the diff between the tool line and the options
	}
	for k := optStart - 1; k >= 0 && k >= optStart-lookback; k-- {
		l := unbox(region[k])
		if strings.Trim(l, "╭╮╰╯─━═ ") == "" {
			continue
		}
		if p.ToolLine != nil {
			if m := p.ToolLine.FindStringSubmatch(region[k]); m != nil {
				title = strings.Join(strings.Fields(m[len(m)-1]), " ")
				break
			}
		}
		if question == "" && strings.HasSuffix(l, "?") {
			question = l
		}
		context = append([]string{l}, context...)
	}
	if title == "" {
		title = question
	}
	if title == "" && len(context) > 0 {
		title = context[len(context)-1]
	}
	pk.Title, pk.Context = title, context
	all := strings.Join(append(append([]string{title}, context...), question), "\n")
	for _, l := range region {
		for _, re := range p.TrustHint {
			if re.MatchString(l) {
				pk.Kind = PickerTrust
			}
		}
	}
	allow, deny := false, false
	for _, o := range pk.Options {
		switch o.Kind {
		case driver.OptionAllowOnce, driver.OptionAllowAlways:
			allow = true
		case driver.OptionRejectOnce, driver.OptionRejectAlways:
			deny = true
		}
	}
	if !allow || !deny {
		pk.Kind = PickerQuestion
	}
	pk.ToolKind = toolKind(all, pk.Kind)
	if m := pathRe().FindStringSubmatch(all); m != nil {
		pk.Path = m[1]
	}
}

var (
	rejectRe = lazyre.New(`(?i)^(no\b|deny|reject|don'?t|do not|cancel|abort|decline|exit|quit|skip|back\b)|\(esc\)`)
	alwaysRe = lazyre.New(`(?i)(always|don'?t ask again|for (this|the) session|all (edits|commands|tools)|remember|parent folder)`)
	allowRe  = lazyre.New(`(?i)^(yes|allow|approve|proceed|accept|trust|run|ok\b|continue|apply|execute)`)
	pathRe   = lazyre.New(`(?:[Ww]rit(?:e|ing) to|[Ee]dit(?:ing)?|[Cc]reat(?:e|ing)|[Rr]ead(?:ing)?|[Pp]atch(?:ing)?|file)\s+([\w./~-]+\.\w+)`)
)

// classify maps an option label to a permission option kind.
func classify(label string) string {
	l := strings.TrimSpace(label)
	switch {
	case rejectRe().MatchString(l):
		if alwaysRe().MatchString(l) {
			return driver.OptionRejectAlways
		}
		return driver.OptionRejectOnce
	case allowRe().MatchString(l) && alwaysRe().MatchString(l):
		return driver.OptionAllowAlways
	case allowRe().MatchString(l):
		return driver.OptionAllowOnce
	}
	return ""
}

var (
	editRe  = lazyre.New(`(?i)(apply this change|write|edit|patch|creat|modif|replace|save)`)
	execRe  = lazyre.New(`(?i)(shell|command|execut|bash|run\b|allow execution)`)
	readRe  = lazyre.New(`(?i)(read|view|open)`)
	fetchRe = lazyre.New(`(?i)(fetch|url|http|web)`)
)

func toolKind(text string, kind PickerKind) driver.ToolKind {
	switch {
	case kind == PickerTrust:
		return driver.KindOther
	case execRe().MatchString(text):
		return driver.KindExecute
	case editRe().MatchString(text):
		return driver.KindEdit
	case fetchRe().MatchString(text):
		return driver.KindFetch
	case readRe().MatchString(text):
		return driver.KindRead
	}
	return driver.KindOther
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return string(rune('0'+n/10)) + string(rune('0'+n%10))
}
