package elicit

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/term"

	"github.com/tai-dev/tai/ask"
	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/internal/safetext"
	"github.com/tai-dev/tai/render"
)

// Form asks a human at the terminal: each field with its type, choices,
// default and constraints, asked again until the value is valid. A URL is
// shown, and opened only when the user says so.
type Form struct {
	In  io.Reader
	Out io.Writer
	// Open opens a URL (nil: $BROWSER or xdg-open).
	Open func(url string) error
	// Lines, if set, reads the lines instead of In: the terminal's
	// permission prompter (tty.Prompter), which owns its input, so
	// that the two never compete for what is typed.
	Lines LineReader

	mu      sync.Mutex // one form at a time on the terminal
	r       *bufio.Reader
	pending chan lineResult // a read still waiting for its line, kept for the next question
}

// LineReader writes prompt once the line can be typed, then reads one
// line, not echoed if secret, until ctx ends. The prompt is its to write:
// a secret's keys typed as soon as the prompt shows must not be echoed.
type LineReader interface {
	ReadLine(ctx context.Context, prompt string, secret bool) (string, error)
}

type lineResult struct {
	s   string
	err error
}

// line writes prompt and reads one line; ctx ends the wait. A terminal
// read cannot be interrupted, so a read abandoned that way is kept and its
// line goes to the next question instead of being lost.
func (f *Form) line(ctx context.Context, prompt string) (string, error) {
	if f.Lines != nil {
		return f.Lines.ReadLine(ctx, prompt, false)
	}
	fmt.Fprint(f.Out, prompt)
	if f.r == nil {
		f.r = bufio.NewReader(f.In)
	}
	if f.pending == nil {
		ch := make(chan lineResult, 1)
		go func() {
			s, err := f.r.ReadString('\n')
			ch <- lineResult{strings.TrimRight(s, "\r\n"), err}
		}()
		f.pending = ch
	}
	return f.wait(ctx)
}

