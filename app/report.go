package app

import (
	"fmt"
	"io"

	"github.com/tai-dev/tai/exitcode"
)

// Report prints err the one way tai prints errors ("tai: " and the
// message, on stderr) and returns its exit code (exitcode.Of). Commands
// and cmd/tai report through it, so every error has the same prefix and the
// code it maps to.
func Report(w io.Writer, err error) int {
	if err == nil {
		return 0
	}
	fmt.Fprintln(w, "tai:", err)
	return int(exitcode.Of(err))
}

// fail is Report on the command's stderr.
func fail(std IO, err error) int { return Report(std.Err, err) }

// warn prints a warning the same way: it is not an error, the command goes on.
func warn(std IO, format string, args ...any) {
	fmt.Fprintf(std.Err, "tai: warning: "+format+"\n", args...)
}
