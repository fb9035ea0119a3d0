package policy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/tai-dev/tai/driver"
)

// TTYPrompter asks at a terminal: it shows the tool call (title, kind,
// command, locations, diff) and reads one of allow once / allow always /
// deny once / deny always. One TTYPrompter may serve several engines: it
// shows one question at a time.
type TTYPrompter struct {
	In  io.Reader // the terminal (/dev/tty), not stdin: stdin may hold the prompt
	Out io.Writer // the terminal

	mu    sync.Mutex // one question on screen at a time
	start sync.Once
	lines chan lineOrErr
}

type lineOrErr struct {
	line string
	err  error
}

// readLines reads the terminal for the prompter's whole life, so that a
// question abandoned by a cancel does not swallow the next answer.
func (p *TTYPrompter) readLines() {
	rd := bufio.NewReader(p.In)
	for {
		line, err := rd.ReadString('\n')
		if err != nil && line == "" {
			p.lines <- lineOrErr{err: err}
			close(p.lines)
			return
		}
		p.lines <- lineOrErr{line: line}
	}
}

// Ask shows the request and waits for an answer. A context that ends first
// (the turn was cancelled) abandons the question.
func (p *TTYPrompter) Ask(ctx context.Context, req driver.PermissionRequest) (Answer, error) {
	p.start.Do(func() {
		p.lines = make(chan lineOrErr)
		go p.readLines()
	})
	p.mu.Lock()
	defer p.mu.Unlock()

	tc := req.ToolCall
	verb := "asks to"
	if req.Unrequested {
		verb = "did not ask, but wants tai to" // a file or terminal call made without asking
	}
	fmt.Fprintf(p.Out, "\n\x1b[1;33m? The agent %s %s\x1b[0m", verb, strings.TrimSpace(orDefault(tc.Title, tc.ID)))
	if tc.Kind != "" {
		fmt.Fprintf(p.Out, " [%s]", tc.Kind)
	}
	fmt.Fprintln(p.Out)
	if c := Command(tc); c != "" && !strings.Contains(tc.Title, c) {
		fmt.Fprintf(p.Out, "    $ %s\n", c)
	}
	for _, l := range tc.Locations {
		fmt.Fprintf(p.Out, "    %s\n", l.Path)
	}
	for _, c := range tc.Content {
		if c.Type != "diff" {
			continue
		}
		fmt.Fprintf(p.Out, "    --- %s\n", c.Path)
		if c.OldText != nil {
			for _, l := range firstLines(*c.OldText, 20) {
				fmt.Fprintf(p.Out, "    \x1b[31m-%s\x1b[0m\n", l)
			}
		}
		for _, l := range firstLines(c.NewText, 20) {
			fmt.Fprintf(p.Out, "    \x1b[32m+%s\x1b[0m\n", l)
		}
	}
	for {
		fmt.Fprint(p.Out, "  [y] allow once  [a] allow always  [n] deny once  [d] deny always > ")
		select {
		case l, ok := <-p.lines:
			if !ok || l.err != nil {
				err := io.EOF
				if ok {
					err = l.err
				}
				return DenyOnce, fmt.Errorf("reading the answer: %w", err)
			}
			switch strings.ToLower(strings.TrimSpace(l.line)) {
			case "y", "yes":
				return AllowOnce, nil
			case "a", "always":
				return AllowAlways, nil
			case "n", "no":
				return DenyOnce, nil
			case "d", "never":
				return DenyAlways, nil
			}
		case <-ctx.Done():
			fmt.Fprintln(p.Out, "\n  (cancelled)")
			return DenyOnce, ctx.Err()
		}
	}
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func firstLines(s string, n int) []string {
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	if len(lines) > n {
		lines = append(lines[:n], fmt.Sprintf("… (%d more lines)", len(lines)-n))
	}
	return lines
}
