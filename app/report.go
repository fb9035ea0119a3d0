package app

import (
	"errors"
	"fmt"
	"io"

	"github.com/tai-dev/tai/exitcode"
	"github.com/tai-dev/tai/internal/safetext"
)

// Report is the one place that prints a command's error: "tai: " and the
// message, on stderr. It returns the error's exit code (exitcode.Of).
// Commands return their errors; cmd/tai hands them here, so every error
// has the same prefix and the code it maps to. An error the command has
// already said (exitcode.Said) is not printed again.
func Report(w io.Writer, err error) int {
	if err == nil {
		return 0
	}
	var e *exitcode.Error
	if errors.As(err, &e) && e.Said {
		return int(exitcode.Of(err))
	}
	// Several errors (errors.Join) are one line each, each with the prefix.
	// An error may quote an agent (its message, its stderr): escaped.
	var j interface{ Unwrap() []error }
	if errors.As(err, &j) && j.(error).Error() == err.Error() {
		for _, e := range j.Unwrap() {
			fmt.Fprintln(w, "tai:", safetext.Text(e.Error()))
		}
	} else {
		fmt.Fprintln(w, "tai:", safetext.Text(err.Error()))
	}
	return int(exitcode.Of(err))
}

// exit is a command's end with code: nil for 0, else an error the command
// has already said.
func exit(code int) error {
	if code == 0 {
		return nil
	}
	return exitcode.Said(exitcode.Code(code))
}

// warn prints a warning the same way: it is not an error, the command goes on.
func warn(std IO, format string, args ...any) {
	fmt.Fprintln(std.Err, "tai: warning: "+safetext.Text(fmt.Sprintf(format, args...)))
}
