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
}

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
	// ComposerUnderRule: the composer row sits right under a horizontal
	// rule; an echoed "> prompt" in the transcript does not.
	ComposerUnderRule bool
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

var optionRow = regexp.MustCompile(`^\s*(?:([^\s\w])\s*)?(\d{1,2})[.)]\s+(\S.*?)\s*$`)

// Parse reads one screen (rows, trailing blanks allowed).
func (p *Profile) Parse(lines []string) Verdict {
	region, _ := p.region(lines)
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
	if p.Composer != nil {
		for i := len(region) - 1; i >= 0; i-- {
			m := p.Composer.FindStringSubmatch(region[i])
			if m == nil || (p.ComposerUnderRule && (i == 0 || !rule.MatchString(region[i-1]))) {
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
			return v
		}
	}
	return Verdict{State: Unknown, Composer: ComposerUnknown}
}

func (p *Profile) composer(region []string) Composer {
	if p.Composer == nil {
		return ComposerUnknown
	}
	for i := len(region) - 1; i >= 0; i-- {
		if m := p.Composer.FindStringSubmatch(region[i]); m != nil && (!p.ComposerUnderRule || (i > 0 && rule.MatchString(region[i-1]))) {
			if len(m) > 1 && strings.TrimSpace(m[1]) != "" && (p.Placeholder == nil || !p.Placeholder.MatchString(strings.TrimSpace(m[1]))) {
				return ComposerDraft
			}
			return ComposerEmpty
		}
	}
	return ComposerUnknown
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
	markers := p.Marker
	if markers == "" {
		markers = defaultMarkerChars
	}
	for i := len(region) - 1; i >= 0; i-- {
		m := optionRow.FindStringSubmatch(region[i])
		if m == nil {
			continue
		}
		// Walk up to the start of the run.
		end := i
		start := i
		for start > 0 {
			if optionRow.MatchString(region[start-1]) {
				start--
				continue
			}
			break
		}
		var opts []Option
		selected, marks := -1, 0
		for k := start; k <= end; k++ {
			mm := optionRow.FindStringSubmatch(region[k])
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
	for k := optStart - 1; k >= 0 && k >= optStart-12; k-- {
		l := strings.TrimSpace(region[k])
		if l == "" {
			continue
		}
		if p.ToolLine != nil {
			if m := p.ToolLine.FindStringSubmatch(region[k]); m != nil {
				title = strings.TrimSpace(m[len(m)-1])
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
	if m := pathRe.FindStringSubmatch(all); m != nil {
		pk.Path = m[1]
	}
}

var (
	rejectRe = regexp.MustCompile(`(?i)^(no\b|deny|reject|don'?t|do not|cancel|abort|decline|exit|quit|skip)|\(esc\)`)
	alwaysRe = regexp.MustCompile(`(?i)(always|don'?t ask again|for (this|the) session|all (edits|commands|tools)|remember|parent folder)`)
	allowRe  = regexp.MustCompile(`(?i)^(yes|allow|approve|proceed|accept|trust|run|ok\b|continue|apply|execute)`)
	pathRe   = regexp.MustCompile(`(?:[Ww]rit(?:e|ing) to|[Ee]dit(?:ing)?|[Cc]reat(?:e|ing)|[Rr]ead(?:ing)?|[Pp]atch(?:ing)?|file)\s+([\w./~-]+\.\w+)`)
)

// classify maps an option label to a permission option kind.
func classify(label string) string {
	l := strings.TrimSpace(label)
	switch {
	case rejectRe.MatchString(l):
		if alwaysRe.MatchString(l) {
			return driver.OptionRejectAlways
		}
		return driver.OptionRejectOnce
	case allowRe.MatchString(l) && alwaysRe.MatchString(l):
		return driver.OptionAllowAlways
	case allowRe.MatchString(l):
		return driver.OptionAllowOnce
	}
	return ""
}

var (
	editRe  = regexp.MustCompile(`(?i)(apply this change|write|edit|patch|creat|modif|replace|save)`)
	execRe  = regexp.MustCompile(`(?i)(shell|command|execut|bash|run\b|allow execution)`)
	readRe  = regexp.MustCompile(`(?i)(read|view|open)`)
	fetchRe = regexp.MustCompile(`(?i)(fetch|url|http|web)`)
)

func toolKind(text string, kind PickerKind) driver.ToolKind {
	switch {
	case kind == PickerTrust:
		return driver.KindOther
	case execRe.MatchString(text):
		return driver.KindExecute
	case editRe.MatchString(text):
		return driver.KindEdit
	case fetchRe.MatchString(text):
		return driver.KindFetch
	case readRe.MatchString(text):
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
