package tty

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
func (p *Prompter) ReadLine(ctx context.Context, prompt string, secret bool) (string, error) {
	in := p.input()
	release, err := p.take(ctx)
	if err != nil {
		return "", err
	}
	defer release()
	var restore func()
	if fd, ok := p.rawFd(); ok && secret {
		if st, err := term.MakeRaw(fd); err == nil {
			restore = func() { _ = term.Restore(fd, st) }
			defer restore()
		}
	}
	fmt.Fprint(p.Out, prompt)
	var pending []byte // read, not yet used: given back when the line is done
	defer func() { in.Unread(pending) }()
	var line []byte // a secret's, as typed in raw mode
	for {
		if restore == nil {
			if i := bytes.IndexByte(pending, '\n'); i >= 0 {
				s := strings.TrimRight(string(pending[:i]), "\r")
				pending = pending[i+1:]
				return s, nil
			}
		} else {
			for len(pending) > 0 {
				k := pending[0]
				pending = pending[1:]
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
		b, err := in.Next(ctx)
		if ctx.Err() != nil {
			in.Unread(b)
			if restore != nil {
				pending = nil // a secret half typed is dropped with its question
			}
			return "", ctx.Err()
		}
		if err != nil {
			if restore == nil && len(pending) > 0 { // a last line without its newline
				s := string(pending)
				pending = nil
				return s, nil
			}
			return "", err
		}
		pending = append(pending, b...)
	}
}
