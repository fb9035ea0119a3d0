package profile

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/tai-dev/tai/internal/lazyre"
)

// Turn is what the screen showed around one prompt, whole screens (not
// Body: a release the profile was not tuned to may not be cut right), for
// FallbackReply.
type Turn struct {
	Idle     []string // the idle screen before the prompt was pasted
	Submit   []string // the screen at the submitting CR (the prompt in the composer)
	Scrolled []string // the transcript rows that scrolled off the top after the CR
	End      []string // the idle screen the turn ended on
	Prompt   string
	// Notices: rows the agent prints by itself (Profile.Notices), dropped
	// wherever they land.
	Notices []*regexp.Regexp
}

// Implausible says whether a reply the profile extracted is no reply: empty,
// or only the echoed prompt.
func Implausible(reply, prompt string) bool {
	r := strings.Join(strings.Fields(reply), " ")
	return r == "" || r == strings.Join(strings.Fields(prompt), " ")
}

// fallbackGap is the run of spaces that separates side-by-side panes (a
// sidebar, a right-aligned footer field) in the fallback.
const fallbackGap = 16

// footerRows is how many of the last non-blank rows of the screens before
// the turn count as the live area (composer, footer, status): a row of the
// end screen that differs from one of them only in its digits (a timer, a
// context percentage, a token count) is chrome.
const footerRows = 8

// paneIndent: a row indented this far belongs to a pane to the right.
const paneIndent = 60

var (
	fbRule    = lazyre.New(`^[─━═╌┄▀▄_=\-]{4,}$`)
	fbSpinner = lazyre.New(`^[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏⣾⣽⣻⢿⡿⣟⣯⣷✻✽✶✳✢◐◓◑◒■⬝]`)
	// Status and tool rows of any of the TUIs: working indicators, key
	// hints, tool cells' headers and their results.
	fbChrome = lazyre.New(`(?i)(esc to (cancel|interrupt)|esc\s+interrupt|ctrl\+[a-z]|shift\+tab|\? for shortcuts|context left|tokens? used|\(\d+(\.\d+)?m?s\b)`)
	// Tool rows: a status glyph, "Name(args)", a diff stat ("+1 -0"), or
	// a row that ends in a clock time (a status line's timestamp).
	fbTool = lazyre.New(`^(?:[✓✔✗✘⊷⎿←→△⚠]|[^\p{L}\p{N}\s]\s*\p{Lu}\w*\(.*\)\s*$)|\s\+\d+(?:\s+-\d+)?$|\b\d{1,2}:\d{2}(?:\s*[AP]M)?$`)
	// A tool's result hangs under its header from one of these.
	fbResult = "└⎿"
	fbBox    = "│┃|╭╮╰╯┌┐└┘├┤╹╻▣"
)

// FallbackReply is the reply of a turn read without the profile's layout:
// the transcript rows of the end screen (and those that scrolled off)
// that were not on screen before the prompt, without the echoed prompt,
// the rows of the live area that both screens have (composer, footer,
// status, told apart by their digits only), spinners, boxes (tool cells,
// pickers, input boxes), rules and tool rows. A leading marker glyph
// ("✦ ", "● ") is stripped; the blank rows where a tool row was dropped
// are too, so text blocks around a tool call join as the profiles join
// them.
func FallbackReply(t Turn) string {
	idle, submit := cutPanes(t.Idle), cutPanes(t.Submit)
	seen := counts(idle)
	for k, n := range counts(submit) {
		seen[k] = max(seen[k], n)
	}
	echo := strings.Join(strings.Fields(t.Prompt), " ")
	end := cutPanes(t.End)
	end = end[:liveTop(end, idle, submit)]
	rows := append(append([]string(nil), cutPanes(t.Scrolled)...), end...)
	// The reply follows the echoed prompt: what shows above it (a notice
	// drawn late) is not the turn's. No echo, no turn to read: the screen
	// is not the transcript (a restart, a dialog).
	echoed := false
	for i := len(rows) - 1; i >= 0 && !echoed; i-- {
		if echoStart(strings.TrimSpace(rows[i]), echo) {
			rows, echoed = rows[i+1:], true
		}
	}
	if !echoed {
		return ""
	}
	var out []string
	broken := true // after a dropped row: blank rows are no paragraph break
	cell := -1     // the indent of the tool row whose deeper rows are its output; -1 none
	drop := func() {
		for len(out) > 0 && out[len(out)-1] == "" {
			out = out[:len(out)-1]
		}
		broken = true
	}
	for i, l := range rows {
		k := strings.TrimSpace(l)
		if k == "" {
			if !broken && out[len(out)-1] != "" {
				out = append(out, "")
			}
			continue
		}
		indent := len(l) - len(strings.TrimLeft(l, " "))
		if indent >= paneIndent {
			continue // a row of a pane to the right (a sidebar, a right-aligned hint)
		}
		if cell >= 0 && indent > cell {
			continue // the output of the tool row above
		}
		cell = -1
		if seen[k] > 0 {
			seen[k]--
			drop()
			continue
		}
		text, marked := stripMarker(k)
		switch {
		case fbTool().MatchString(k), resultBelow(rows, i):
			cell = indent
			drop()
			continue
		case strings.ContainsRune(fbBox, firstRune(k)), fbRule().MatchString(k), fbSpinner().MatchString(k),
			fbChrome().MatchString(k), isEcho(k, echo), matchAny(t.Notices, l):
			drop()
			continue
		}
		if !marked {
			text = k
		}
		out = append(out, text)
		broken = false
	}
	return strings.TrimSpace(strings.Join(out, "\n"))
}

