package profile

import (
	"fmt"
	"github.com/tai-dev/tai/internal/lazyre"
	"regexp"
	"sort"
	"strings"
	"time"
)

var rx = regexp.MustCompile

// spinner is a braille or star spinner frame at the start of a row.
const spinner = `^\s*[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏⣾⣽⣻⢿⡿⣟⣯⣷✻✽✶✳✢·◐◓◑◒]\s+\S`

var rule = lazyre.New(`^\s*[─━═╌-]{8,}\s*$`)

// gemini-family (gemini-cli and its fork qwen-code, Ink): the composer is
// a row "> hint" between two rules, the spinner row says "esc to cancel",
// a picker carries "Waiting for user confirmation" or a question with
// "● 1. Allow once" / "› 1. Yes, allow once".
func geminiFamily(name, reply string) *Profile {
	return &Profile{
		Name:              name,
		Working:           []*regexp.Regexp{rx(`esc to cancel`), rx(spinner + `.*\(\d+[ms]`)},
		Composer:          rx(`^(?:[│|] )?>\s+(.*?)\s*[│|]?\s*$`),
		ComposerUnderRule: true,
		Placeholder:       rx(`^Type your message`),
		PickerHint:        []*regexp.Regexp{rx(`Waiting for user confirmation`), rx(`Apply this change\?`), rx(`Allow execution`), rx(`Do you want to proceed`), rx(`(?i)trust this folder`)},
		TrustHint:         []*regexp.Regexp{rx(`(?i)do you trust this folder`), rx(`(?i)trust folder`)},
		ToolLine:          rx(`^\s*[│|]?\s*[?⊷]\s+(\S.*?)\s*(?:←)?\s*[│|]?\s*$`),
		Marker:            "›●❯>",
		CancelKeys:        "\x1b",
		ReplyPrefix:       []string{reply},
		EchoPrefix:        "> ",
		Chrome: []*regexp.Regexp{rx(`^\s*Tips`), rx(`^\s*[✓✔?x✗⊷]\s+\w+`), rx(`^\s*[●△]︎?\s`), rx(`^\s*⏸|shift \+ tab`),
			rx(`git:\(`), rx(`no sandbox`), rx(`^\s*[╭╰│]`)},
	}
}

// gemini-cli 0.61 (captured): reply rows start with "✦ "; the composer
// " >   Type your message or @path/to/file" has a space before the ">"
// and sits under the rule with the mode line "Shift+Tab to accept edits"
// and a blank row between; pickers and the trust dialog are boxed
// ("│ ● 1. Allow once │"); the spinner row is "⠋ Thinking... (esc to
// cancel, 0s)". The first start asks "Do you trust the files in this
// folder?" and restarts itself without clearing the screen, so stale
// rows of the dialog stay below the live area. Its first idle composer is
// drawn just before that dialog pops up: ReadyQuiet.
func gemini() *Profile {
	p := geminiFamily("gemini", "✦ ")
	p.Composer = rx(`^\s*(?:[│|] )?>\s+(.*?)\s*[│|]?\s*$`)
	p.ComposerHeader = rx(`^\s*Shift\+Tab to accept edits`)
	p.PickerHint = append(p.PickerHint, rx(`(?i)do you trust the files in this folder`))
	p.TrustHint = append(p.TrustHint, rx(`(?i)do you trust the files in this folder`))
	p.ReadyQuiet = true
	return p
}

// faketui is the gemini family with codex's pause before a picker's keys
// (its "drain" scenario exits on a key that comes too soon) and Copilot's
// settle before a turn ends ("typeout" types its reply out after idle).
func faketui() *Profile {
	p := geminiFamily("faketui", "◆ ")
	p.PickerQuiet = 300 * time.Millisecond
	p.EndSettle = 300 * time.Millisecond
	return p
}

// Builtin returns the profile of a known agent by name.
func Builtin(name string) (*Profile, bool) {
	mk, ok := builtins()[name]
	if !ok {
		return nil, false
	}
	return mk(), true
}

