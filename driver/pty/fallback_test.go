package pty

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/tai-dev/tai/driver/pty/profile"
	"github.com/tai-dev/tai/driver/pty/term"
)

// turnOf replays a recording the way the session sees the turn: the whole
// screen when the prompt is pasted (the "paste" marker; in recordings
// without it, before the last keystrokes ahead of the CR), at the
// submitting CR ("submit"), the rows that scroll off after it, and the
// screen the turn ends on ("turn-end"; "end" in capture.sh recordings);
// the prompt is the pasted text.
func turnOf(t *testing.T, p *profile.Profile, chunks []Chunk) profile.Turn {
	t.Helper()
	scr := term.NewScreen(term.DefaultCols, term.DefaultRows, nil)
	tr := profile.Turn{Notices: p.Notices}
	var sb scrollback
	submitted, scrollAt := false, 0
	var lastIdle []string
	for _, c := range chunks {
		switch {
		case c.Kind == "m" && (string(c.Data) == "end" || string(c.Data) == "turn-end"):
			tr.End = scr.Snapshot().Lines
			tr.Scrolled = sb.since(scrollAt)
			return tr
		case c.Kind == "m" && string(c.Data) == "paste":
			tr.Idle = scr.Snapshot().Lines
		case c.Kind == "m" && string(c.Data) == "submit":
			tr.Submit, submitted, scrollAt = scr.Snapshot().Lines, true, sb.total()
			if tr.Idle == nil {
				tr.Idle = lastIdle
			}
		case c.Kind == "i" && !submitted && string(c.Data) != "\r":
			lastIdle = scr.Snapshot().Lines
			if s := string(c.Data); strings.HasPrefix(s, "\x1b[200~") || len(s) > 3 {
				tr.Prompt = strings.TrimSuffix(strings.TrimPrefix(s, "\x1b[200~"), "\x1b[201~")
			}
		case c.Kind == "o":
			_, _ = scr.Write(c.Data)
			snap, scrolled := scr.Take()
			sb.take(scrolled)
			sb.observe(p.Body(snap.Lines), len(scrolled.Rows) > 0)
		}
	}
	if !submitted {
		t.Fatal("the recording has no submit marker")
	}
	sb.settle()
	tr.End, tr.Scrolled = scr.Snapshot().Lines, sb.since(scrollAt)
	return tr
}

// On every recorded session, current releases and older ones, the
// layout-independent fallback reads the reply the scripted model sent;
// where the profile reads it too, they agree. On qwen 0.15.10 (replies
// marked "✦ ", not 0.24's "◆︎ ") the profile reads nothing: that is the
// case the fallback is for.
func TestFallbackReplyRecordings(t *testing.T) {
	wants := map[string]string{
		"text":        "Hello from the scripted model.",
		"write-allow": "I'll create hello.txt.\nCreated hello.txt.",
		"write-deny":  "I'll create hello.txt.",
	}
	profileFails := map[string]bool{"qwen/0.15.10": true}
	for _, path := range recordings(t) {
		rel, _ := filepath.Rel("testdata", path)
		version := filepath.ToSlash(filepath.Dir(rel))
		want, ok := wants[strings.TrimSuffix(filepath.Base(path), ".rec")]
		if !ok {
			continue
		}
		t.Run(rel, func(t *testing.T) {
			p, chunks := load(t, path)
			tr := turnOf(t, p, chunks)
			byProfile := p.Reply(p.Body(tr.Submit), p.Body(tr.End), tr.Prompt)
			if fails := profile.Implausible(byProfile, tr.Prompt); fails != profileFails[version] {
				t.Errorf("profile reply %q: implausible %v, want %v", byProfile, fails, profileFails[version])
			} else if !fails && byProfile != want {
				t.Errorf("profile reply %q, want %q", byProfile, want)
			}
			if got := profile.FallbackReply(tr); got != want {
				t.Errorf("fallback reply %q, want %q\nend screen:\n%s", got, want, strings.Join(trimBlankTail(tr.End), "\n"))
			}
		})
	}
}
