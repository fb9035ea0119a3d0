package policy

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"unicode/utf8"

	"golang.org/x/term"
)

// ReadLine writes prompt, then reads one line from the terminal through
// the prompter's own reader: a form asked on the same terminal (an elicitation) and the
// prompter then never compete for its input, and a read abandoned when
// ctx ends loses nothing typed after it. secret: on a terminal the line is
// read in raw mode, not echoed (backspace edits it). It waits for a
// question on screen to be answered first. The prompt is written only
// then, and for a secret after raw mode is on: keys typed the moment the
// prompt shows are not echoed.
func (p *TTYPrompter) ReadLine(ctx context.Context, prompt string, secret bool) (string, error) {
	p.start.Do(func() {
		p.input = make(chan inputOrErr)
		go p.read()
	})
	p.mu.Lock()
	defer p.mu.Unlock()
	var restore func()
	if f, ok := p.In.(*os.File); ok && secret && term.IsTerminal(int(f.Fd())) {
		fd := int(f.Fd())
		if st, err := term.MakeRaw(fd); err == nil {
			restore = func() { _ = term.Restore(fd, st) }
			defer restore()
		}
	}
	fmt.Fprint(p.Out, prompt)
	var line []byte // a secret's, as typed in raw mode
	for {
		if restore == nil {
			if i := bytes.IndexByte(p.pending, '\n'); i >= 0 {
				s := strings.TrimRight(string(p.pending[:i]), "\r")
				p.pending = p.pending[i+1:]
				return s, nil
			}
		} else {
			for len(p.pending) > 0 {
				k := p.pending[0]
				p.pending = p.pending[1:]
				switch k {
				case '\r', '\n':
					fmt.Fprint(p.Out, "\r\n")
					return string(line), nil
				case 0x7f, 0x08: // backspace
					if len(line) > 0 {
						_, n := utf8.DecodeLastRune(line)
						line = line[:len(line)-n]
					}
				case 0x03: // Ctrl-C: raw mode made it a key; make it the signal again
					restore()
					fmt.Fprint(p.Out, "^C\r\n")
					_ = syscall.Kill(os.Getpid(), syscall.SIGINT)
					return "", context.Canceled
				case 0x04: // Ctrl-D
					return "", io.EOF
				default:
					line = append(line, k)
				}
			}
		}
		select {
		case in, ok := <-p.input:
			if !ok || in.err != nil {
				err := io.EOF
				if ok {
					err = in.err
				}
				if restore == nil && len(p.pending) > 0 { // a last line without its newline
					s := string(p.pending)
					p.pending = p.pending[:0]
					return s, nil
				}
				return "", err
			}
			p.pending = append(p.pending, in.b...)
		case <-ctx.Done():
			return "", ctx.Err() // a secret half typed is dropped with its question
		}
	}
}
