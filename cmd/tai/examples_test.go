package main

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/tai-dev/tai/app"
)

// Every command's help has examples: at least one runs that command (or,
// for a group, one of its commands), and each that runs tai parses: the
// command exists, its flags exist and take their values, its arguments
// are as many as it takes.
func TestEveryCommandHasExamples(t *testing.T) {
	root := newRoot(app.IO{In: strings.NewReader(""), Out: &strings.Builder{}, Err: &strings.Builder{}}, nil)
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, s := range c.Commands() {
			if s.Hidden || s.Name() == "help" || s.Name() == "completion" {
				continue
			}
			walk(s)
		}
		if c == root {
			return
		}
		t.Run(strings.ReplaceAll(c.CommandPath(), " ", "_"), func(t *testing.T) {
			lines := exampleLines(c.Example)
			if len(lines) == 0 {
				t.Fatalf("%q has no Example", c.CommandPath())
			}
			ownCommand := false
			for _, l := range lines {
				args := shellWords(l)
				if len(args) == 0 || args[0] != "tai" {
					continue // a shell line around tai's
				}
				// A fresh tree: parsing flags sets them.
				fresh := newRoot(app.IO{In: strings.NewReader(""), Out: &strings.Builder{}, Err: &strings.Builder{}}, args[1:])
				got, rest, err := fresh.Find(args[1:])
				if err != nil || got == fresh {
					t.Errorf("example %q runs no command (%v)", l, err)
					continue
				}
				if p := got.CommandPath(); p == c.CommandPath() || strings.HasPrefix(p, c.CommandPath()+" ") {
					ownCommand = true
				}
				if err := got.ParseFlags(rest); err != nil {
					t.Errorf("example %q: %v", l, err)
					continue
				}
				if got.Args != nil {
					if err := got.Args(got, got.Flags().Args()); err != nil {
						t.Errorf("example %q: %v", l, err)
					}
				}
			}
			if !ownCommand {
				t.Errorf("no example of %q runs it: %q", c.CommandPath(), lines)
			}
		})
	}
	walk(root)
}

// exampleLines are an Example's command lines, without comments.
func exampleLines(ex string) []string {
	var out []string
	for _, l := range strings.Split(ex, "\n") {
		if i := strings.Index(l, " #"); i >= 0 {
			l = l[:i]
		}
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}

// shellWords splits a line as sh would, quotes and all, up to the first
// pipe, redirection or list operator (what follows is not tai's).
func shellWords(l string) []string {
	var words []string
	var w strings.Builder
	in, quote := false, rune(0)
	for _, r := range l {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				w.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == ' ' || r == '\t':
			if in {
				words, in = append(words, w.String()), false
				w.Reset()
			}
		case r == '|' || r == '>' || r == '<' || r == ';' || r == '&':
			if in {
				words = append(words, w.String())
			}
			return words
		default:
			w.WriteRune(r)
			in = true
		}
	}
	if in {
		words = append(words, w.String())
	}
	return words
}
