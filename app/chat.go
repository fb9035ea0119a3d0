package app

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"golang.org/x/term"

	"github.com/tai-dev/tai/chat"
	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/exitcode"
	"github.com/tai-dev/tai/internal/safetext"
	"github.com/tai-dev/tai/internal/ttyin"
	"github.com/tai-dev/tai/render"
	"github.com/tai-dev/tai/runner"
)

// chatPrompt is the line editor's prompt.
const chatPrompt = "tai› "

// Chat runs `tai chat` (and `tai run` with no prompt on a terminal): one
// session, one turn per line. On a terminal the line has an editor with
// history and Tab completion; Ctrl-C cancels the running turn (or drops
// the line being typed), Ctrl-D ends the session. From a pipe, each line
// is one prompt.
func Chat(ctx context.Context, o RunOptions, args []string) error {
	r, err := resolveRun(o)
	if err != nil {
		notStarted(o.IO, o.Flags.Output, o.Flags.Agent, err) // -o json promises one document
		return err
	}
	return runChat(ctx, o, r, args)
}

// runChat is Chat with its command line resolved (tai chat's, or tai run's
// with no prompt on a terminal).
func runChat(ctx context.Context, o RunOptions, r resolvedRun, args []string) error {
	// -o json promises one document, also for a chat refused before it
	// started.
	refused := func(err error) error {
		notStarted(o.IO, o.Flags.Output, o.Flags.Agent, err)
		return err
	}
	std, f := o.IO, r.f
	if f.Output == OutputStreamJSON || f.InputFormat == "stream-json" {
		return refused(exitcode.Usagef("chat reads prompts from the terminal or a pipe: for stream-json use tai --cap-speak stream-json"))
	}
	o.chat = true
	state := chat.NewState()
	in := chatInput(std, state.Complete)
	defer in.close()
	o.termIn, o.above, o.hold = in.term, in.above, in.hold
	logErr := std.Err
	if in.above != nil {
		logErr = in.above(std.Err)
	}
	logger := newLogger(logErr, f.Verbose)
	opts, cleanup, err := buildRun(o, r, args, logger)
	defer cleanup()
	if err != nil {
		return refused(err)
	}
	if opts.Driver == driver.PTY {
		return refused(exitcode.Usagef("the pty driver has the agent's own terminal UI: use tai run --driver pty with no prompt to attach to it"))
	}
	c := &chatSession{
		std: std, state: state, text: textSink(opts.Sinks),
		turns: make(chan []driver.Content), controls: make(chan runner.Control), done: make(chan struct{}),
	}
	interrupts := make(chan struct{}, 1)
	opts.Sinks = append(opts.Sinks, state)
	opts.Turns, opts.Interrupts, opts.Controls = c.turns, interrupts, c.controls
	opts.TurnResults = f.Output == OutputJSON // one document, every turn in it
	first := opts.Prompt
	opts.Prompt = nil

	runCtx, stop := chatSignals(ctx, interrupts)
	defer stop()
	var res runner.Result
	started := recordStart(&opts, logger)
	go func() {
		defer close(c.done)
		res, _ = runner.Run(runCtx, opts)
	}()

	c.loop(in, first)
	close(c.turns)
	<-c.done
	started()
	recordSession(context.WithoutCancel(ctx), opts, res, promptExcerpt(opts.Prompt, opts.Env), logger)
	if f.Output == OutputJSON {
		enc := json.NewEncoder(std.Out)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		_ = enc.Encode(res)
		return exit(res.ExitCode)
	}
	return runEnd(res, res.ExitCode != 0)
}

// chatSignals makes Ctrl-C the turn's, not the run's: SIGINT interrupts
// the turn, and the run ends with the input or SIGTERM.
func chatSignals(ctx context.Context, interrupts chan<- struct{}) (context.Context, func()) {
	runCtx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		for s := range sigs {
			if s == syscall.SIGTERM {
				cancel(exitcode.ErrInterrupted)
				return
			}
			select {
			case interrupts <- struct{}{}:
			default:
			}
		}
	}()
	return runCtx, func() { signal.Stop(sigs); cancel(nil) }
}