// resultBelow says whether rows[i] heads a tool's result: the next row
// that is not blank starts with a result connector ("└ (no output)",
// "⎿  Wrote 1 line").
func resultBelow(rows []string, i int) bool {
	for _, l := range rows[i+1:] {
		if t := strings.TrimSpace(l); t != "" {
			return strings.ContainsRune(fbResult, firstRune(t))
		}
	}
	return false
}

// liveTop is where the end screen's live area starts (composer, footer,
// status): the end screen's last rows that the screens before the turn
// have at the same place from the bottom (give or take a row), letters
// compared (a timer, a percentage, a dirty mark may change). Rows that
// changed in between (a status line's words) count while the next rows
// match again; two changed rows in a row are the transcript.
func liveTop(end, idle, submit []string) int {
	nb := func(lines []string) (idx []int) {
		for i, l := range lines {
			if strings.TrimSpace(l) != "" {
				idx = append(idx, i)
			}
		}
		return idx
	}
	e, before := nb(end), [][]string{idle, submit}
	top, miss := len(trimBlankRows(end)), 0
	// Below the first match (the composer, from the bottom) up to
	// footerRows rows may have changed (a footer drawn after the idle
	// screen); above it two changed rows in a row are the transcript.
	for o, hits := 0, 0; o < len(e) && (miss < 2 || hits == 0 && miss < footerRows); o++ {
		row := letters(end[e[len(e)-1-o]])
		if row == "" {
			continue // a rule or a box edge tells nothing
		}
		hit := false
		for _, b := range before {
			bi := nb(b)
			for d := -1; d <= 1 && !hit; d++ {
				if k := len(bi) - 1 - o - d; k >= 0 && k < len(bi) && letters(b[bi[k]]) == row {
					hit = true
				}
			}
		}
		if hit {
			top, miss, hits = e[len(e)-1-o], 0, hits+1
		} else {
			miss++
		}
	}
	return top
}

// letters is a row's letters, words one space apart.
func letters(s string) string {
	return strings.Join(strings.Fields(strings.Map(func(r rune) rune {
		if unicode.IsLetter(r) {
			return r
		}
		return ' '
	}, s)), " ")
}

func firstRune(s string) rune {
	r, _ := utf8.DecodeRuneInString(s)
	return r
}

func counts(lines []string) map[string]int {
	m := map[string]int{}
	for _, l := range lines {
		m[strings.TrimSpace(l)]++
	}
	return m
}

// cutPanes drops what stands after a fallbackGap run of spaces in each
// row, the indent kept.
func cutPanes(lines []string) []string {
	gap := strings.Repeat(" ", fallbackGap)
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

func trimBlankRows(lines []string) []string {
	end := len(lines)
	for end > 0 && strings.TrimSpace(lines[end-1]) == "" {
		end--
	}
	return lines[:end]
}

// minEcho is how many bytes of a row must be a part of the prompt for
// the row to be one of its wrapped rows.
const minEcho = 12

// isEcho says whether a row is the echoed prompt (prompt: its words one
// space apart): the prompt after a marker ("> Say hello.", "❯ Say
// hello.", "┃  Say hello."), or a long enough part of it (a wrapped
// row of a long or multi-line prompt).
func isEcho(row, prompt string) bool {
	r := strings.TrimLeft(row, "> ")
	if body, ok := stripMarker(row); ok {
		r = strings.TrimLeft(body, "> ")
	}
	r = strings.Join(strings.Fields(r), " ")
	return r != "" && (r == prompt || len(r) >= minEcho && strings.Contains(prompt, r))
}

// echoStart says whether a row starts the echoed prompt: the TUI's marker
// ("> ", "❯ ", "┃ "), then the prompt or, wrapped, its beginning. Keys
// that reached a screen no TUI drew (a restart) show unmarked: no echo.
func echoStart(row, prompt string) bool {
	var r string
	if body, ok := strings.CutPrefix(row, ">"); ok {
		r = body
	} else if body, ok := stripMarker(row); ok {
		r = strings.TrimPrefix(body, ">")
	} else {
		return false
	}
	r = strings.Join(strings.Fields(r), " ")
	return r != "" && (r == prompt || len(r) >= minEcho && strings.HasPrefix(prompt, r))
}

// stripMarker cuts a leading glyph that is neither a letter, a digit nor
// ASCII (the TUIs' reply and bullet markers), with a variation selector
// after it, and the spaces after that.
func stripMarker(s string) (string, bool) {
	r, n := utf8.DecodeRuneInString(s)
	if r < utf8.RuneSelf || unicode.IsLetter(r) || unicode.IsDigit(r) {
		return s, false
	}
	rest := s[n:]
	if v, m := utf8.DecodeRuneInString(rest); v == '\uFE0E' || v == '\uFE0F' {
		rest = rest[m:]
	}
	if !strings.HasPrefix(rest, " ") {
		return s, false
	}
	return strings.TrimSpace(rest), true
}
