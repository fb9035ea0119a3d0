package app

import (
	"io"
	"os"

	"golang.org/x/term"
)

// IO is everything a command takes from its process, injected so that a
// command's flags → options path runs in a test without one (gh's
// IOStreams): the standard streams, whether they are terminals, the colour
// switch, the controlling terminal, the working directory and the
// environment. System() is the process's; a nil func field is the
// process's too, so IO{In, Out, Err} stays a valid IO.
type IO struct {
	In       io.Reader
	Out, Err io.Writer

	// LookupEnv reads the environment (os.LookupEnv).
	LookupEnv func(key string) (string, bool)
	// Environ is the whole environment, for the agents tai starts
	// (os.Environ).
	Environ func() []string
	// Getwd is the working directory (os.Getwd).
	Getwd func() (string, error)
	// OpenTTY opens the controlling terminal, /dev/tty, where tai asks a
	// human while stdin and stdout carry data.
	OpenTTY func() (*os.File, error)
	// IsTerminal says whether a stream is a terminal; nil asks the file
	// behind it.
	IsTerminal func(stream any) bool
}

// System is the process's IO. Its Out keeps its first write error (see
// OutputChecked); stdoutClosed (StdoutClosed) makes every write to it fail.
func System(stdoutClosed bool) IO {
	var out io.Writer = os.Stdout
	if stdoutClosed {
		out = closedStdout{}
	}
	return IO{In: os.Stdin, Out: &checkedOut{w: out}, Err: os.Stderr, LookupEnv: os.LookupEnv, Environ: os.Environ, Getwd: os.Getwd,
		OpenTTY: openDevTTY, IsTerminal: isTTY}
}

func openDevTTY() (*os.File, error) { return os.OpenFile("/dev/tty", os.O_RDWR, 0) }

// Getenv is the environment's value of key, "" when unset.
func (s IO) Getenv(key string) string {
	v, _ := s.lookup(key)
	return v
}

func (s IO) lookup(key string) (string, bool) {
	if s.LookupEnv == nil {
		return os.LookupEnv(key)
	}
	return s.LookupEnv(key)
}

// Env is the whole environment.
func (s IO) Env() []string {
	if s.Environ == nil {
		return os.Environ()
	}
	return s.Environ()
}

// Wd is the working directory.
func (s IO) Wd() (string, error) {
	if s.Getwd == nil {
		return os.Getwd()
	}
	return s.Getwd()
}

// TTY opens the controlling terminal; ok is false without one (a pipe, a
// daemon, a test).
func (s IO) TTY() (*os.File, bool) {
	open := s.OpenTTY
	if open == nil {
		open = openDevTTY
	}
	f, err := open()
	if err != nil {
		return nil, false
	}
	if !s.terminal(f) {
		f.Close()
		return nil, false
	}
	return f, true
}

func (s IO) terminal(stream any) bool {
	if s.IsTerminal == nil {
		return isTTY(stream)
	}
	return s.IsTerminal(stream)
}

// InTTY, OutTTY and ErrTTY say whether stdin, stdout or stderr is a
// terminal.
func (s IO) InTTY() bool  { return s.terminal(s.In) }
func (s IO) OutTTY() bool { return s.terminal(s.Out) }
func (s IO) ErrTTY() bool { return s.terminal(s.Err) }

// NoColor is NO_COLOR (https://no-color.org) or a dumb terminal.
func (s IO) NoColor() bool { return s.Getenv("NO_COLOR") != "" || s.Getenv("TERM") == "dumb" }

// ColorOn: colour on w only where it is a terminal, and never with
// NO_COLOR.
func (s IO) ColorOn(w io.Writer) bool { return !s.NoColor() && s.terminal(w) }

// isTTY says whether the file behind a stream (through a closedOut) is a
// terminal.
func isTTY(r any) bool {
	f, ok := osFile(r)
	return ok && term.IsTerminal(int(f.Fd()))
}
