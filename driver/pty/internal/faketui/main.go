// Command faketui is a scripted TUI for the PTY driver's tests: it draws
// qwen/gemini-style chrome (a header, a transcript, a spinner row saying
// "esc to cancel", an input box between rules and a status row), takes
// input by bracketed paste or keystrokes, and answers prompts by keyword:
//
//	"write"  a permission picker (arrows + Enter), then writes hello.txt
//	"yolo: CMD" runs CMD with sh -c without asking (an agent in its own
//	         permissive mode), then says "Ran it (exit N)."
//	"slow"   works until Esc ("Request cancelled.")
//	"crtwice" ignores the first CR (the driver must retry)
//	"lostkey" with "write": the picker is drawn once, no spinner, and the
//	         first keys it gets are dropped unread (the driver must press
//	         them again)
//	"noisy"  with "lostkey": while the picker waits it writes output that
//	         changes nothing on screen (a cursor shown again in an empty
//	         synchronized frame), as codex does
//	"drain"  with "write": the picker is drawn once, no spinner, and a key
//	         that comes within 200 ms of it makes the app exit, as codex
//	         does when a key comes while it drains its input ("timed out
//	         discarding buffered terminal input")
//	"typeout" goes idle (no spinner), then types its reply out a word
//	         every 80 ms, as Copilot does on a busy machine
//	"long"   replies with 150 numbered rows, 7 per frame: more than a screen
//	"limit"  the first time: ends the turn on its provider's refusal, the
//	         error row "✕ [API Error: 429 Too Many Requests. Please try
//	         again in 1s.]" (later prompts get the default reply)
//	"ratelimit-talk" an answer that talks about a 429 and rate limits
//	else     "Hello from the fake TUI."
//
// FAKETUI_RESTART=1 starts with a trust dialog whose answer restarts the
// app as gemini does: the terminal goes back to canonical mode with the
// idle screen still up, keys typed in the gap are lost, and a new process
// takes over, which drops keys until it turns bracketed paste on.
//
// FAKETUI_DEAF=1 draws its idle screen before its input is up, as
// opencode does on a busy machine: the first keys it gets, and any that
// come in the 300 ms after them, are dropped unread; then it draws a tip
// row (the transcript changes, with no prompt taken). FAKETUI_DEAF=always
// never reads a key.
//
// It runs in real time (it is the agent, not the test), with short frames.
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"golang.org/x/term"
)

type ui struct {
	transcript []string
	draft      string
	working    string // spinner text, "" when idle
	frame      int
	picker     []string
	sel        int
	eatCR      bool
	// still: the picker is not redrawn while it waits; eatKey: it drops
	// the next keys.
	still, eatKey bool
	// drainUntil: a key before it ends the app ("drain").
	drainUntil time.Time
	// typing: words still to add to the last row ("typeout").
	typing []string
	// noisy: a still picker writes invisible frames ("noisy").
	noisy bool
}

var spin = []rune("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏")

func (u *ui) draw() {
	var b strings.Builder
	b.WriteString("\x1b[H\x1b[2J")
	b.WriteString("FakeTUI 1.0 (tai test agent)\r\n\r\n")
	for _, l := range u.transcript {
		b.WriteString(l + "\r\n")
	}
	if u.picker != nil {
		for i, o := range u.picker {
			mark := "  "
			if i == u.sel {
				mark = "› "
			}
			fmt.Fprintf(&b, "   %s%d. %s\r\n", mark, i+1, o)
		}
		b.WriteString("  " + string(spin[u.frame%len(spin)]) + " Waiting for user confirmation...\r\n")
		os.Stdout.WriteString(b.String())
		return
	}
	if u.working != "" {
		fmt.Fprintf(&b, "  %c %s (%ds · esc to cancel)\r\n", spin[u.frame%len(spin)], u.working, u.frame/10)
	}
	rule := strings.Repeat("─", 60)
	b.WriteString(rule + "\r\n")
	if u.draft == "" {
		b.WriteString(">   Type your message or @path/to/file\r\n")
	} else {
		b.WriteString("> " + u.draft + "\r\n")
	}
	b.WriteString(rule + "\r\n")
	b.WriteString("  ➜ fake · ⏸ Ask permissions\r\n")
	os.Stdout.WriteString(b.String())
}

// reply is the marker of the agent's text rows. FAKETUI_MARKER changes it,
// as a release the profile was not tuned to would.
var reply = "  ◆ "

// limitShown: the "limit" refusal was shown; the process's next turns
// get through, as after a reset.
var limitShown bool

