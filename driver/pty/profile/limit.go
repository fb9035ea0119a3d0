package profile

import (
	"strings"
	"time"

	"github.com/tai-dev/tai/internal/lazyre"
	"github.com/tai-dev/tai/quota"
)

// genericLimit is the start of a row that is a TUI's own rendering of a
// refused request, for a profile without LimitRows (an agent tai has no
// profile of, or a release whose rows moved): an error marker ("API
// Error:", "Error:", "✕", "■"), or one of the usage-limit sentences the
// CLIs print ("You've hit your usage limit", "Claude usage limit
// reached"). An answer that merely mentions a rate limit starts otherwise.
var genericLimit = lazyre.New(`(?i)^[^\p{L}\p{N}\s]{0,2}\s*(?:\[?api error\b|error:|✕|✗|■|you(?:'|’)ve (?:hit|reached) your\b|you(?:'|’)re out of (?:extra )?usage\b|\w+ usage limit reached\b|usage limit reached\b|quota exceeded\b|resource_exhausted\b)`)

// Limit reads the usage or rate limit a turn ended on from its new
// transcript rows (the rows after the prompt, as Reply gets them): the
// last block of the turn (its last rows up to a blank one, chrome aside)
// must start with the TUI's own rendering of a refused request (one of
// LimitRows, or genericLimit for a profile without them) and read as a
// limit (quota.FromText, which also reads the reset time the TUI names,
// resolved against now). Fail closed: the agent's answer that talks about
// rate limits, or a limit error followed by more of the turn (the TUI
// retried and went on), is no limit.
func (p *Profile) Limit(before, after []string, now time.Time) (quota.Limit, bool) {
	if p.PaneGap > 0 {
		before, after = p.cutPane(before), p.cutPane(after)
	}
	rows := newRows(before, after)
	end := len(rows)
	for end > 0 && (strings.TrimSpace(rows[end-1]) == "" || p.chrome(rows[end-1]) && !p.limitRow(rows[end-1])) {
		end--
	}
	if end == 0 {
		return quota.Limit{}, false
	}
	// Up from the last row to the limit's first row, within the block.
	start := end - 1
	for start > 0 && strings.TrimSpace(rows[start-1]) != "" && !p.limitRow(rows[start]) {
		start--
	}
	if !p.limitRow(rows[start]) {
		return quota.Limit{}, false
	}
	// A rendering may span blocks: claude's "⎿ You've hit your 5-hour
	// limit · resets 12:04pm", a blank row, "● Usage limit reached · …".
	for {
		k := start - 1
		for k >= 0 && strings.TrimSpace(rows[k]) == "" {
			k--
		}
		if k < 0 || !p.limitRow(rows[k]) {
			break
		}
		start = k
	}
	var text []string
	for _, l := range rows[start:end] {
		if l = strings.TrimSpace(unbox(l)); l != "" {
			text = append(text, l)
		}
	}
	l, ok := quota.FromText(strings.Join(text, " "), now)
	if !ok {
		return quota.Limit{}, false
	}
	l.Source = "screen"
	return l, true
}

// limitRow says whether row is the first row of the TUI's rendering of a
// refused request.
func (p *Profile) limitRow(row string) bool {
	if len(p.LimitRows) > 0 {
		return matchAny(p.LimitRows, row)
	}
	return genericLimit().MatchString(unbox(row))
}

// FallbackLimit is Limit for a turn the profile could not read (see
// FallbackReply): the fallback reply's last paragraph, read with the
// generic row shapes.
func FallbackLimit(reply string, now time.Time) (quota.Limit, bool) {
	var generic Profile
	return generic.Limit(nil, strings.Split(reply, "\n"), now)
}

// AutoResumes says whether the screen shows the TUI's offer to resume by
// itself at the reset (AutoResume).
func (p *Profile) AutoResumes(lines []string) bool {
	if p.AutoResume == nil {
		return false
	}
	for _, l := range lines {
		if p.AutoResume.MatchString(l) {
			return true
		}
	}
	return false
}
