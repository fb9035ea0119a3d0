// Package runner runs one agent session end to end: it starts the driver
// with tai's host services and policy, sends the prompt, supervises the turn
// (timeout, Ctrl-C, a dying agent) and produces the run's Result and exit
// code. `tai run` is a thin shell around it.
package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/quartz"

	"github.com/tai-dev/tai/audit"
	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/exitcode"
	"github.com/tai-dev/tai/host"
	"github.com/tai-dev/tai/internal/agentproc"
	"github.com/tai-dev/tai/internal/secretenv"
	"github.com/tai-dev/tai/internal/statedir"
	"github.com/tai-dev/tai/policy"
	"github.com/tai-dev/tai/quota"
	"github.com/tai-dev/tai/sandbox"
)

// Options configure a run.
type Options struct {
	Agent  string      // label of the agent (preset name or command)
	Argv   []string    // command that starts it
	Env    []string    // its environment; nil = tai's
	Driver driver.Name // "" is ACP

	Quirks driver.Quirks // the agent's (its preset's)
	// OwnSandbox names the agent's own sandbox ("" = none): the result's
	// confinement says whose is in force.
	OwnSandbox string

	Cwd      string
	Prompt   []driver.Content
	Mode     string
	Model    string
	Config   [][2]string // --set id=value, in order
	ResumeID string
	// LoadReplay: replay the resumed session's history (driver.Launch).
	LoadReplay bool
	ForkID     string // --fork: a new session from a copy of this one
	// AddDirs are workspace roots besides Cwd (--add-dir): the host
	// services serve them too.
	AddDirs []string
	// WriteRoots are directories outside the workspace the agent may
	// write (--sandbox-write, the policy's write_roots; absolute): the
	// file service writes there too, and run.start lists them.
	WriteRoots []string
	AuthMethod string
	MCPServers []driver.MCPServer
	// Attach, if set, hands the session to the user's terminal instead of
	// sending a prompt (terminal-UI drivers only).
	Attach *driver.Attach
	// Turns, if set, supplies the prompts of further turns of the same
	// session (after Prompt, if any) until it is closed.
	Turns <-chan []driver.Content
	// TurnResults keeps every turn's text and stop reason for the
	// Result's Turns (tai chat -o json), not only the last turn's.
	TurnResults bool
	// Interrupts cancels the turn running when it fires (not the run:
	// the next prompt from Turns still runs).
	Interrupts <-chan struct{}
	// Controls switch the session's mode or model between turns (an
	// interactive session's /mode and /model); each is answered on its
	// Reply.
	Controls <-chan Control
	// OnSession, if set, is handed the live session once it is configured,
	// before the first turn.
	OnSession func(Live)
	// EditorFiles, if set, serves the agent's decided file reads and
	// writes instead of the disk (host.Options.Editor).
	EditorFiles driver.Files
	// Passthrough, if set, takes the agent's extension messages
	// (driver.Host.Passthrough).
	Passthrough driver.Passthrough

	Decider driver.PermissionDecider
	// Elicitor answers the agent's elicitations (nil: not offered). An
	// error from it (elicit.ErrUnanswered) stops the run with exit 5.
	Elicitor     driver.Elicitor
	AllowDenials bool
	// Protected are files no agent may write through tai besides tai's
	// config and state directories (which are always): the policy file.
	Protected []string
	// Modes, if set, decides mode changes too (usually the same policy
	// engine as Decider).
	Modes ModePolicy

	// Timeout bounds the whole run; 0 = none.
	Timeout time.Duration
	// CancelGrace is how long a cancelled turn gets to end before the agent
	// is killed. Default 3s.
	CancelGrace time.Duration
	// Kill, once closed, ends the grace of a cancelled turn at once: the
	// agent is killed (a fleet task over its budget must not spend on
	// while it ignores the cancel). Close it after cancelling the run.
	Kill <-chan struct{}
	// LateWindow is how long tai keeps listening after the turn ends, for
	// updates agents send after their prompt response. Default 150ms.
	LateWindow time.Duration

	Sinks []driver.Sink
	// Audit, if set, receives the run's accountable events. RunID and
	// RunInfo (the settings worth recording: policy, flags) go into its
	// run.start entry.
	Audit        *audit.Log
	AuditTask    string // the fleet task this run is: its entries name it
	RunID        string
	RunInfo      any
	Logger       *slog.Logger
	Trace        func(dir string, line []byte)
	StderrTo     io.Writer
	MaxLineBytes int64
	// MaxMessageBytes bounds the text of one message; the rest of a longer
	// one is skipped and reported. Default 256 MiB.
	MaxMessageBytes int64
	// Cols and Rows size a terminal driver's screen (0: its default).
	Cols, Rows int
	Version    string
	Clock      quartz.Clock
	// Quota says what to do when the agent hits its usage limit: end
	// parked (the default), or wait for the reset and resume.
	Quota QuotaOptions
	// Sandbox, if set, starts the agent and the commands tai serves it
	// through tai's launcher (package sandbox), Cwd being a write root
	// besides Sandbox.Write. nil starts them directly (a binary that is not
	// tai cannot be the launcher).
	Sandbox *sandbox.Config
}

