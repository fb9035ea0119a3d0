// Package tty asks a person at a terminal: a permission request answered
// by one key (y, a, n, d) in raw mode, and lines (a form's fields, a
// fleet task's question) read from the same reader of the terminal. It is
// the terminal channel of an ask race (package ask); policy decides and
// never prompts.
package tty

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
	"golang.org/x/term"

	"github.com/tai-dev/tai/ask"
	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/internal/safetext"
	"github.com/tai-dev/tai/internal/ttyin"
	"github.com/tai-dev/tai/policy"
	"github.com/tai-dev/tai/render"
)

// Prompter asks at a terminal: it shows the tool call (title, kind,
// command, locations, diff) and reads one of allow once / allow always /
// deny once / deny always. One Prompter may serve several engines: it
// shows one question at a time.
//
// On a terminal the question is answered by one key (y, a, n, d), read
// in raw mode while it is asked, and input typed before the question is
// discarded so that it cannot answer it. Anything else (a pipe, fleet's
// shared line stream) answers with a line: the key or its word (yes,
// always, no, never). An answer that is not understood is asked again,
// saying why.
type Prompter struct {
	In  io.Reader // the terminal (/dev/tty), not stdin: stdin may hold the prompt
	Out io.Writer // the terminal
	// Shown, if set, reports whether the tool call's diff is already on
	// the terminal (tai's own output shows it there): it is then not
	// repeated.
	Shown func(toolCallID string) bool
	// Hold, if set, takes the terminal for the question's time: chat's
	// line editor, so that a question asked between turns waits for the
	// line being typed instead of being written over it.
	Hold func(ctx context.Context) (release func(), err error)

	start sync.Once
	turn  chan struct{} // one question on screen at a time; full while one is
	in    *ttyin.Input
}

// input is the terminal's shared input: In itself when it is one (chat's
// editor reads the same), else the prompter's own. Either way one reader
// reads the terminal, so a question abandoned by a cancel does not
// swallow what is typed next.
func (p *Prompter) input() *ttyin.Input {
	p.start.Do(func() {
		p.turn = make(chan struct{}, 1)
		if in, ok := p.In.(*ttyin.Input); ok {
			p.in = in
		} else {
			p.in = ttyin.New(p.In)
		}
	})
	return p.in
}

