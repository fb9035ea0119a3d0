package render

import (
	"encoding/json"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/internal/safetext"
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

// ShownCommand is the command line a call will run, read from its raw
// input (what is run, not the title the agent wrote) and spelled as it
// runs: an argv quoted once (ShellLine, which also escapes what a
// terminal would act on), a shell line as the shell reads it, its lines
// kept, everything else in it escaped. False: the agent gave no command.
func ShownCommand(tc driver.ToolCall) (string, bool) {
	var m map[string]any
	if json.Unmarshal(tc.RawInput, &m) != nil {
		return "", false
	}
	for _, k := range []string{"command", "cmd"} {
		switch v := m[k].(type) {
		case string:
			if strings.TrimSpace(v) == "" {
				continue
			}
			if args := driver.ArgStrings(m["args"]); len(args) > 0 {
				return ShellLine(v, args), true
			}
			if args, ok := m["args"].(string); ok && strings.TrimSpace(args) != "" {
				v += " " + args // a line's second half: read as written
			}
			return safetext.Text(strings.TrimRight(v, "\n")), true
		case []any:
			if argv := driver.ArgStrings(v); len(argv) > 0 {
				return ShellLine(argv[0], argv[1:]), true
			}
		}
	}
	return "", false
}
