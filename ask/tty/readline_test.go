package tty

import (
	"context"
	"io"
	"testing"

	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/policy"
)

// The terminal's form reads its lines through the prompter: after an ask,
// the next line is the form's (not swallowed by the prompter's reader),
// and a read abandoned by its context loses nothing typed after it.
func TestReadLineSharesTheTerminal(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	p := &Prompter{In: pr, Out: io.Discard}
	go func() { _, _ = io.WriteString(pw, "y\nprod\n") }()
	a, err := p.Ask(context.Background(), driver.PermissionRequest{ID: "1", ToolCall: driver.ToolCall{Title: "deploy"}})
	if err != nil || a != policy.AllowOnce {
		t.Fatalf("ask: %v, %v", a, err)
	}
	if s, err := p.ReadLine(context.Background(), "", false); err != nil || s != "prod" {
		t.Fatalf("the form's line: %q, %v", s, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := p.ReadLine(ctx, "", false); err == nil {
		t.Fatal("a cancelled read returned a line")
	}
	go func() { _, _ = io.WriteString(pw, "later\nlast") }()
	if s, err := p.ReadLine(context.Background(), "", true); err != nil || s != "later" { // secret: a pipe is not raw
		t.Fatalf("after the cancel: %q, %v", s, err)
	}
	pw.Close()
	if s, err := p.ReadLine(context.Background(), "", false); err != nil || s != "last" {
		t.Fatalf("the last line without its newline: %q, %v", s, err)
	}
	if _, err := p.ReadLine(context.Background(), "", false); err != io.EOF {
		t.Fatalf("after the end: %v", err)
	}
}
