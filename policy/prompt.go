package policy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/tai-dev/tai/driver"
)

// TTYPrompter asks at a terminal: it shows the tool call (title, kind,
// locations, diff) and reads one of allow once / allow always / deny once /
// deny always.
type TTYPrompter struct {
	In  io.Reader // the terminal (/dev/tty), not stdin: stdin may hold the prompt
	Out io.Writer // the terminal
	rd  *bufio.Reader
}

// Ask shows the request and waits for an answer. A context that ends first
// (the turn was cancelled) abandons the question.
func (p *TTYPrompter) Ask(ctx context.Context, req driver.PermissionRequest) (Answer, error) {
	if p.rd == nil {
		p.rd = bufio.NewReader(p.In)
	}
	tc := req.ToolCall
	fmt.Fprintf(p.Out, "\n\x1b[1;33m? The agent asks to %s\x1b[0m", strings.TrimSpace(orDefault(tc.Title, tc.ID)))
	if tc.Kind != "" {
		fmt.Fprintf(p.Out, " [%s]", tc.Kind)
	}
	fmt.Fprintln(p.Out)
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
	type answer struct {
		a   Answer
		err error
	}
	ch := make(chan answer, 1)
	go func() {
		for {
			fmt.Fprint(p.Out, "  [y] allow once  [a] allow always  [n] deny once  [d] deny always > ")
			line, err := p.rd.ReadString('\n')
			if err != nil {
				ch <- answer{DenyOnce, fmt.Errorf("reading the answer: %w", err)}
				return
			}
			switch strings.ToLower(strings.TrimSpace(line)) {
			case "y", "yes":
				ch <- answer{AllowOnce, nil}
				return
			case "a", "always":
				ch <- answer{AllowAlways, nil}
				return
			case "n", "no":
				ch <- answer{DenyOnce, nil}
				return
			case "d", "never":
				ch <- answer{DenyAlways, nil}
				return
			}
		}
	}()
	select {
	case a := <-ch:
		return a.a, a.err
	case <-ctx.Done():
		fmt.Fprintln(p.Out, "\n  (cancelled)")
		return DenyOnce, ctx.Err()
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