// Names lists the built-in profiles, without building them (their
// regexps would cost every tai process's start-up).
func Names() []string {
	var out []string
	for n := range builtins() {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func builtins() map[string]func() *Profile {
	return map[string]func() *Profile{
		// qwen-code 0.24: fixtures testdata/qwen/0.24.4.
		"qwen": func() *Profile { return geminiFamily("qwen", "◆︎ ") },
		// faketui: driver/pty/internal/faketui, the e2e tests' agent.
		"faketui": faketui,
		// gemini-cli 0.61: fixtures testdata/gemini/0.61.0.
		"gemini":  gemini,
		"claude":  claude,
		"codex":   codex,
		"copilot": copilot,
		// OpenCode (alternate screen): "esc interrupt" while working.
		// OpenCode 1.18 (alternate screen, captured: testdata/opencode/
		// 1.18.33): the input box is "┃" rows closed by the footer
		// "┃  Build · model provider" and "╹▀▀▀"; the home screen's
		// placeholder is "Ask anything…", the session view's box is blank;
		// "■■⬝⬝  esc interrupt" under it while working. The permission
		// picker is "△ Permission required", "→ Edit hello.txt", the diff,
		// and the options side by side (highlight by colour only). Replies
		// are rows indented 5 spaces; a sidebar starts at column 160.
		"opencode": func() *Profile {
			return &Profile{
				Name:          "opencode",
				Bottom:        60, // the home screen's box is mid-screen
				ReadyOnScreen: true,
				Working:       []*regexp.Regexp{rx(`esc\s+interrupt`)},
				ComposerBox:   rx(`^\s*┃\s+(?:Build|Plan)\s+·\s`),
				Placeholder:   rx(`^Ask anything…`),
				PickerHint:    []*regexp.Regexp{rx(`^\s*┃\s+△ Permission required`)},
				InlinePicker:  rx(`^\s*┃\s+(\S.*?)\s{3,}(?:ctrl\+f fullscreen\s+)?⇆ select\s+enter confirm`),
				ToolLine:      rx(`^\s*┃\s+→\s+(\S.*?)\s*$`),
				CancelKeys:    "\x1b\x1b",
				ReplyIndent:   "     ",
				PaneGap:       20,
				Chrome:        []*regexp.Regexp{rx(`^\s*[┃╹▣←→■⬝]`), rx(`(?i)ctrl\+p`), rx(`esc\s+interrupt`)},
			}
		},
		// generic is for --agent-cmd with no known profile: nothing is
		// recognised structurally unless configured, so idle comes from
		// quiescence and a marked numbered list is a picker.
		"generic": func() *Profile { return Generic(GenericConfig{}) },
	}
}

// GenericConfig configures the regex-driven profile (for any TUI).
type GenericConfig struct {
	Working     []string      // rows that mean working
	Composer    string        // the input row; group 1 the draft
	Placeholder string        // a draft that is really the hint of an empty box
	PickerHint  []string      // rows that confirm a picker
	TrustHint   []string      // rows that make a picker a trust dialog
	CancelKeys  string        // default ESC
	Quiet       time.Duration // quiescence window
}

// Generic builds a profile from regexps; it panics on a bad one, so use
// CompileGeneric for user input.
func Generic(c GenericConfig) *Profile {
	p, err := CompileGeneric(c)
	if err != nil {
		panic(err)
	}
	return p
}

// CompileGeneric builds a profile from regexps.
func CompileGeneric(c GenericConfig) (*Profile, error) {
	p := &Profile{Name: "generic", Quiet: c.Quiet, CancelKeys: c.CancelKeys, EchoPrefix: "> "}
	if p.CancelKeys == "" {
		p.CancelKeys = "\x1b"
	}
	comp := func(ss []string) ([]*regexp.Regexp, error) {
		var out []*regexp.Regexp
		for _, s := range ss {
			re, err := regexp.Compile(s)
			if err != nil {
				return nil, fmt.Errorf("profile regexp %q: %w", s, err)
			}
			out = append(out, re)
		}
		return out, nil
	}
	var err error
	if p.Working, err = comp(c.Working); err != nil {
		return nil, err
	}
	if p.PickerHint, err = comp(c.PickerHint); err != nil {
		return nil, err
	}
	if p.TrustHint, err = comp(c.TrustHint); err != nil {
		return nil, err
	}
	for _, s := range []struct {
		src string
		dst **regexp.Regexp
	}{{c.Composer, &p.Composer}, {c.Placeholder, &p.Placeholder}} {
		if s.src == "" {
			continue
		}
		re, err := regexp.Compile(s.src)
		if err != nil {
			return nil, fmt.Errorf("profile regexp %q: %w", s.src, err)
		}
		*s.dst = re
	}
	return p, nil
}

// Body is the transcript part of a screen: the rows above the live area
// (the composer and the rule over it; or a picker's options), trailing
// blank rows dropped. screen.delta frames and replies come from it.
func (p *Profile) Body(lines []string) []string {
	end := len(lines)
	for end > 0 && strings.TrimSpace(lines[end-1]) == "" {
		end--
	}
	region, base := p.region(lines[:end])
	if p.ComposerBox != nil {
		for i := len(region) - 2; i >= 0; i-- {
			if p.ComposerBox.MatchString(region[i]) && boxBottom().MatchString(region[i+1]) {
				cut := base + i
				for cut > 0 && strings.HasPrefix(strings.TrimSpace(lines[cut-1]), "┃") {
					cut--
				}
				return lines[:cut]
			}
		}
		return lines[:end]
	}
	if p.Composer != nil {
		for i := len(region) - 1; i >= 0; i-- {
			if p.Composer.MatchString(region[i]) && p.underRule(region, i) {
				cut := base + i
				for cut > 0 && (strings.TrimSpace(lines[cut-1]) == "" || p.ComposerHeader != nil && p.ComposerHeader.MatchString(lines[cut-1])) {
					cut--
				}
				for cut > 0 && (rule().MatchString(lines[cut-1]) || strings.TrimSpace(lines[cut-1]) == "") {
					cut--
				}
				// Working rows sit just above the box.
				for cut > 0 && p.isWorking(lines[cut-1]) {
					cut--
				}
				return lines[:cut]
			}
		}
	}
	return lines[:end]
}

func (p *Profile) isWorking(l string) bool {
	for _, re := range p.Working {
		if re.MatchString(l) {
			return true
		}
	}
	return false
}

// Reply extracts the agent's text of a turn from the transcript before
// the prompt was sent and after the turn: rows not in the earlier
// transcript, from the first such row on, without the echoed prompt and
// chrome. With ReplyPrefix set only the agent's text blocks are kept
// (a prefixed row and the indented rows under it), markers stripped.
func (p *Profile) Reply(before, after []string, prompt string) string {
	if p.PaneGap > 0 {
		before, after = p.cutPane(before), p.cutPane(after)
	}
	rows := newRows(before, after)
	if rows == nil {
		return ""
	}
	echo := strings.TrimSpace(firstLine(prompt))
	var out []string
	switch {
	case p.ReplyIndent != "":
		out = p.indentedReply(rows)
	case len(p.ReplyPrefix) > 0:
		out = p.markedReply(rows, echo)
	default:
		out = p.plainReply(rows, echo)
	}
	return strings.TrimSpace(strings.Join(out, "\n"))
}

// newRows is after from its first non-blank row that before did not
// already show (nil: nothing new), so that the screen's old text is not
// taken for the reply.
func newRows(before, after []string) []string {
	seen := map[string]int{}
	for _, l := range before {
		seen[strings.TrimSpace(l)]++
	}
	for i, l := range after {
		k := strings.TrimSpace(l)
		if seen[k] > 0 {
			seen[k]--
			continue
		}
		if k != "" {
			return after[i:]
		}
	}
	return nil
}

// indentedReply keeps the rows indented by exactly ReplyIndent, chrome
// excluded; the indent alone sets the reply apart, so the echo is not
// looked for.
func (p *Profile) indentedReply(rows []string) []string {
	var out []string
	for _, l := range rows {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(l, p.ReplyIndent) && !strings.HasPrefix(l, p.ReplyIndent+" ") && t != "" && !p.chrome(l) {
			out = append(out, t)
		}
	}
	return out
}

// markedReply keeps the rows of the blocks that start with a ReplyPrefix
// marker, with their continuation rows.
func (p *Profile) markedReply(rows []string, echo string) []string {
	var out []string
	inReply := false
	for _, l := range rows {
		t := strings.TrimSpace(l)
		if p.isEcho(t, echo) {
			inReply = false
			continue
		}
		out, inReply = p.markedRow(out, l, t, inReply)
	}
	return out
}

// markedRow adds row l (trimmed: t) to out and says whether a reply
// block goes on after it.
func (p *Profile) markedRow(out []string, l, t string, inReply bool) ([]string, bool) {
	// With ContinueIndent set, an indented row under a reply row
	// continues it even if it starts with the marker: codex's
	// list items ("  • item") keep their bullets.
	if inReply && p.ContinueIndent != "" && t != "" && strings.HasPrefix(l, p.ContinueIndent) && !p.chrome(l) {
		return append(out, t), true
	}
	// A chrome row with the reply's marker (codex's "• Ran cmd"
	// tool cells) is no reply either.
	if body, ok := cutAnyPrefix(t, p.ReplyPrefix); ok && !p.chrome(l) {
		return append(out, body), true
	}
	if !inReply {
		return out, false
	}
	// A continuation row is indented text under a reply row.
	if t != "" && strings.HasPrefix(l, p.continueIndent()) && !p.chrome(l) {
		return append(out, t), true
	}
	if t == "" {
		return append(out, ""), true
	}
	// The block ended (a tool row): its trailing blank rows are
	// not part of the text.
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out, false
}

// continueIndent is the indent of a reply's continuation rows.
func (p *Profile) continueIndent() string {
	if p.ContinueIndent == "" {
		return "    "
	}
	return p.ContinueIndent
}

// plainReply keeps every row but the echo, chrome and rules.
func (p *Profile) plainReply(rows []string, echo string) []string {
	var out []string
	for _, l := range rows {
		t := strings.TrimSpace(l)
		if p.isEcho(t, echo) || p.chrome(l) || rule().MatchString(l) {
			continue
		}
		out = append(out, t)
	}
	return out
}

// isEcho says whether row t is the agent's echo of the prompt (its first
// line, as far as a narrow screen shows it).
func (p *Profile) isEcho(t, echo string) bool {
	if p.EchoPrefix == "" || echo == "" {
		return false
	}
	pre := strings.TrimSpace(p.EchoPrefix)
	return strings.HasPrefix(t, pre) && strings.HasPrefix(strings.TrimSpace(strings.TrimPrefix(t, pre)), prefixRunes(echo, 12))
}

// cutPane drops what stands after a PaneGap run of spaces in each row.
func (p *Profile) cutPane(lines []string) []string {
	gap := strings.Repeat(" ", p.PaneGap)
	out := make([]string, len(lines))
	for i, l := range lines {
		t := strings.TrimLeft(l, " ")
		if k := strings.Index(t, gap); k >= 0 {
			t = t[:k]
		}
		out[i] = strings.TrimRight(l[:len(l)-len(strings.TrimLeft(l, " "))]+t, " ")
	}
	return out
}

func (p *Profile) chrome(l string) bool {
	return matchAny(p.Chrome, l) || matchAny(p.Notices, l)
}

func matchAny(res []*regexp.Regexp, l string) bool {
	for _, re := range res {
		if re.MatchString(l) {
			return true
		}
	}
	return false
}

func cutAnyPrefix(s string, prefixes []string) (string, bool) {
	for _, pre := range prefixes {
		if strings.HasPrefix(s, strings.TrimSpace(pre)) {
			return strings.TrimSpace(strings.TrimPrefix(s, strings.TrimSpace(pre))), true
		}
	}
	return "", false
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

func prefixRunes(s string, n int) string {
	r := []rune(s)
	if len(r) > n {
		r = r[:n]
	}
	return string(r)
}
