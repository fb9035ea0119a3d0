package render

import (
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// ShellLine spells a command and its arguments the way a shell reads them,
// quoted where needed: `sh -c 'echo terminal-ok; ls'`, not `sh -c echo
// terminal-ok; ls`, so that the line shown is the command that ran.
func ShellLine(command string, args []string) string {
	words := make([]string, 0, 1+len(args))
	for _, w := range append([]string{command}, args...) {
		words = append(words, shellQuote(w))
	}
	return strings.Join(words, " ")
}

func shellQuote(s string) string {
	q, err := syntax.Quote(s, syntax.LangBash)
	if err != nil {
		// A NUL byte cannot be in a shell word at all; show it Go-quoted.
		return strconv.Quote(s)
	}
	return q
}