func main() {
	if m := os.Getenv("FAKETUI_MARKER"); m != "" {
		reply = "  " + m + " "
	}
	old, err := term.MakeRaw(0)
	if err == nil {
		defer term.Restore(0, old)
	}
	u := &ui{}
	keys := make(chan []byte)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := os.Stdin.Read(buf)
			if err != nil {
				close(keys)
				return
			}
			keys <- append([]byte(nil), buf[:n]...)
		}
	}()
	if os.Getenv("FAKETUI_RESTARTED") != "" {
		// The new process after a restart, raw already but still starting
		// (gemini reads its terminal queries' answers now): keys are
		// dropped until its input is up, bracketed paste on.
		for start := time.After(time.Second); start != nil; {
			select {
			case <-keys:
			case <-start:
				start = nil
			}
		}
	}
	os.Stdout.WriteString("\x1b[?2004h")
	defer os.Stdout.WriteString("\x1b[?2004l")
	tick := time.NewTicker(40 * time.Millisecond)
	defer tick.Stop()
	var job func(ui *ui, key string) // the running prompt, fed keys
	var steps int
	restart := false
	if os.Getenv("FAKETUI_RESTART") != "" && os.Getenv("FAKETUI_RESTARTED") == "" {
		u.transcript = []string{"  Do you trust this folder?"}
		u.picker, u.sel = []string{"Trust folder", "Don't trust"}, 0
		job = func(u *ui, key string) {
			switch key {
			case "up", "down":
				u.sel = 1 - u.sel
			case "enter":
				u.picker, u.transcript, restart = nil, nil, true
			}
		}
	}
	u.draw()
	if os.Getenv("FAKETUI_DEAF") != "" {
		if _, ok := <-keys; !ok {
			return
		}
		for up := time.After(300 * time.Millisecond); up != nil; {
			select {
			case <-keys:
			case <-up:
				up = nil
			}
		}
		u.transcript = append(u.transcript, "  Tip: type your question below.")
		u.draw()
		for os.Getenv("FAKETUI_DEAF") == "always" {
			if _, ok := <-keys; !ok {
				return
			}
		}
	}
	pasting := false
	for {
		select {
		case k, ok := <-keys:
			if !ok {
				return
			}
			if u.picker != nil && time.Now().Before(u.drainUntil) {
				fmt.Fprintln(os.Stderr, "Error: timed out discarding buffered terminal input")
				os.Exit(1)
			}
			if u.picker != nil && u.eatKey {
				u.eatKey = false
				continue
			}
			s := string(k)
			for len(s) > 0 {
				switch {
				case strings.HasPrefix(s, "\x1b[200~"):
					pasting, s = true, s[6:]
				case strings.HasPrefix(s, "\x1b[201~"):
					pasting, s = false, s[6:]
				case strings.HasPrefix(s, "\x1b[A"), strings.HasPrefix(s, "\x1bOA"):
					if job != nil {
						job(u, "up")
					}
					s = s[3:]
				case strings.HasPrefix(s, "\x1b[B"), strings.HasPrefix(s, "\x1bOB"):
					if job != nil {
						job(u, "down")
					}
					s = s[3:]
				case s[0] == 0x1b:
					if job != nil {
						job(u, "esc")
					}
					s = s[1:]
				case s[0] == 3: // ctrl-c
					return
				case s[0] == '\r' && !pasting:
					s = s[1:]
					if job != nil {
						job(u, "enter")
						break
					}
					if u.draft == "" {
						break
					}
					if strings.Contains(u.draft, "crtwice") && !u.eatCR {
						u.eatCR = true
						break
					}
					job, steps = start(u), 0
				default:
					r := []rune(s)[0]
					if job == nil {
						u.draft += string(r)
					}
					s = s[len(string(r)):]
				}
			}
			if restart {
				relaunch(u, old, keys)
			}
			u.draw()
		case <-tick.C:
			if job != nil {
				u.frame++
				steps++
				shown := u.picker != nil
				job(u, fmt.Sprintf("tick%d", steps))
				if u.working == "" && u.picker == nil && len(u.typing) == 0 {
					job = nil
				}
				if !u.still || !shown || u.picker == nil {
					u.draw()
				} else if u.noisy {
					os.Stdout.WriteString("\x1b[?2026h\x1b[?25h\x1b[?2026l")
				}
			}
		}
	}
}

// relaunch is gemini's restart after its trust dialog: the old process
// gives the terminal back (canonical mode, no bracketed paste) before its
// idle screen is drawn, so that whoever sees that screen also sees the
// mode; a line typed in the gap is lost (or the gap ends by itself); then
// a new process takes over.
func relaunch(u *ui, old *term.State, keys <-chan []byte) {
	if old != nil {
		_ = term.Restore(0, old)
	}
	os.Stdout.WriteString("\x1b[?2004l")
	u.draw()
	select {
	case <-keys:
	case <-time.After(time.Second):
	}
	exe, err := os.Executable()
	if err == nil {
		err = syscall.Exec(exe, os.Args, append(os.Environ(), "FAKETUI_RESTARTED=1"))
	}
	fmt.Fprintln(os.Stderr, "faketui: relaunch:", err)
	os.Exit(1)
}