func (f *Form) wait(ctx context.Context) (string, error) {
	select {
	case r := <-f.pending:
		f.pending = nil
		if r.err != nil && r.s == "" {
			return "", r.err
		}
		return r.s, nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// secretLine reads a secret without echoing it when In is a terminal. The
// read is kept like line's when ctx ends first (another channel answered).
// Echo goes off before the prompt is written, so that keys typed the
// moment it shows are not echoed either.
func (f *Form) secretLine(ctx context.Context, prompt string) (string, error) {
	if f.Lines != nil {
		return f.Lines.ReadLine(ctx, prompt, true)
	}
	file, ok := f.In.(*os.File)
	if !ok || !term.IsTerminal(int(file.Fd())) || f.pending != nil || (f.r != nil && f.r.Buffered() > 0) {
		return f.line(ctx, prompt)
	}
	fd := int(file.Fd())
	restore := echoOff(fd)
	fmt.Fprint(f.Out, prompt)
	ch := make(chan lineResult, 1)
	go func() {
		b, err := term.ReadPassword(fd)
		restore()
		fmt.Fprintln(f.Out)
		ch <- lineResult{string(b), err}
	}()
	f.pending = ch
	return f.wait(ctx)
}

// Answer implements Answerer.
func (f *Form) Answer(ctx context.Context, req driver.ElicitationRequest) (driver.ElicitationAnswer, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if req.Mode == driver.ElicitURL {
		return f.url(ctx, req)
	}
	// What is shown is the request made safe for a terminal (every string
	// in it is the agent's); what is checked and answered is the request.
	shown := render.SafeElicitation(req)
	fmt.Fprintf(f.Out, "\n? The agent asks: %s\n", shown.Message)
	fmt.Fprintf(f.Out, "  Fill in the form (%d field(s)); type !decline to refuse or !cancel to dismiss.\n", len(req.Fields))
	content := map[string]any{}
	for i, fl := range req.Fields {
		sf := shown.Fields[i]
		for {
			read := f.line
			if fl.Secret {
				read = f.secretLine
			}
			s, err := read(ctx, fieldPrompt(sf))
			if err != nil {
				return f.gone(ctx, err), nil
			}
			s = strings.TrimSpace(s)
			switch s {
			case "!decline":
				return driver.ElicitationAnswer{Action: driver.ElicitDecline, Reason: "declined at the terminal"}, nil
			case "!cancel":
				return driver.ElicitationAnswer{Action: driver.ElicitCancel, Reason: "dismissed at the terminal"}, nil
			}
			if s == "" {
				if fl.Default != nil {
					v, err := CheckValue(fl, fl.Default)
					if err == nil {
						content[fl.Name] = v
						break
					}
				}
				if !fl.Required {
					break
				}
				fmt.Fprintf(f.Out, "  ! %s is required\n", label(sf))
				continue
			}
			v, err := ParseInput(fl, s)
			if err == nil {
				v, err = CheckValue(fl, v)
			}
			if err != nil {
				fmt.Fprintf(f.Out, "  ! %s\n", safetext.Line(err.Error())) // it may quote the agent's choices
				continue
			}
			content[fl.Name] = v
			break
		}
	}
	s, err := f.line(ctx, "  Send these answers? [Y/n] ")
	if err != nil {
		return f.gone(ctx, err), nil
	}
	if a := strings.ToLower(strings.TrimSpace(s)); a == "n" || a == "no" {
		return driver.ElicitationAnswer{Action: driver.ElicitDecline, Reason: "declined at the terminal"}, nil
	}
	return driver.ElicitationAnswer{Action: driver.ElicitAccept, Content: content, Reason: "answered at the terminal"}, nil
}

// gone is the answer of a form the terminal did not finish: another
// channel answered (the terminal says so) or the read failed.
func (f *Form) gone(ctx context.Context, err error) driver.ElicitationAnswer {
	if _, ok := ask.Elsewhere(ctx); ok {
		fmt.Fprintf(f.Out, "\n  %s\n", ask.Note(ctx))
	}
	return driver.ElicitationAnswer{Action: driver.ElicitCancel, Reason: "the terminal gave no answer: " + err.Error()}
}

func (f *Form) url(ctx context.Context, req driver.ElicitationRequest) (driver.ElicitationAnswer, error) {
	shown := render.SafeElicitation(req)
	fmt.Fprintf(f.Out, "\n? The agent asks you to visit a URL: %s\n  %s\n", shown.Message, shown.URL)
	s, err := f.line(ctx, "  [o]pen it in a browser, [d]one (I opened it myself), [n]o (decline) ? ")
	if err != nil {
		return f.gone(ctx, err), nil
	}
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "o", "open", "y", "yes":
		open := f.Open
		if open == nil {
			open = openURL
		}
		if err := open(req.URL); err != nil {
			fmt.Fprintf(f.Out, "  ! could not open it (%v): open it yourself\n", err)
		}
		return driver.ElicitationAnswer{Action: driver.ElicitAccept, Reason: "opened at the user's word"}, nil
	case "d", "done":
		return driver.ElicitationAnswer{Action: driver.ElicitAccept, Reason: "the user visited it"}, nil
	}
	return driver.ElicitationAnswer{Action: driver.ElicitDecline, Reason: "declined at the terminal"}, nil
}

func openURL(u string) error {
	for _, cmd := range []string{"xdg-open", "open"} {
		if p, err := exec.LookPath(cmd); err == nil {
			return exec.Command(p, u).Start()
		}
	}
	return fmt.Errorf("no xdg-open on this machine")
}

func label(fl driver.ElicitField) string {
	if fl.Title != "" {
		return fl.Title
	}
	return fl.Name
}

// Notes is a field's type and constraints ("one of the choices,
// required, min 1"), as a form shows them next to its label; short words
// them for a narrow screen (tai top).
func Notes(fl driver.ElicitField, short bool) []string {
	typ := fl.Type
	switch {
	case fl.Type == "array" && short:
		typ = "several, comma-separated"
	case fl.Type == "array":
		typ = "several of the choices, comma-separated"
	case len(fl.Enum) > 0 && short:
		typ = "one of"
	case len(fl.Enum) > 0:
		typ = "one of the choices"
	case fl.Type == "boolean":
		typ = "yes/no"
	case fl.Format != "":
		typ += ", " + fl.Format
	}
	notes := []string{typ}
	if fl.Required {
		notes = append(notes, "required")
	}
	if fl.Secret {
		notes = append(notes, "secret")
	}
	if fl.Minimum != nil {
		notes = append(notes, fmt.Sprintf("min %v", *fl.Minimum))
	}
	if fl.Maximum != nil {
		notes = append(notes, fmt.Sprintf("max %v", *fl.Maximum))
	}
	if fl.MinLength != nil {
		notes = append(notes, fmt.Sprintf("min length %d", *fl.MinLength))
	}
	if fl.MaxLength != nil {
		notes = append(notes, fmt.Sprintf("max length %d", *fl.MaxLength))
	}
	return notes
}

// fieldPrompt shows a field: its name, type, constraints, choices and
// default.
func fieldPrompt(fl driver.ElicitField) string {
	var b strings.Builder
	fmt.Fprintf(&b, "  %s", label(fl))
	notes := Notes(fl, false)
	fmt.Fprintf(&b, " (%s)", strings.Join(notes, ", "))
	if fl.Description != "" {
		fmt.Fprintf(&b, " — %s", fl.Description)
	}
	b.WriteString("\n")
	for i, e := range fl.Enum {
		name := e
		if i < len(fl.EnumNames) && fl.EnumNames[i] != "" && fl.EnumNames[i] != e {
			name = fl.EnumNames[i] + " (" + e + ")"
		}
		fmt.Fprintf(&b, "    %d) %s\n", i+1, name)
	}
	b.WriteString("  > ")
	if fl.Default != nil {
		fmt.Fprintf(&b, "[%v] ", fl.Default)
	}
	return b.String()
}

// ParseInput reads what was typed as the field's type: a choice by number
// or value, yes/no, a number, a comma-separated list.
func ParseInput(fl driver.ElicitField, s string) (any, error) {
	choice := func(s string) string {
		if n, err := strconv.Atoi(s); err == nil && n >= 1 && n <= len(fl.Enum) {
			return fl.Enum[n-1]
		}
		return s
	}
	switch fl.Type {
	case "boolean":
		switch strings.ToLower(s) {
		case "y", "yes", "true", "1", "on":
			return true, nil
		case "n", "no", "false", "0", "off":
			return false, nil
		}
		return nil, fmt.Errorf("answer yes or no, not %q", s)
	case "integer", "number":
		return s, nil // CheckValue parses and bounds it
	case "array":
		var list []string
		for _, p := range strings.Split(s, ",") {
			if p = strings.TrimSpace(p); p != "" {
				list = append(list, choice(p))
			}
		}
		return list, nil
	}
	if len(fl.Enum) > 0 {
		return choice(s), nil
	}
	return s, nil
}