// take waits for the screen until ctx ends: a question withdrawn while it
// waits (answered in tai top) goes at once, never shown.
func (p *Prompter) take(ctx context.Context) (release func(), err error) {
	p.input()
	select {
	case p.turn <- struct{}{}:
		return func() { <-p.turn }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// rawFd is the terminal's descriptor when the input is one.
func (p *Prompter) rawFd() (int, bool) {
	fd, ok := p.input().Fd()
	if !ok || !term.IsTerminal(int(fd)) {
		return 0, false
	}
	return int(fd), true
}

const choices = "  [y] allow once  [a] allow always  [n] deny once  [d] deny always > "

// Ask shows the request and waits for an answer. A context that ends first
// (the turn was cancelled) abandons the question.
func (p *Prompter) Ask(ctx context.Context, req driver.PermissionRequest) (policy.Answer, error) {
	in := p.input()
	release, err := p.take(ctx)
	if err != nil {
		return policy.DenyOnce, err
	}
	defer release()
	if p.Hold != nil {
		release, err := p.Hold(ctx)
		if err != nil {
			return policy.DenyOnce, err
		}
		defer release()
	}
	p.show(ctx, req)

	// One key on a terminal: raw mode while the question is open.
	var restore func()
	if fd, ok := p.rawFd(); ok {
		if st, err := term.MakeRaw(fd); err == nil {
			restore = func() { _ = term.Restore(fd, st) }
			defer restore()
			discardTypeAhead(fd, in)
		}
	}
	raw := restore != nil
	out := p.Out
	if raw {
		out = crlf{p.Out} // raw mode does not turn \n into \r\n
	}
	fmt.Fprint(out, choices)
	var pending []byte // line input read but not yet answered with
	defer func() { in.Unread(pending) }()
	for {
		b, err := in.Next(ctx)
		if ctxErr := ctx.Err(); ctxErr != nil {
			in.Unread(b)
			fmt.Fprintf(out, "\n  %s\n", ask.Note(ctx)) // another channel answered first, or the turn ended
			return policy.DenyOnce, ctxErr
		}
		if err != nil {
			return policy.DenyOnce, fmt.Errorf("reading the answer: %w", err)
		}
		if raw {
			ans, done, err := p.key(out, b, restore)
			if done {
				return ans, err
			}
			continue
		}
		pending = append(pending, b...)
		for {
			i := strings.IndexByte(string(pending), '\n')
			if i < 0 {
				break
			}
			word := strings.ToLower(strings.TrimSpace(string(pending[:i])))
			pending = pending[i+1:]
			if ans, ok := parseAnswer(word); ok {
				return ans, nil
			}
			if word == "" {
				fmt.Fprintln(out, "  (no answer: type y, a, n or d, then Enter)")
			} else {
				fmt.Fprintf(out, "  %q is not an answer: type y, a, n or d (or yes, always, no, never)\n", word)
			}
			fmt.Fprint(out, choices)
		}
	}
}

// key handles keys typed in raw mode: the first answer key answers;
// Ctrl-C interrupts tai as it would outside raw mode.
func (p *Prompter) key(out io.Writer, keys []byte, restore func()) (policy.Answer, bool, error) {
	for _, k := range keys {
		switch k {
		case '\r', '\n', ' ':
			continue
		case 0x03: // Ctrl-C: raw mode made it a key; make it the signal again
			restore()
			fmt.Fprintln(out, "^C")
			_ = syscall.Kill(os.Getpid(), syscall.SIGINT)
			return policy.DenyOnce, true, fmt.Errorf("reading the answer: %w", context.Canceled)
		case 0x04: // Ctrl-D
			fmt.Fprintln(out)
			return policy.DenyOnce, true, fmt.Errorf("reading the answer: %w", io.EOF)
		}
		if ans, ok := parseAnswer(strings.ToLower(string(rune(k)))); ok {
			fmt.Fprintln(out, ans.Word())
			return ans, true, nil
		}
		shown := fmt.Sprintf("%q", string(rune(k)))
		if k < 0x20 || k == 0x7f {
			shown = fmt.Sprintf("^%c", k^0x40)
		}
		fmt.Fprintf(out, "\n  %s is not an answer: press y, a, n or d\n", shown)
		fmt.Fprint(out, choices)
		return 0, false, nil // the rest of this input was typed before the user saw why
	}
	return 0, false, nil
}

// discardTypeAhead drops what was typed before the question was on the
// screen: a stray key must not answer a question nobody read.
func discardTypeAhead(fd int, in *ttyin.Input) {
	_ = unix.IoctlSetInt(fd, unix.TCFLSH, unix.TCIFLUSH)
	in.Discard()
}

func (p *Prompter) show(ctx context.Context, req driver.PermissionRequest) {
	// Every string shown is the agent's: escaped, so that none can move
	// the cursor, erase or reorder what is on the screen (render.SafeToolCall).
	tc := render.SafeToolCall(req.ToolCall)
	who := ""
	if a := policy.AskerOf(ctx); a != "" {
		who = "[" + safetext.Line(a) + "] "
	}
	verb := "asks to"
	if req.Unrequested {
		verb = "did not ask, but wants tai to" // a file or terminal call made without asking
	}
	title := strings.TrimSpace(orDefault(tc.Title, tc.ID))
	cmd, hasCmd := render.ShownCommand(req.ToolCall)
	if hasCmd && title != cmd && title != "Run `"+cmd+"`" {
		// The title is the agent's word for it; what runs is the command
		// below, shown prominently.
		fmt.Fprintf(p.Out, "\n\x1b[1;33m? %sThe agent %s:\x1b[0m \x1b[2m%s\x1b[0m", who, verb, title)
	} else {
		fmt.Fprintf(p.Out, "\n\x1b[1;33m? %sThe agent %s %s\x1b[0m", who, verb, title)
	}
	if tc.Kind != "" {
		fmt.Fprintf(p.Out, " [%s]", tc.Kind)
	}
	fmt.Fprintln(p.Out)
	switch {
	case hasCmd:
		fmt.Fprintf(p.Out, "    \x1b[1m$ %s\x1b[0m\n", strings.ReplaceAll(cmd, "\n", "\n      "))
	case strings.EqualFold(strings.TrimSpace(string(req.ToolCall.Kind)), string(driver.KindExecute)):
		fmt.Fprintln(p.Out, "    \x1b[1m(command not given by the agent)\x1b[0m")
	}
	for _, l := range tc.Locations {
		fmt.Fprintf(p.Out, "    %s\n", l.Path)
	}
	for _, c := range tc.Content {
		if c.Type != "diff" {
			continue
		}
		if p.Shown != nil && p.Shown(tc.ID) {
			fmt.Fprintf(p.Out, "    (the diff of %s is shown above)\n", c.Path)
			continue
		}
		lines, err := render.UnifiedDiff(c, policy.WorkspaceOf(ctx))
		if err != nil {
			fmt.Fprintf(p.Out, "    %s: %v\n", c.Path, err)
			continue
		}
		if len(lines) > maxPromptDiff {
			lines = append(lines[:maxPromptDiff], fmt.Sprintf("… (%d more lines)", len(lines)-maxPromptDiff))
		}
		for _, l := range lines {
			switch {
			case strings.HasPrefix(l, "+") && !strings.HasPrefix(l, "+++"):
				fmt.Fprintf(p.Out, "    \x1b[32m%s\x1b[0m\n", l)
			case strings.HasPrefix(l, "-") && !strings.HasPrefix(l, "---"):
				fmt.Fprintf(p.Out, "    \x1b[31m%s\x1b[0m\n", l)
			default:
				fmt.Fprintf(p.Out, "    %s\n", l)
			}
		}
	}
}

// maxPromptDiff bounds the diff a question shows.
const maxPromptDiff = 40

func parseAnswer(word string) (policy.Answer, bool) {
	switch word {
	case "y", "yes":
		return policy.AllowOnce, true
	case "a", "always":
		return policy.AllowAlways, true
	case "n", "no":
		return policy.DenyOnce, true
	case "d", "never":
		return policy.DenyAlways, true
	}
	return 0, false
}

// crlf writes \n as \r\n, for a terminal in raw mode.
type crlf struct{ w io.Writer }

func (c crlf) Write(b []byte) (int, error) {
	if _, err := c.w.Write([]byte(strings.ReplaceAll(string(b), "\n", "\r\n"))); err != nil {
		return 0, err
	}
	return len(b), nil
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
