package profile

import (
	"strings"
	"testing"
)

func rows(s string) []string { return strings.Split(strings.TrimPrefix(s, "\n"), "\n") }

// The fallback on layouts no profile knows: a marker it has never seen,
// a footer whose status changed, a tool cell with its output, paragraphs,
// a wrapped long prompt, and a screen that is no transcript.
func TestFallbackReply(t *testing.T) {
	idle := rows(`
  Banner of some TUI v9
  Tips: ask anything.

  ── ── ── ── ── ── ── ── ── ──
  >>  Type here
  ── ── ── ── ── ── ── ── ── ──
  ctx 100% left · model x`)
	submit := rows(`
  Banner of some TUI v9
  Tips: ask anything.

  ── ── ── ── ── ── ── ── ── ──
  >>  Say hello.
  ── ── ── ── ── ── ── ── ── ──
  ctx 100% left · model x`)
	for _, tc := range []struct {
		name   string
		end    string
		prompt string
		want   string
	}{
		{"text", `
  Banner of some TUI v9
  Tips: ask anything.
  ⟡ Say hello.

  ✺ Hello there.

  ──────────────────────────────
  >>  Type here
  ──────────────────────────────
  ctx 97% left · model x`, "Say hello.", "Hello there."},
		{"paragraphs and a tool cell", `
  Banner of some TUI v9
  Tips: ask anything.
  > Say hello.
  ✺ First paragraph.

    Second paragraph.
  ✓ WriteFile hello.txt
      1 hello
      2 world
  ✺ Done.
  ⠋ Working (3s)
  >>  Type here
  ctx 96% left · model x`, "Say hello.", "First paragraph.\n\nSecond paragraph.\nDone."},
		{"changed status line under the composer", `
  > Say hello.
  Hello.
  >>  Type here
  ctx 12% left · model x · 2 warnings
  press f2 for details`, "Say hello.", "Hello."},
		{"wrapped long prompt", `
  > Please write a long answer about the
    following subject in detail
  ● Sure: the answer.
  >>  Type here
  ctx 96% left · model x`, "Please write a long answer about the following subject in detail", "Sure: the answer."},
		{"keys on a screen no TUI drew: no echo", `
  Banner of some TUI v9
  Say hello.
  Settings applied, restarted.
  Banner of some TUI v9
  Tips: ask anything.
  >>  Type here
  ctx 100% left · model x`, "Say hello.", ""},
		{"no echo: not a transcript", `
  Banner of some TUI v9
  Restarting to apply settings...
  >>  Type here
  ctx 100% left · model x`, "Say hello.", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := FallbackReply(Turn{Idle: idle, Submit: submit, End: rows(tc.end), Prompt: tc.prompt})
			if got != tc.want {
				t.Errorf("FallbackReply = %q, want %q", got, tc.want)
			}
		})
	}
}

// A notice the agent prints by itself, drawn late under the echoed
// prompt (Copilot 1.0.102 on a loaded machine), is the profile's Notices:
// the fallback drops it too.
func TestFallbackDropsNotices(t *testing.T) {
	p, _ := Builtin("copilot")
	idle := rows(`
 ● No copilot-instructions.md found. Run /init to generate.

 /repo [⎇ main]
──────────────────────────────
❯
──────────────────────────────
 ← open sidebar · Interactive · Manual Approval`)
	submit := append(append([]string(nil), idle[:4]...), "❯ Say hello.", idle[5], idle[6])
	end := rows(`
 ● No copilot-instructions.md found. Run /init to generate.

 ❯ Say hello.                                   12:00

 ● MCP Servers reloaded: 0 servers connected

 ● Hello from the scripted model.

 /repo [⎇ main]
──────────────────────────────
❯
──────────────────────────────
 ← open sidebar · Interactive · Manual Approval`)
	got := FallbackReply(Turn{Idle: idle, Submit: submit, End: end, Prompt: "Say hello.", Notices: p.Notices})
	if want := "Hello from the scripted model."; got != want {
		t.Errorf("FallbackReply = %q, want %q", got, want)
	}
}

func TestImplausible(t *testing.T) {
	for _, tc := range []struct {
		reply, prompt string
		want          bool
	}{
		{"", "Say hello.", true},
		{"  Say   hello. ", "Say hello.", true},
		{"Hello.", "Say hello.", false},
	} {
		if got := Implausible(tc.reply, tc.prompt); got != tc.want {
			t.Errorf("Implausible(%q, %q) = %v, want %v", tc.reply, tc.prompt, got, tc.want)
		}
	}
}
