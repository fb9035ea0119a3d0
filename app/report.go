package app

import (
	"errors"
	"fmt"
	"io"
	"strings"

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
	// One shape: "tai: WHAT: WHY (exit N, name)". Several errors
	// (errors.Join) are one line each, each with the prefix, the code
	// once, on the last. An error may quote an agent (its message, its
	// stderr): escaped.
	code := exitcode.Of(err)
	lines := []string{err.Error()}
	var j interface{ Unwrap() []error }
	if errors.As(err, &j) && j.(error).Error() == err.Error() {
		lines = lines[:0]
		for _, e := range j.Unwrap() {
			lines = append(lines, e.Error())
		}
	}
	suffix := fmt.Sprintf(" (exit %d, %s)", code, code.Name())
	if last := len(lines) - 1; last >= 0 && !strings.HasSuffix(lines[last], suffix) {
		lines[last] += suffix
	}
	for _, l := range lines {
		fmt.Fprintln(w, "tai:", safetext.Text(l))
	}
	return int(code)
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