// start begins a turn for the draft and returns its state machine.
func start(u *ui) func(*ui, string) {
	prompt := u.draft
	u.draft = ""
	u.transcript = append(u.transcript, "  > "+prompt)
	u.working, u.frame = "Thinking...", 0
	switch {
	case strings.HasPrefix(prompt, "yolo: "):
		return func(u *ui, key string) {
			if key == "tick3" {
				err := exec.Command("/bin/sh", "-c", strings.TrimPrefix(prompt, "yolo: ")).Run()
				code := 0
				var ee *exec.ExitError
				if errors.As(err, &ee) {
					code = ee.ExitCode()
				}
				u.working = ""
				u.transcript = append(u.transcript, fmt.Sprintf("  ◆ Ran it (exit %d).", code))
			}
		}
	case strings.Contains(prompt, "write"):
		return func(u *ui, key string) {
			switch {
			case key == "tick5" && u.picker == nil:
				u.working = ""
				u.transcript = append(u.transcript, reply+"I'll create hello.txt.", "  ? WriteFile Writing to hello.txt ←", "   Apply this change?")
				u.picker, u.sel = []string{"Yes, allow once", "Yes, allow always", "No, suggest changes (esc)"}, 0
				u.still = strings.Contains(prompt, "lostkey") || strings.Contains(prompt, "drain")
				u.eatKey = strings.Contains(prompt, "lostkey")
				u.noisy = strings.Contains(prompt, "noisy")
				if strings.Contains(prompt, "drain") {
					u.drainUntil = time.Now().Add(200 * time.Millisecond)
				}
			case u.picker != nil && key == "up" && u.sel > 0:
				u.sel--
			case u.picker != nil && key == "down" && u.sel < len(u.picker)-1:
				u.sel++
			case u.picker != nil && (key == "enter" || key == "esc"):
				choice := u.sel
				if key == "esc" {
					choice = 2
				}
				u.picker = nil
				u.transcript = u.transcript[:len(u.transcript)-2]
				if choice < 2 {
					_ = os.WriteFile("hello.txt", []byte("hello\n"), 0o644)
					u.transcript = append(u.transcript, "  ✓ WriteFile Writing to hello.txt", reply+"Created hello.txt.")
				} else {
					u.transcript = append(u.transcript, "  - WriteFile Writing to hello.txt", reply+"The write was declined.")
				}
			}
		}
	case strings.Contains(prompt, "long"):
		n := 0
		return func(u *ui, key string) {
			if !strings.HasPrefix(key, "tick") {
				return
			}
			for i := 0; i < 7 && n < 150; i++ {
				n++
				u.transcript = append(u.transcript, reply+fmt.Sprintf("row %d of the long reply", n))
			}
			if n == 150 {
				u.working = ""
			}
		}
	case strings.Contains(prompt, "typeout"):
		return func(u *ui, key string) {
			switch {
			case key == "tick8":
				u.working = ""
				u.transcript = append(u.transcript, reply+"Hello")
				u.typing = []string{" from", " the", " fake", " TUI."}
			case strings.HasPrefix(key, "tick") && len(u.typing) > 0 && u.frame%2 == 0:
				u.transcript[len(u.transcript)-1] += u.typing[0]
				u.typing = u.typing[1:]
			}
		}
	case strings.Contains(prompt, "ratelimit-talk"):
		return func(u *ui, key string) {
			if key == "tick8" {
				u.working = ""
				u.transcript = append(u.transcript, reply+"A 429 Too Many Requests means you hit the rate limit; try again in 2s.")
			}
		}
	case strings.Contains(prompt, "limit") && !limitShown:
		limitShown = true
		return func(u *ui, key string) {
			if key == "tick8" {
				u.working = ""
				u.transcript = append(u.transcript, "  ✕ [API Error: 429 Too Many Requests. Please try again in 1s.]")
			}
		}
	case strings.Contains(prompt, "slow"):
		return func(u *ui, key string) {
			if key == "esc" {
				u.working = ""
				u.transcript = append(u.transcript, reply+"Request cancelled.")
			}
		}
	default:
		return func(u *ui, key string) {
			if key == "tick8" {
				u.working = ""
				u.transcript = append(u.transcript, reply+"Hello from the fake TUI.", "    It spans two lines.")
			}
		}
	}
}