// DefaultMaxMessageBytes is the default of Options.MaxMessageBytes.
const DefaultMaxMessageBytes = 256 << 20

// Run runs the session. ctx being cancelled means the user interrupted.
// The Result is always filled in, also on error; its ExitCode is final.
func Run(ctx context.Context, o Options) (Result, error) {
	if o.Clock == nil {
		o.Clock = quartz.NewReal()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.CancelGrace <= 0 {
		o.CancelGrace = 3 * time.Second
	}
	if o.LateWindow <= 0 {
		o.LateWindow = 150 * time.Millisecond
	}
	if o.Env == nil {
		o.Env = secretenv.Scrub(os.Environ()) // tai's own secrets never reach the agent
	}
	start := o.Clock.Now()
	col := newCollector()
	col.keepTurns = o.TurnResults
	col.now = func() time.Time { return o.Clock.Now() }
	if o.MaxMessageBytes <= 0 {
		o.MaxMessageBytes = DefaultMaxMessageBytes
	}
	st := &stamper{clock: o.Clock, sinks: append(append([]driver.Sink{}, o.Sinks...), col), maxMessage: o.MaxMessageBytes}
	r := &run{o: o, col: col, st: st}
	sbErr := r.newSandbox()
	defer r.sb.Close()
	if o.Audit != nil {
		r.audit = &auditSink{log: o.Audit, task: o.AuditTask}
		st.sinks = append(st.sinks, r.audit)
		start := map[string]any{
			"run": o.RunID, "agent": o.Agent, "argv": o.Argv, "driver": o.Driver, "cwd": o.Cwd,
			"version": o.Version, "settings": o.RunInfo,
		}
		if len(o.WriteRoots) > 0 {
			start["write_roots"] = o.WriteRoots
		}
		if col.res.Sandbox != nil {
			start["sandbox"] = col.res.Sandbox
		}
		if names := secretenv.Dropped(os.Environ()); len(names) > 0 {
			start["env_withheld"] = map[string]any{"names": names, "reason": "tai's own secrets never reach the agent"}
		}
		if col.res.Confinement != nil {
			start["confinement"] = col.res.Confinement
		}
		r.audit.append(audit.KindRunStart, "", start)
	}
	err := sbErr
	if err == nil {
		err = r.run(ctx)
	}
	r.sandboxStatus()
	res := r.finish(err)
	res.DurationMS = o.Clock.Since(start).Milliseconds()
	res.RunID = o.RunID
	if o.Audit != nil {
		res.Audit = o.Audit.Path()
		end := map[string]any{
			"status": res.Status, "exit_code": res.ExitCode, "stop_reason": res.StopReason, "error": res.Error,
			"duration_ms": res.DurationMS, "denials": len(res.Denials), "files_written": len(res.FilesWritten),
		}
		if res.Parked != nil {
			r.audit.append(audit.KindRunParked, res.SessionID, res.Parked)
			end["parked"] = res.Parked
		}
		if res.Sandbox != nil && res.Sandbox.Limits != nil {
			// What the limits caught is known at the end.
			end["limits"] = res.Sandbox.Limits
		}
		r.audit.append(audit.KindRunEnd, res.SessionID, end)
		if serr := o.Audit.Sync(); serr != nil {
			r.audit.fail(serr)
		}
		if aerr := r.audit.failed(); aerr != nil {
			// The record is incomplete: CI must not mistake this run for a
			// clean one.
			res.Errors = append(res.Errors, driver.ErrorInfo{Code: "audit_write_failed", Message: aerr.Error()})
			// Before a denial: what the log could not record was denied.
			if res.ExitCode == 0 || res.ExitCode == int(exitcode.PermissionDenied) {
				res.ExitCode, res.Status = int(exitcode.AgentError), "error"
				res.Error = "audit log write failed: " + aerr.Error()
			}
		}
	}
	res.LastSeq = st.nextSeq() - 1
	if res.ExitCode != 0 && err == nil {
		err = exitcode.With(exitcode.Code(res.ExitCode), errors.New(res.Error))
	} else if res.Parked != nil {
		err = exitcode.With(exitcode.Parked, err)
	}
	return res, err
}

type run struct {
	o      Options
	launch driver.Launch // how the agent was started: a relaunch's too
	col    *collector
	st     *stamper
	audit  *auditSink
	modes  *modeGuard
	sb     *sandbox.Sandbox // nil: processes start directly

	mu         sync.Mutex
	cur        Session // the live session (Live), a relaunch's once there is one
	promptFail error   // the policy could not ask and was told to fail
	cause      func() error
}

// decider wraps the policy so that an ask that cannot be answered stops the
// run instead of being silently denied, so that nothing is granted while
// the audit log cannot be written, and so that the mode guard and the host
// services' grants hear of approvals.
type decider struct {
	inner    driver.PermissionDecider
	onFail   func(error)
	modes    *modeGuard
	grants   *host.Grants
	recorded func() error // nil: no audit log
	// record writes an allow's audit entry before the allow is returned,
	// so that one whose entry cannot be written is not granted. Nil: no
	// audit log.
	record func(req driver.PermissionRequest, d driver.PermissionDecision) error
}

func (d decider) Decide(ctx context.Context, req driver.PermissionRequest) (driver.PermissionDecision, error) {
	if dec, ok := d.unrecorded(req); ok {
		return dec, nil
	}
	dec, err := d.inner.Decide(ctx, req)
	if errors.Is(err, policy.ErrPromptUnavailable) {
		d.onFail(err)
		return dec, nil
	}
	if err != nil {
		return dec, err
	}
	if dec.Verdict == driver.VerdictAllow {
		// Its record first: the log may have failed while the policy was
		// deciding, or fail on this very entry.
		if dec.RequestID == "" {
			dec.RequestID = req.ID
		}
		if dec.ToolCallID == "" {
			dec.ToolCallID = req.ToolCall.ID
		}
		dec.Unrequested = req.Unrequested
		if d.record != nil {
			_ = d.record(req, dec) // a failure is sticky: unrecorded sees it
		}
		if denied, ok := d.unrecorded(req); ok {
			return denied, nil
		}
	}
	if d.modes != nil {
		d.modes.approved(req, dec)
	}
	d.grants.Decided(req, dec)
	return dec, nil
}

// unrecorded denies req when the audit log cannot be written: a decision
// that cannot be recorded is not granted.
func (d decider) unrecorded(req driver.PermissionRequest) (driver.PermissionDecision, bool) {
	if d.recorded == nil {
		return driver.PermissionDecision{}, false
	}
	aerr := d.recorded()
	if aerr == nil {
		return driver.PermissionDecision{}, false
	}
	dec := driver.PermissionDecision{
		RequestID: req.ID, ToolCallID: req.ToolCall.ID, Title: req.ToolCall.Title, ToolKind: req.ToolCall.Kind,
		Outcome: driver.OutcomeCancelled, Verdict: driver.VerdictDeny, DecidedBy: driver.ByAudit,
		Reason: "the audit log cannot be written, and a decision that cannot be recorded is not granted: " + aerr.Error(),
	}
	if opt, ok := policy.ChooseOption(req.Options, false); ok {
		dec.Outcome, dec.OptionID, dec.OptionKind = driver.OutcomeSelected, opt.ID, policy.OptionKind(opt)
	}
	return dec, true
}

func (r *run) run(ctx context.Context) error {
	o := r.o
	if !known(r.driverName()) {
		return exitcode.Usagef("driver %q is not available in this build (available: %s)", o.Driver, DriverList())
	}
	cwd, err := filepath.Abs(o.Cwd)
	if err != nil {
		return exitcode.Usagef("workspace: %v", err)
	}
	r.col.res.Agent, r.col.res.Driver, r.col.res.Cwd = o.Agent, r.driverName(), cwd

	runCtx, cancelRun := context.WithCancelCause(ctx)
	defer cancelRun(nil)
	r.cause = func() error { return context.Cause(runCtx) }
	if o.Timeout > 0 {
		t := o.Clock.AfterFunc(o.Timeout, func() {
			cancelRun(fmt.Errorf("%w after %s", exitcode.ErrTimeout, o.Timeout))
		}, "runner", "timeout")
		defer t.Stop()
	}
	onFail := func(err error) {
		r.mu.Lock()
		r.promptFail = err
		r.mu.Unlock()
		cancelRun(exitcode.With(exitcode.PermissionDenied, err))
	}
	if o.Modes != nil {
		r.modes = newModeGuard(o.Modes, r.st.Emit, onFail)
		r.st.add(r.modes)
		defer r.modes.stop()
	}
	dec := decider{inner: o.Decider, onFail: onFail, modes: r.modes, grants: host.NewGrants(cwd)}
	r.st.add(dec.grants) // a grant ends with its tool call, or the turn
	if r.audit != nil {
		dec.recorded = r.audit.failed
		dec.record = func(req driver.PermissionRequest, d driver.PermissionDecision) error {
			session := req.Session
			if session == "" {
				session = r.st.sessionID()
			}
			return r.audit.decided(session, d)
		}
	}
	// Every file and terminal call the agent makes is decided too: by the
	// grants of what it asked for, else as a request of its own.
	hostOpts := host.Options{Roots: append(append([]string{cwd}, o.AddDirs...), existingDirs(o.WriteRoots)...), Sink: r.st, Logger: o.Logger, Decider: dec, Grants: dec.grants,
		Protected: r.protected(), Recorded: dec.recorded, Editor: o.EditorFiles}
	if o.Sandbox != nil {
		// One list each, the kernel's and tai's: what the agent cannot
		// read, and what it cannot write (an agent's config files too).
		hostOpts.Secret = o.Sandbox.Deny
		hostOpts.Protected = append(hostOpts.Protected, o.Sandbox.Protect...)
	}
	svc, err := host.New(hostOpts)
	if err != nil {
		return exitcode.With(exitcode.Usage, err)
	}
	defer svc.Close()
	svc.UseSandbox(r.sb)

	// What the agent says on stderr, kept for a start that fails under
	// the sandbox (startRefused), and passed on live as before.
	stderr := &agentproc.Tail{Max: 64 << 10}
	if o.StderrTo != nil {
		w := o.StderrTo
		stderr.Fwd = func(p []byte) { _, _ = w.Write(p) }
	}
	r.launch = driver.Launch{
		Argv: o.Argv, Env: o.Env, Cwd: cwd, Agent: o.Agent,
		Host:       driver.Host{Sink: r.st, Decider: dec, Files: svc, Terminals: svc, Elicitor: r.elicitor(onFail), Passthrough: o.Passthrough},
		MCPServers: o.MCPServers, AuthMethod: o.AuthMethod, ResumeID: o.ResumeID, LoadReplay: o.LoadReplay, ForkID: o.ForkID, AddDirs: o.AddDirs,
		Quirks:        o.Quirks,
		ClientVersion: o.Version, Logger: o.Logger, Trace: o.Trace, MaxLineBytes: o.MaxLineBytes,
		StderrTo: stderr, Clock: o.Clock, Cols: o.Cols, Rows: o.Rows, Sandbox: r.sb,
	}
	sess, err := r.start(runCtx, r.launch)
	if err != nil {
		return r.startRefused(r.interrupted(runCtx, fmt.Errorf("starting %s: %w", o.Agent, err)), stderr.String())
	}
	if r.modes != nil {
		r.modes.start(runCtx, sess)
	}
	// sess is the live session: a relaunch after a limit (quotaTurn)
	// replaces it, and this closes the one live at the end.
	defer func() { r.closeSession(sess) }()

	if err := r.configure(runCtx, sess); err != nil {
		return r.interrupted(runCtx, err)
	}
	r.setLive(sess)
	if o.OnSession != nil {
		o.OnSession(Live{r: r})
	}
	if o.Attach != nil {
		return r.attach(runCtx, sess)
	}
	if len(o.Prompt) > 0 {
		if err := r.quotaTurn(runCtx, &sess, o.Prompt, o.Turns == nil); err != nil {
			return err
		}
	}
	for o.Turns != nil {
		select {
		case p, ok := <-o.Turns:
			if !ok {
				return nil
			}
			if err := r.quotaTurn(runCtx, &sess, p, false); err != nil {
				return err
			}
		case <-o.Interrupts: // nothing running: nothing to interrupt
		case c := <-o.Controls:
			c.Reply <- r.control(runCtx, sess, c)
		case <-sess.Exited():
			return fmt.Errorf("%s exited between turns", o.Agent)
		case <-runCtx.Done():
			return context.Cause(runCtx)
		}
	}
	return nil
}

// start starts the agent with l and records its process.
func (r *run) start(ctx context.Context, l driver.Launch) (Session, error) {
	sess, err := startDriver(ctx, r.driverName(), l)
	if err != nil {
		return nil, err
	}
	if r.audit != nil {
		argv := l.Argv
		// What really ran: a driver may add flags (--resume SESSION).
		if a, ok := sess.(interface{ Argv() []string }); ok && len(a.Argv()) > 0 {
			argv = a.Argv()
		}
		r.audit.append(audit.KindProcessStart, sess.ID(), audit.Process{Name: r.o.Agent, Path: argv[0], Args: argv[1:], PID: sess.Pid()})
	}
	return sess, nil
}

func (r *run) setLive(sess Session) {
	r.mu.Lock()
	r.cur = sess
	r.mu.Unlock()
}

func (r *run) live() Session {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cur
}

// closeSession ends sess and its agent, and records the session's end.
func (r *run) closeSession(sess Session) {
	_ = sess.Close(context.Background())
	if r.audit != nil {
		r.audit.append(audit.KindSessionEnd, sess.ID(), nil)
	}
}

// protected are tai's own files, which the host services never write: its
// config and state directories, the policy file and the audit log.
func (r *run) protected() []string {
	ps := append(statedir.Own(), r.o.Protected...)
	if r.o.Audit != nil {
		ps = append(ps, r.o.Audit.Path())
	}
	for i, p := range ps {
		if abs, err := filepath.Abs(p); err == nil && p != "" {
			ps[i] = abs
		}
	}
	return ps
}

// attacher is a session a user's terminal can take over.
type attacher interface {
	Attach(ctx context.Context, a driver.Attach) (driver.AttachEnd, error)
}

// attach gives the session to the user until they detach (and the agent
// is idle again) or the agent exits. Quitting the TUI normally is a clean
// end; a crash is the agent's error.
func (r *run) attach(ctx context.Context, sess Session) error {
	at, ok := sess.(attacher)
	if !ok {
		return exitcode.Usagef("the %s driver has no terminal UI to attach to: pass a prompt, or use --driver pty", r.driverName())
	}
	a := *r.o.Attach
	var detached atomic.Bool
	if r.audit != nil {
		r.audit.append(audit.KindAttach, sess.ID(), map[string]any{"detach": detachKeyName(a.DetachKey)})
		// The detach is recorded when the user detaches, so that what tai
		// decides after it (pickers the user left open) follows it in the
		// log.
		onDetach := a.OnDetach
		a.OnDetach = func() {
			detached.Store(true)
			r.audit.append(audit.KindDetach, sess.ID(), map[string]any{"end": string(driver.AttachDetached)})
			if onDetach != nil {
				onDetach()
			}
		}
	}
	end, err := at.Attach(ctx, a)
	if r.audit != nil && !detached.Load() {
		d := map[string]any{"end": string(end)}
		if err != nil {
			d["error"] = err.Error()
		}
		r.audit.append(audit.KindDetach, sess.ID(), d)
	}
	if cause := context.Cause(ctx); cause != nil {
		return cause
	}
	var exit *driver.AgentExitError
	if end == driver.AttachExited && errors.As(err, &exit) && exit.ExitCode == 0 {
		return nil
	}
	return err
}

// detachKeyName spells a control key the way users type it: ^].
func detachKeyName(k byte) string {
	if k == 0 {
		k = driver.DefaultDetachKey
	}
	if k < 0x20 {
		return "^" + string(rune(k+0x40))
	}
	return string(rune(k))
}

// interrupted prefers the interrupt or timeout as the reason a step failed.
func (r *run) interrupted(ctx context.Context, err error) error {
	if cause := context.Cause(ctx); cause != nil {
		return cause
	}
	return err
}

func (r *run) configure(ctx context.Context, sess Session) error {
	o := r.o
	mode, err := r.startMode(ctx, sess)
	if err != nil {
		return err
	}
	if mode != "" && mode != sess.CurrentMode() {
		if err := checkMode(mode, r.col.availableModes()); err != nil {
			return err
		}
		if r.modes != nil {
			r.modes.expect(sess.ID(), mode)
		}
		// The agent's answer is its report of the move (stream-json's
		// status message may come later); a later move away is the mode
		// guard's.
		if err := sess.SetMode(ctx, mode); err != nil {
			return err
		}
	}
	if o.Model != "" {
		if err := sess.SetModel(ctx, o.Model); err != nil {
			return fmt.Errorf("--model: %w", err)
		}
	}
	for _, kv := range o.Config {
		if err := sess.SetConfigOption(ctx, kv[0], kv[1]); err != nil {
			return fmt.Errorf("--set %s=%s: %w", kv[0], kv[1], err)
		}
	}
	return nil
}

// Control is a mode or model switch asked between turns.
type Control struct {
	Mode, Model string
	Reply       chan<- error // buffered: the runner never waits on it
}

// control applies a Control; a bad mode or model is the answer, not the
// end of the run.
func (r *run) control(ctx context.Context, sess Session, c Control) error {
	if c.Mode != "" {
		if err := checkMode(c.Mode, r.col.availableModes()); err != nil {
			return err
		}
		if err := r.allowedMode(ctx, sess, c.Mode, "mode"); err != nil {
			return err
		}
		if r.modes != nil {
			r.modes.expect(sess.ID(), c.Mode)
		}
		if err := sess.SetMode(ctx, c.Mode); err != nil {
			return err
		}
	}
	if c.Model != "" {
		if err := sess.SetModel(ctx, c.Model); err != nil {
			return fmt.Errorf("model %s: %w", c.Model, err)
		}
	}
	return nil
}

type turnOutcome struct {
	res driver.TurnResult
	err error
}

// turn runs one prompt; last says no prompt follows it in this run.
func (r *run) turn(ctx context.Context, sess Session, prompt []driver.Content, last bool) error {
	r.col.newTurn()
	// The turn's end is delivered when the turn closes here, after the late
	// window, however the turn ends.
	r.st.holdTurnEnd()
	defer r.st.releaseTurnEnd()
	r.st.newTurn()
	if r.audit != nil {
		r.audit.append(audit.KindPrompt, sess.ID(), promptText(prompt))
	}
	done := make(chan turnOutcome, 1)
	go func() {
		res, err := sess.Prompt(context.Background(), prompt)
		done <- turnOutcome{res, err}
	}()
	var out turnOutcome
	// grace runs from the agent's last notice that it retries a request
	// refused at a 429; at its end a turn still on that notice is parked.
	var grace *quartz.Timer
	var graceC <-chan time.Time
	defer func() {
		if grace != nil {
			grace.Stop()
		}
	}()
wait:
	for {
		select {
		case out = <-done:
			break wait
		case <-r.o.Interrupts:
			// The parent stops this turn only; the next prompt still runs.
			var killed bool
			if out, killed = r.stopTurn(sess, done, nil); killed {
				return fmt.Errorf("%s did not stop within %s of the interrupt", r.o.Agent, r.o.CancelGrace)
			}
			if cause := context.Cause(ctx); cause != nil {
				return cause
			}
			break wait
		case <-ctx.Done():
			// Ctrl-C, timeout or a park: the whole run ends, and what it
			// withdraws says why.
			r.stopTurn(sess, done, context.Cause(ctx))
			return context.Cause(ctx)
		case <-r.col.notices:
			d := r.o.Quota.RetryGrace
			if d <= 0 {
				d = DefaultRetryGrace
			}
			if grace == nil {
				grace = r.o.Clock.NewTimer(d, "runner", "quota-retry-grace")
				graceC = grace.C
			} else {
				grace.Reset(d, "runner", "quota-retry-grace")
			}
		case <-graceC:
			l, ok := r.col.retrying()
			if !ok {
				continue // the agent went on after its retry
			}
			// The agent waits out the limit in silence: stop the turn
			// (its session is kept) and park.
			_, killed := r.stopTurn(sess, done, &quota.Error{Limit: l})
			r.o.Logger.Info("the agent kept retrying a request refused at its limit; parking", "killed", killed)
			return &quota.Error{Limit: l}
		}
	}
	if out.err != nil {
		return r.limitOf(out.err)
	}
	// Some agents end the turn normally once their retries of a 429 ran
	// out, their report of it the turn's whole message (codex-acp,
	// Copilot CLI): a limit all the same.
	if out.res.StopReason == driver.StopEndTurn {
		if l, ok := quota.FromFinalMessage(r.col.turnMessage(), r.o.Clock.Now()); ok {
			return &quota.Error{Limit: l}
		}
	}
	if r.modes != nil {
		// The mode changes of the turn are decided on the guard's own
		// goroutine; a denied one is switched back before the turn ends.
		select {
		case <-r.modes.idle():
		case <-sess.Exited():
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	r.lateWindow(ctx, sess, last)
	return nil
}

// limitOf is err as a quota.Error when the turn failed on a limit: its
// error says so, or the agent's quota_update said a quota was used up
// before it failed (which also gives the reset time an error's words may
// lack).
func (r *run) limitOf(err error) error {
	hint, hinted := r.col.turnLimit()
	l, ok := quota.FromError(err, r.o.Clock.Now())
	switch {
	case ok && hinted && l.ResetsAt.IsZero():
		l.ResetsAt = hint.ResetsAt
	case !ok && hinted:
		l, ok = hint, true
		l.Message = err.Error()
	}
	if !ok {
		return err
	}
	return &quota.Error{Limit: l, Err: err}
}

// stopTurn cancels the running turn (pending permissions are answered
// cancelled, withdrawn with cause: why) and waits for it to end; an agent that ignores the cancel is
// killed CancelGrace after the cancel, or as soon as Kill closes (killed):
// the grace counts from the cancel, sending it included, and the kill
// skips the drivers' own graceful steps.
func (r *run) stopTurn(sess Session, done <-chan turnOutcome, cause error) (out turnOutcome, killed bool) {
	t := r.o.Clock.NewTimer(r.o.CancelGrace, "runner", "cancel-grace")
	defer t.Stop()
	cctx, cancel := context.WithCancel(context.Background())
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		if err := sess.Cancel(cctx, cause); err != nil {
			r.o.Logger.Debug("cancel failed", "err", err)
		}
	}()
	defer func() {
		cancel()
		<-sent
	}()
	select {
	case out = <-done:
		return out, false
	case <-t.C:
		r.o.Logger.Warn("agent did not stop after the cancel; killing it", "grace", r.o.CancelGrace)
	case <-r.o.Kill:
		r.o.Logger.Info("killing the agent without waiting for the cancel grace")
	}
	cancel()
	// A done context: Close kills at once.
	_ = sess.Close(cctx)
	return <-done, true
}

// finisher is a session that can be told no prompt is coming, so that its
// agent ends its output (Drained) once it has said all it will.
type finisher interface {
	Finish(ctx context.Context)
	Drained() <-chan struct{}
}

// lateWindow keeps the session open briefly after the turn: some agents
// send their last updates after the prompt response, and they belong to
// this turn. After the last turn an agent that can be finished is: the
// window ends as soon as it has closed its stdout or exited, and lasts
// only while it is alive and still sending.
func (r *run) lateWindow(ctx context.Context, sess Session, last bool) {
	var drained <-chan struct{}
	if f, ok := sess.(finisher); ok && last {
		f.Finish(ctx)
		drained = f.Drained()
	}
	deadline := r.o.Clock.Now().Add(4 * r.o.LateWindow)
	for {
		quiet := r.o.Clock.Since(r.st.lastEvent())
		if quiet >= r.o.LateWindow || !r.o.Clock.Now().Before(deadline) {
			return
		}
		t := r.o.Clock.NewTimer(r.o.LateWindow-quiet, "runner", "late")
		select {
		case <-t.C:
		case <-drained:
			t.Stop()
			return
		case <-sess.Exited():
			t.Stop()
			return
		}
	}
}

// elicitor wraps Options.Elicitor so that an elicitation nobody could
// answer under --non-interactive fail stops the run, as an ask does.
func (r *run) elicitor(onFail func(error)) driver.Elicitor {
	if r.o.Elicitor == nil {
		return nil
	}
	return elicitGuard{inner: r.o.Elicitor, onFail: onFail}
}

type elicitGuard struct {
	inner  driver.Elicitor
	onFail func(error)
}

func (g elicitGuard) Elicit(ctx context.Context, req driver.ElicitationRequest) (driver.ElicitationAnswer, error) {
	ans, err := g.inner.Elicit(ctx, req)
	if err != nil {
		g.onFail(err)
		ans.Action = driver.ElicitCancel
	}
	return ans, nil
}

// finish turns how the run ended into the Result's status and exit code.
func (r *run) finish(err error) Result {
	res := r.col.result()
	r.mu.Lock()
	promptFail := r.promptFail
	r.mu.Unlock()
	code := exitcode.Of(err)
	var pe *parkedError
	switch {
	case errors.As(err, &pe):
		code, res.Status = exitcode.Parked, "parked"
		p := pe.parked
		res.Parked = &p
	case promptFail != nil:
		code = exitcode.PermissionDenied
		res.Status = "denied"
		err = promptFail
	case err != nil:
		res.Status = statusOf(code)
	case res.StopReason == driver.StopRefusal:
		code, res.Status = exitcode.AgentError, "refused"
		err = errors.New("the agent refused the prompt")
	case len(res.Denials) > 0 && !r.o.AllowDenials:
		// Before the agent's own cancel: codex-acp's only reject option
		// ("abort") ends the turn with stop reason cancelled.
		code, res.Status = exitcode.PermissionDenied, "denied"
		err = fmt.Errorf("%d permission request(s) denied (pass --allow-denials to accept)", len(res.Denials))
	case res.StopReason == driver.StopCancelled:
		code, res.Status = exitcode.Interrupted, "cancelled"
		err = errors.New("the agent cancelled the turn")
	default:
		code, res.Status = exitcode.OK, "ok"
	}
	res.ExitCode = int(code)
	if err != nil {
		res.Error = err.Error()
	}
	return res
}

func statusOf(c exitcode.Code) string {
	switch c {
	case exitcode.Timeout:
		return "timeout"
	case exitcode.Interrupted:
		return "interrupted"
	case exitcode.OutputClosed:
		return "output_closed"
	case exitcode.NoSession:
		return "no_session"
	case exitcode.Usage:
		return "usage"
	case exitcode.PermissionDenied:
		return "denied"
	}
	return "error"
}

// promptText is what the audit log records of a prompt: its text and the
// files it links or embeds (by name, not content).
func promptText(p []driver.Content) map[string]any {
	var text []string
	var files []string
	for _, c := range p {
		if c.Type == "text" {
			text = append(text, c.Text)
		} else {
			files = append(files, c.URI)
		}
	}
	m := map[string]any{"text": strings.Join(text, "\n")}
	if len(files) > 0 {
		m["files"] = files
	}
	return m
}