// chatSession feeds one running session from the user's lines: prompts as
// turns, /mode and /model as controls.
type chatSession struct {
	std      IO
	state    *chat.State
	text     *render.Text // the screen's renderer; nil with -o json
	turns    chan []driver.Content
	controls chan runner.Control
	done     chan struct{} // closed when the run has ended
}

// loop reads lines until the input ends, /quit, or the run ends.
func (c *chatSession) loop(in lineReader, first []driver.Content) {
	if len(first) > 0 && !c.turn(first) {
		return
	}
	for {
		line, err := in.read()
		if errors.Is(err, chat.ErrInterrupted) {
			continue
		}
		if err != nil {
			return
		}
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		cmd, arg, _ := strings.Cut(line, " ")
		arg = strings.TrimSpace(arg)
		var ok bool
		switch cmd {
		case "/quit", "/exit":
			return
		case "/mode", "/model":
			ok = c.control(cmd, arg)
		default:
			ok = c.turn([]driver.Content{driver.TextContent(line)})
		}
		if !ok {
			return
		}
	}
}

// turn sends one prompt and waits for its end, or the run's (false).
func (c *chatSession) turn(p []driver.Content) bool {
	select {
	case c.turns <- p:
	case <-c.done:
		return false
	}
	if c.text != nil {
		c.text.TurnStarted() // the status line's clock: the agent may say nothing for a while
	}
	select {
	case <-c.state.Turns:
		return true
	case <-c.done:
		return false
	}
}

// control switches the session's mode or model; false when the run ended.
func (c *chatSession) control(cmd, arg string) bool {
	if arg == "" {
		fmt.Fprintf(c.std.Err, "%s needs an id: Tab lists them\n", cmd)
		return true
	}
	reply := make(chan error, 1)
	ctl := runner.Control{Mode: arg, Reply: reply}
	if cmd == "/model" {
		ctl = runner.Control{Model: arg, Reply: reply}
	}
	select {
	case c.controls <- ctl:
	case <-c.done:
		return false
	}
	if err := <-reply; err != nil {
		fmt.Fprintf(c.std.Err, "%s %s: %s\n", cmd, safetext.Line(arg), safetext.Line(err.Error())) // the agent's error text
	}
	return true
}

// textSink is the run's text renderer among its sinks, if any.
func textSink(sinks []driver.Sink) *render.Text {
	for _, s := range sinks {
		if t, ok := s.(*render.Text); ok {
			return t
		}
	}
	return nil
}

// lineReader is where chat's prompts come from.
type lineReader struct {
	read  func() (string, error)
	close func()
	// On a terminal: its one reader, and the writer above the line typed.
	term  *ttyin.Input
	above func(io.Writer) io.Writer
	hold  func(context.Context) (func(), error) // a question between turns waits for the line typed
}

// chatInput is the line editor on a terminal (raw only while a line is
// typed, so that the turn's output and Ctrl-C behave as usual), else one
// prompt per line of stdin.
func chatInput(std IO, complete chat.Completer) lineReader {
	f, ok := osFile(std.In)
	if !ok || !std.InTTY() {
		sc := bufio.NewScanner(std.In)
		sc.Buffer(nil, 1<<20)
		return lineReader{read: func() (string, error) {
			if sc.Scan() {
				return sc.Text(), nil
			}
			if err := sc.Err(); err != nil {
				return "", err
			}
			return "", io.EOF
		}, close: func() {}}
	}
	fd := int(f.Fd())
	tin := ttyin.New(f)
	ed := &chat.Editor{In: tin, Out: std.Out, Complete: complete, Width: func() int {
		w, _, err := term.GetSize(fd)
		if err != nil {
			return 0
		}
		return w
	}, Raw: func() (func(), error) {
		old, err := term.MakeRaw(fd)
		if err != nil {
			return nil, fmt.Errorf("the terminal: %w", err)
		}
		return func() { _ = term.Restore(fd, old) }, nil
	}}
	return lineReader{read: func() (string, error) { return ed.ReadLine(chatPrompt) },
		close: func() {}, term: tin, above: ed.Above, hold: ed.Hold}
}
