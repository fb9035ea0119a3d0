// Package exitcode maps how a tai command ended onto its process exit code.
// It is the one place where errors become codes, so the README, cap.md and
// the binary cannot disagree.
package exitcode

import (
	"context"
	"errors"
	"fmt"

	"github.com/tai-dev/tai/driver"
)

// Code is a tai process exit code.
type Code int

// The exit codes. They extend acpx's set so scripts written for it keep
// working.
const (
	OK               Code = 0
	AgentError       Code = 1
	Usage            Code = 2
	Timeout          Code = 3
	NoSession        Code = 4
	PermissionDenied Code = 5
	BudgetExceeded   Code = 6
	MergeConflict    Code = 7
	Interrupted      Code = 130
	// OutputClosed is 141, the code of a process killed by SIGPIPE, which
	// is what shells and scripts expect of a writer whose reader left
	// (`tai run … | head -3`); tai is not killed, it ends the run cleanly.
	OutputClosed Code = 141

	// Parked is 75, sysexits' EX_TEMPFAIL ("try again later"): the agent
	// hit its account's usage or rate limit and the run stopped with its
	// session kept, to be resumed at the reset.
	Parked Code = 75
)

// Info documents one code.
type Info struct {
	Code        Code   `json:"code"`
	Name        string `json:"name"`
	Description string `json:"description"`
}

// All lists every code, for the README, cap.md and the capability manifest.
var All = []Info{
	{OK, "ok", "the run finished and nothing it needed was refused"},
	{AgentError, "agent_error", "the agent crashed, broke the protocol or answered with an error"},
	{Usage, "usage", "bad flags, arguments, configuration or an unknown agent; --sandbox on where the kernel has no Landlock"},
	{Timeout, "timeout", "--timeout expired; the turn was cancelled and the agent stopped"},
	{NoSession, "no_session", "the session to resume does not exist (or --continue found none in the workspace)"},
	{PermissionDenied, "permission_denied", "a permission was denied (unless --allow-denials), or an ask could not be answered"},
	{BudgetExceeded, "budget_exceeded", "a token, turn, time or cost budget ran out"},
	{MergeConflict, "merge_conflict", "a fleet branch could not be merged back"},
	{Parked, "parked", "the agent hit a usage or rate limit: the run stopped with its session kept (the result names the reset time, the account and the session to resume)"},
	{Interrupted, "interrupted", "interrupted by Ctrl-C or SIGTERM"},
	{OutputClosed, "output_closed", "stdout was closed (its reader exited); the turn was cancelled and the audit log and session record finished"},
}

// Name returns the code's name, or "exit_N" for an unknown code.
func (c Code) Name() string {
	for _, i := range All {
		if i.Code == c {
			return i.Name
		}
	}
	return fmt.Sprintf("exit_%d", int(c))
}

// Error carries an explicit exit code through an error chain.
type Error struct {
	Code Code
	Err  error
	// Said: the command has already said why it ended (a result on stdout,
	// a FAILED line), so the reporter prints nothing more.
	Said bool
}

func (e *Error) Error() string {
	if e.Err == nil {
		return e.Code.Name()
	}
	return e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// With attaches code to err.
func With(code Code, err error) error {
	if err == nil {
		err = errors.New(code.Name())
	}
	return &Error{Code: code, Err: err}
}

// Said ends a command with code when the command has already said why: a
// JSON result carrying the code, a report on stdout. Nothing more is
// printed for it.
func Said(code Code) error {
	return &Error{Code: code, Said: true}
}

// Usagef returns a usage error.
func Usagef(format string, args ...any) error {
	return &Error{Code: Usage, Err: fmt.Errorf(format, args...)}
}

// ErrInterrupted marks a run stopped by a signal.
var ErrInterrupted = errors.New("interrupted")

// ErrTimeout marks a run stopped by its --timeout.
var ErrTimeout = errors.New("timed out")

// ErrOutputClosed marks a run stopped because its stdout was closed.
var ErrOutputClosed = errors.New("stdout was closed")

// Of maps an error onto its exit code. An explicit *Error wins; then the
// typed errors of the packages tai is built from.
func Of(err error) Code {
	if err == nil {
		return OK
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	switch {
	case errors.Is(err, ErrOutputClosed):
		return OutputClosed
	case errors.Is(err, ErrInterrupted), errors.Is(err, context.Canceled):
		return Interrupted
	case errors.Is(err, ErrTimeout), errors.Is(err, context.DeadlineExceeded):
		return Timeout
	case errors.Is(err, driver.ErrNoSession):
		return NoSession
	case errors.Is(err, driver.ErrUnsupported), errors.Is(err, driver.ErrBadValue):
		return Usage
	}
	return AgentError
}
