// Package pty is tai's driver for agents that only have a terminal UI. It
// runs the TUI in a pseudo-terminal (package term: creack/pty + vt10x),
// reads the screen with the agent's profile (package profile) to know
// whether it is working, idle or waiting on a picker, types the prompt
// (bracketed paste when the app enabled it, a pause, then CR, confirmed by
// the agent starting to work), answers pickers through Host.Decider with
// exact keystrokes, and turns the screen into message and screen.delta
// events. Timing runs on the injected quartz clock.
package pty

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/tai-dev/tai/internal/lazyre"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/coder/quartz"

	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/driver/pty/profile"
	"github.com/tai-dev/tai/driver/pty/term"
	"github.com/tai-dev/tai/internal/agentproc"
	"github.com/tai-dev/tai/quota"
)

// Name is this driver's name in presets and the capability manifest.
const Name = driver.PTY

// Features are what the capability manifest lists for this driver.
var Features = []string{
	"tui", "status", "screen.delta", "bracketed_paste", "permission_picker", "trust_dialog",
	"cancel", "final_screen", "scrollback", "attach", "profiles:" + strings.Join(profile.Names(), ","),
}

// Config is a Launch plus the PTY driver's own knobs; zero values take
// the defaults.
type Config struct {
	driver.Launch
	Profile *profile.Profile // nil: by Agent name, else generic
	Cols    int
	Rows    int
	// Frame is how long the output must pause before the screen is read
	// (a half-drawn frame is not a state), capped by MaxFrame under a
	// continuous stream. agentapi: 16 ms / 48 ms.
	Frame    time.Duration
	MaxFrame time.Duration
	// Ready bounds the wait for the TUI's first idle screen.
	Ready time.Duration
	// Confirm is how long after a CR the driver waits for the agent to
	// take the prompt before pressing CR again, at most Retries times.
	Confirm time.Duration
	Retries int
	// StopGrace is the wait after SIGTERM before SIGKILL.
	StopGrace time.Duration
	// Record, if set, receives the raw output as a recording (see
	// ReadRecording).
	Record io.Writer
	// CPU samples the agent's process tree, the process-state signal of
	// the settle; nil reads /proc.
	CPU func(pid int) (agentproc.CPU, bool)
}

func (c *Config) defaults() {
	if c.Clock == nil {
		c.Clock = quartz.NewReal()
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Agent == "" && len(c.Argv) > 0 {
		c.Agent = filepath.Base(c.Argv[0])
	}
	if c.Profile == nil {
		if p, ok := profile.Builtin(c.Agent); ok {
			c.Profile = p
		} else {
			c.Profile, _ = profile.Builtin("generic")
		}
	}
	setDur := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	setDur(&c.Frame, 16*time.Millisecond)
	setDur(&c.MaxFrame, 48*time.Millisecond)
	setDur(&c.Ready, 120*time.Second)
	setDur(&c.Confirm, 3*time.Second)
	setDur(&c.StopGrace, 2*time.Second)
	if c.Retries <= 0 {
		c.Retries = 3
	}
}

// Session is a live TUI agent.
type Session struct {
	cfg   Config
	prof  *profile.Profile
	clock quartz.Clock
	log   *slog.Logger
	id    string
	proc  *term.Process
	start time.Time

	sig      chan struct{} // output arrived
	promptCh chan *turn
	cancelCh chan struct{}
	cause    atomic.Pointer[error] // the last Cancel's cause: why a picker's ask is withdrawn
	stop     chan struct{}         // Close was called
	stopOnce sync.Once
	exited   chan struct{} // the process is gone and the loop has ended
	ready    chan struct{}
	readyErr error

	mu      sync.Mutex
	lastOut time.Time
	final   term.Snapshot
	exitErr *driver.AgentExitError
	recMu   sync.Mutex
	// pubStatus is the loop's status for other goroutines; statusCh is
	// closed and replaced at every change.
	pubStatus string
	statusCh  chan struct{}

	// An attached user's terminal gets a copy of the output, and the loop
	// leaves pickers to them.
	mirrorMu sync.Mutex
	mirror   io.Writer
	attached atomic.Bool
	// The size tai runs the TUI at when nobody is attached.
	homeCols, homeRows int
	// keysTo, if set, takes the keys instead of the PTY (unit tests).
	keysTo io.Writer

	// Loop state (only the loop goroutine touches these).
	set      settler
	status   string
	verdict  profile.Verdict
	lastBody []string
	scroll   scrollback
	answered string    // signature of the picker last answered, until it goes
	pickSig  string    // signature of the picker on screen
	pickSeen time.Time // when it was first seen (for Profile.PickerDelay)
	confirm  int       // 1 + the option the highlight was moved to, to confirm once it shows there; 0 none
	// The answered picker's chosen option (its Esc: pickEsc), and when its
	// keys were last pressed (zero: none) and how often, to press them
	// again if the TUI shows no sign of having read them.
	pickTarget int
	pickEsc    bool
	pressedAt  time.Time
	presses    int
	// The screen as last read, and when it last changed: output that
	// leaves the text as it was (a cursor shown again, an empty
	// synchronized frame) is no sign that keys were read.
	lastLines []string
	changedAt time.Time
	reqSeq    int
	isReady   bool
	rawSeen   bool // the TUI has read keys in raw mode
	pasteSeen bool // with bracketed paste on
	keysGap   bool // it did, then the terminal went back to canonical mode (keysLost)
	// autoResume: the last turn ended on a limit and the TUI may offer to
	// resume by itself at the reset (Profile.AutoResume): the offer is
	// cancelled when it shows.
	autoResume bool
	gapPaste   bool // pasteSeen when the gap began
	cur        *turn
	pending    bool      // output not yet read into a verdict
	firstPend  time.Time // when the pending output began
}

// turn is one prompt in flight.
type turn struct {
	text      string
	done      chan turnResult
	phase     int // 0 wait idle, 1 pasted (CR due), 2 submitted, 3 running
	due       time.Time
	crAt      time.Time
	crs       int
	types     int // times the prompt was typed again (retype)
	echoed    bool
	before    []string
	idle      []string // the whole screen before the paste
	screen    []string // the whole screen at the submitting CR
	scrollAt  int      // scrollback rows (scrollback.total) at the CR
	cancelled bool
	stream    replyStream
}

const (
	phaseWait = iota
	phaseCR
	phaseSubmitted
	phaseRunning
)

type turnResult struct {
	res driver.TurnResult
	err error
}

// Launch starts the agent's TUI and returns once its first idle screen is
// up (trust dialogs on the way are decided by policy), so that Prompt can
// type at once.
func Launch(ctx context.Context, l driver.Launch) (*Session, error) {
	cfg := Config{Launch: l, Cols: l.Cols, Rows: l.Rows}
	if p := os.Getenv("TAI_PTY_RECORD"); p != "" {
		f, err := os.Create(p)
		if err != nil {
			return nil, fmt.Errorf("pty: TAI_PTY_RECORD: %w", err)
		}
		cfg.Record = f
	}
	return Start(ctx, cfg)
}

// Start is Launch with the driver's own settings.
func Start(ctx context.Context, cfg Config) (*Session, error) {
	if len(cfg.Argv) == 0 {
		return nil, errors.New("pty: no agent command")
	}
	cfg.defaults()
	if testSlowRead > 0 {
		cfg.Frame, cfg.MaxFrame = testSlowRead, 24*time.Hour
	}
	s := &Session{
		cfg: cfg, prof: cfg.Profile, clock: cfg.Clock, log: cfg.Logger.With("agent", cfg.Agent, "driver", Name),
		sig: make(chan struct{}, 1), promptCh: make(chan *turn), cancelCh: make(chan struct{}, 1),
		stop: make(chan struct{}), exited: make(chan struct{}), ready: make(chan struct{}),
		status: StatusUnknown, pubStatus: StatusUnknown, statusCh: make(chan struct{}),
	}
	s.set.quiet = s.prof.QuietWindow()
	s.id = cfg.Agent + "-" + randomID()
	s.start = s.clock.Now()
	if cfg.Record != nil {
		fmt.Fprintf(cfg.Record, "# tai pty recording v1 cols=%d rows=%d argv0=%s\n", cfg.Cols, cfg.Rows, filepath.Base(cfg.Argv[0]))
	}
	proc, err := term.Start(term.Options{
		Argv: cfg.Argv, Env: cfg.Env, Dir: cfg.Cwd, Cols: cfg.Cols, Rows: cfg.Rows,
		Output: s.output, Sandbox: cfg.Sandbox,
	})
	if err != nil {
		return nil, fmt.Errorf("pty: %w", err)
	}
	s.proc = proc
	cpu := cfg.CPU
	if cpu == nil {
		cpu = agentproc.CPUOf
	}
	s.set.probe = func() (agentproc.CPU, bool) { return cpu(proc.Pid()) }
	s.set.pending = func() bool {
		// Read after the probe: what the app wrote before it came to
		// rest is in the PTY, being applied, or already counted here.
		s.mu.Lock()
		lo := s.lastOut
		s.mu.Unlock()
		return lo.After(s.set.lastOut) || proc.OutputPending()
	}
	if snap := proc.Screen.Snapshot(); snap.Cols > 0 {
		s.homeCols, s.homeRows = snap.Cols, snap.Rows
	}
	s.log.Debug("agent started in a pty", "pid", proc.Pid(), "argv", cfg.Argv, "profile", s.prof.Name)
	s.emit(driver.Event{Type: driver.EventSessionStarted, Started: &driver.SessionStarted{
		Agent: cfg.Agent, Driver: Name, Cwd: cfg.Cwd, AgentName: s.prof.Name, Protocol: "pty",
	}})
	go s.loop()
	t := s.clock.NewTimer(cfg.Ready, "pty", "ready")
	defer t.Stop()
	select {
	case <-s.ready:
		if s.readyErr != nil {
			_ = s.Close(context.Background())
			return nil, s.readyErr
		}
		return s, nil
	case <-s.exited:
		return nil, s.exitError()
	case <-t.C:
		snap := s.proc.Screen.Snapshot()
		_ = s.Close(context.Background())
		return nil, fmt.Errorf("pty: %s showed no idle screen within %s; last screen:\n%s", cfg.Agent, cfg.Ready, lastRows(snap.Lines, 15))
	case <-ctx.Done():
		_ = s.Close(context.Background())
		return nil, fmt.Errorf("pty: waiting for %s to be ready: %w", cfg.Agent, context.Cause(ctx))
	}
}

func randomID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// output runs on the PTY reader goroutine for every chunk.
func (s *Session) output(p []byte) {
	now := s.clock.Now()
	s.mu.Lock()
	s.lastOut = now
	s.mu.Unlock()
	s.record("o", p)
	s.mirrorMu.Lock()
	if s.mirror != nil {
		_, _ = s.mirror.Write(p)
	}
	s.mirrorMu.Unlock()
	s.wake()
}

func (s *Session) record(kind string, p []byte) {
	if s.cfg.Record == nil {
		return
	}
	s.recMu.Lock()
	defer s.recMu.Unlock()
	fmt.Fprintf(s.cfg.Record, "%d %s %s\n", s.clock.Since(s.start).Microseconds(), kind, base64.StdEncoding.EncodeToString(p))
}

func (s *Session) emit(ev driver.Event) {
	ev.Session = s.id
	if s.cfg.Host.Sink != nil {
		s.cfg.Host.Sink.Emit(ev)
	}
}

// send writes keystrokes to the TUI.
func (s *Session) send(b string) error {
	s.record("i", []byte(b))
	var w io.Writer = s.proc
	if s.keysTo != nil {
		w = s.keysTo
	}
	_, err := w.Write([]byte(b))
	return err
}

// loop owns the session's state: it reads the screen after each frame of
// output, follows the turn, answers pickers and notices the exit.
func (s *Session) loop() {
	defer close(s.exited)
	wake := s.clock.NewTimer(time.Hour, "pty", "wake")
	defer wake.Stop()
	for {
		select {
		case <-s.sig:
			now := s.clock.Now()
			if !s.pending {
				s.pending, s.firstPend = true, now
			}
		case <-wake.C:
		case t := <-s.promptCh:
			if s.cur != nil {
				t.done <- turnResult{err: errors.New("pty: a turn is already running")}
				break
			}
			s.cur = t
		case <-s.cancelCh:
			if s.cur != nil && !s.cur.cancelled {
				s.cur.cancelled = true
				if s.cur.phase >= phaseSubmitted {
					_ = s.send(s.prof.CancelKeys)
				}
			}
		case <-s.proc.Done():
			s.finish()
			return
		}
		s.step()
		if next, ok := s.nextWake(); ok {
			wake.Reset(max(next.Sub(s.clock.Now()), time.Millisecond), "pty", "wake")
		}
	}
}

// step does whatever is due now.
func (s *Session) step() {
	now := s.clock.Now()
	s.mu.Lock()
	lastOut := s.lastOut
	s.mu.Unlock()
	s.set.output(lastOut)
	if s.pending {
		// Read the screen once the output pauses for a frame, or after
		// MaxFrame of continuous output.
		if now.Sub(lastOut) < s.cfg.Frame && now.Sub(s.firstPend) < s.cfg.MaxFrame {
			return
		}
		s.pending = false
	}
	s.evaluate(now)
}

func (s *Session) nextWake() (time.Time, bool) {
	var w wakeup
	now := s.clock.Now()
	s.screenWakeups(&w, now)
	s.turnWakeups(&w, now)
	return w.next, !w.next.IsZero()
}

// wakeup collects the earliest of the times something falls due.
type wakeup struct{ next time.Time }

func (w *wakeup) add(t time.Time) {
	if !t.IsZero() && (w.next.IsZero() || t.Before(w.next)) {
		w.next = t
	}
}

// screenWakeups are the times the screen must be read again whatever the
// turn: a frame, the quiet window, a picker, the process probe, a keys gap.
func (s *Session) screenWakeups(w *wakeup, now time.Time) {
	if s.pending {
		s.mu.Lock()
		lo := s.lastOut
		s.mu.Unlock()
		w.add(minTime(lo.Add(s.cfg.Frame), s.firstPend.Add(s.cfg.MaxFrame)))
	}
	// A quiet window already reached needs no wake-up (that evaluation
	// ran); past it, the process probe sets the pace.
	quietAt := s.set.quietAt()
	if (s.status == StatusUnknown || !s.isReady && (s.prof.ReadyQuiet || s.prof.StartQuiet)) && !s.set.lastOut.IsZero() && quietAt.After(now) {
		w.add(quietAt)
	}
	if s.pickSig != "" && s.pickSig != s.answered && !s.attached.Load() {
		// The evaluation that saw the picker waits until pickerDue. Wake
		// then, or at once when it has passed since: on a screen that
		// stays quiet, a wake-up only for a time still ahead would never
		// come, and the picker would wait forever.
		w.add(maxTime(s.pickerDue(), now))
	}
	if s.mayPressAgain() {
		w.add(s.pressedAt.Add(s.cfg.Confirm))
	}
	if t, ok := s.set.probeDue(); ok {
		w.add(t)
	}
	// A terminal back in canonical mode changes without output: look
	// again while a prompt or the ready screen waits on it.
	if s.keysGap && (!s.isReady || s.cur != nil && s.cur.phase == phaseWait) {
		w.add(now.Add(cookedPoll))
	}
}

// turnWakeups are the times the running turn is due: its CR, its retry,
// the quiet window of an echoed prompt, Profile.EndSettle.
func (s *Session) turnWakeups(w *wakeup, now time.Time) {
	t := s.cur
	if t == nil {
		return
	}
	quietAt := s.set.quietAt()
	if t.phase == phaseRunning && s.prof.EndSettle > 0 && s.status == StatusIdle {
		// An idle screen waiting out EndSettle; once it has passed, the
		// process probe (a screen wake-up) or the quiet window decides.
		if at := s.set.lastOut.Add(s.prof.EndSettle); at.After(now) {
			w.add(at)
		}
		if quietAt.After(now) {
			w.add(quietAt)
		}
	}
	if t.phase == phaseCR || t.phase == phaseSubmitted {
		if t.due.After(now) || t.phase == phaseCR {
			// (Past due, a submitted prompt waits on the settle's
			// verdict, whose wake-ups are the screen's.)
			w.add(t.due)
		}
		// An echoed prompt ends, and an emptied composer with no echo is
		// typed again (retype), once quiet.
		if (t.echoed || s.verdict.Composer == profile.ComposerEmpty) && quietAt.After(now) {
			w.add(quietAt)
		}
	}
}

// cookedPoll is how often the mode of a terminal in a keys gap is read.
const cookedPoll = 100 * time.Millisecond

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// keysLost reports whether keys typed now would be lost: the TUI read
// them in raw mode before, and the terminal went back to canonical mode,
// so no app reads them (gemini restarts itself after its trust dialog,
// its old idle screen still up, and the new process may take seconds to
// start on a busy machine). The gap lasts until a new process reads keys
// again: raw mode, and bracketed paste on again if the TUI had it on, as
// raw mode alone comes earlier (gemini's new process goes raw to read its
// terminal queries and drops the keys it reads meanwhile). A TUI that
// never went raw reads lines, and typing to it is fine.
func (s *Session) keysLost(snap term.Snapshot) bool {
	cooked, err := s.proc.KeysCooked()
	if err != nil {
		return false
	}
	switch {
	case !s.keysGap && !cooked:
		s.rawSeen = true
		s.pasteSeen = s.pasteSeen || snap.BracketedPaste
	case !s.keysGap && cooked && s.rawSeen:
		s.keysGap, s.gapPaste = true, s.pasteSeen
		s.log.Debug("pty: the terminal is back in canonical mode; no keys until a TUI reads them again")
	case s.keysGap && !cooked && (!s.gapPaste || snap.BracketedPaste):
		s.keysGap = false
	}
	return s.keysGap
}

// evaluate reads the screen and acts on it.
func (s *Session) evaluate(now time.Time) {
	snap, scrolled := s.proc.Screen.Take()
	s.scroll.take(scrolled)
	if !equalLines(snap.Lines, s.lastLines) {
		s.lastLines, s.changedAt = append(s.lastLines[:0], snap.Lines...), now
	}
	s.keysLost(snap)
	v := s.prof.Parse(snap.Lines)
	st := s.set.status(now, v)
	s.verdict = v
	s.setStatus(st, v)
	body := s.prof.Body(snap.Lines)
	s.delta(body)
	s.scroll.observe(body, len(scrolled.Rows) > 0)

	if s.onPicker(v, snap, now) {
		return
	}
	if s.cancelAutoResume(snap.Lines) {
		return
	}
	s.checkReady(st, v, now)
	t := s.cur
	if t == nil {
		return
	}
	switch t.phase {
	case phaseWait:
		s.turnWait(t, st, snap, now)
	case phaseCR:
		s.turnCR(t, body, snap, now)
	case phaseSubmitted:
		s.turnSubmitted(t, st, v, body, snap, now)
	case phaseRunning:
		s.turnRunning(t, st, body, now)
	}
}

// cancelAutoResume cancels the TUI's own resume at a limit's reset
// (claude's "Continuing automatically at 12:04pm · Esc to cancel") when it
// shows after a turn that ended on the limit, so that only the run resumes
// the session, within --wait-quota and --max-resumes: the TUI's own is
// unbounded, and both would send a turn. It says whether keys were sent.
func (s *Session) cancelAutoResume(lines []string) bool {
	if !s.autoResume || !s.prof.AutoResumes(lines) {
		return false
	}
	s.autoResume = false
	s.log.Info("pty: cancelling the agent's own resume at the reset: the run resumes it", "agent", s.cfg.Agent)
	_ = s.send(s.prof.CancelKeys)
	return true
}

// setStatus emits and publishes the coarse state when it changes.
func (s *Session) setStatus(st string, v profile.Verdict) {
	if st == s.status {
		return
	}
	s.status = st
	s.log.Debug("status", "state", st, "why", v.Why)
	s.emit(driver.Event{Type: driver.EventStatus, Status: &driver.Status{State: st}})
	s.publishStatus(st)
}

// onPicker answers a picker on screen, or waits for an answered one to go;
// it says whether the screen is the picker's (nothing else is done then).
func (s *Session) onPicker(v profile.Verdict, snap term.Snapshot, now time.Time) bool {
	if v.Picker == nil {
		s.answered, s.pickSig, s.confirm, s.pressedAt, s.presses = "", "", 0, time.Time{}, 0
		return false
	}
	if s.attached.Load() {
		return true // the user answers it
	}
	if sig := v.Picker.Signature(); sig != s.answered {
		if sig != s.pickSig {
			s.pickSig, s.pickSeen = sig, now
		}
		if now.Before(s.pickerDue()) {
			return true // keys now may be lost
		}
		s.answerPicker(v.Picker, snap)
		s.answered = sig
		return true
	}
	if s.confirm > 0 && v.Picker.Selected == s.confirm-1 {
		// The highlight is on the chosen option now: confirm it.
		s.confirm = 0
		s.pressedAt = now
		_ = s.send("\r")
	} else if s.mayPressAgain() && now.Sub(s.pressedAt) >= s.cfg.Confirm {
		// Not a byte of output since the keys: the TUI did not read
		// them (codex 0.160 drops a key that comes as its trust dialog
		// is drawn). Press them again, from the highlight it shows.
		s.log.Info("pty: the picker did not take the keys; pressing them again", "title", v.Picker.Title)
		s.presses++
		s.press(v.Picker, snap)
	}
	return true // answered; waiting for it to go
}

// checkReady declares the session ready at its first idle screen.
func (s *Session) checkReady(st string, v profile.Verdict, now time.Time) {
	if !s.isReady && st == StatusIdle && !s.keysGap && (!s.prof.ReadyOnScreen || v.State == profile.Idle) &&
		(!s.prof.ReadyQuiet || now.Sub(s.set.lastOut) >= s.set.quiet) {
		s.isReady = true
		close(s.ready)
	}
}

// turnWait pastes the prompt once the composer is idle.
func (s *Session) turnWait(t *turn, st string, snap term.Snapshot, now time.Time) {
	if t.cancelled {
		s.endTurn(driver.StopCancelled, "", nil)
		return
	}
	if st != StatusIdle || s.keysGap {
		return
	}
	// The idle screen before the prompt, for the reply fallback: its
	// composer and footer rows are chrome, not reply.
	t.idle = append([]string(nil), snap.Lines...)
	s.record("m", []byte("paste"))
	paste := t.text
	if snap.BracketedPaste {
		paste = "\x1b[200~" + paste + "\x1b[201~"
	} else {
		// Without bracketed paste a newline would submit early.
		paste = strings.ReplaceAll(paste, "\n", " ")
	}
	if err := s.send(paste); err != nil {
		s.endTurn("", "", err)
		return
	}
	t.phase, t.due = phaseCR, now.Add(s.prof.SubmitWait())
}

// turnCR submits the pasted prompt after the profile's wait.
func (s *Session) turnCR(t *turn, body []string, snap term.Snapshot, now time.Time) {
	if now.Before(t.due) {
		return
	}
	t.before = body
	t.screen = append([]string(nil), snap.Lines...)
	t.scrollAt = s.scroll.total()
	s.record("m", []byte("submit"))
	if err := s.send("\r"); err != nil {
		s.endTurn("", "", err)
		return
	}
	t.crs++
	t.phase, t.crAt, t.due = phaseSubmitted, now, now.Add(s.cfg.Confirm)
}

// turnSubmitted waits for the agent to take the prompt, pressing CR again
// if it was eaten.
func (s *Session) turnSubmitted(t *turn, st string, v profile.Verdict, body []string, snap term.Snapshot, now time.Time) {
	if st == StatusWorking || st == StatusWaiting {
		t.phase = phaseRunning
		return
	}
	// The prompt left the composer and the transcript changed, but no
	// working screen was seen: either the turn was faster than a
	// frame, or the agent has not started yet (the echo comes before
	// the spinner). Only quiescence can tell these apart, so an idle
	// screen ends the turn only after the quiet window, with the
	// agent's processes at rest: a TUI starved of CPU may not have
	// drawn its spinner yet.
	if v.Composer != profile.ComposerDraft && !equalLines(body, t.before) && s.started(t, v, body, snap) {
		t.echoed = true
		if st == StatusIdle && now.Sub(s.set.lastOut) >= s.set.quiet && s.set.byProcess(now) == StatusIdle {
			s.maybeEnd(st, body)
		}
		return
	}
	// Nothing on screen changed. The CR went unread only if the app is
	// at rest: an app that takes a prompt without showing it (a shell
	// script that computes before it prints) is told from one that ate
	// the CR by the settle, whose process probe needs the quiet window
	// and probeGap after the CR's echo, and on a busy machine more: a CR
	// pressed again before its verdict (Confirm is only a little longer)
	// was typed into the app as a second, empty prompt.
	if now.Before(t.due) || st != StatusIdle {
		return
	}
	if v.Composer == profile.ComposerEmpty {
		s.retype(t, snap, now)
		return
	}
	if t.crs > s.cfg.Retries {
		s.endTurn("", "", fmt.Errorf("pty: %s did not take the prompt after %d CRs; last screen:\n%s", s.cfg.Agent, t.crs, lastRows(snap.Lines, 15)))
		return
	}
	// Not taken: the CR was eaten (it arrived inside a paste, or the
	// app was busy). Press it again.
	s.log.Debug("pty: the prompt was not taken; pressing CR again", "crs", t.crs)
	if err := s.send("\r"); err != nil {
		s.endTurn("", "", err)
		return
	}
	t.crs++
	t.due = now.Add(s.cfg.Confirm)
}

// started says whether the screen shows that the agent took the prompt
// when no working screen was seen: its echo in the transcript, or a reply.
// A transcript that changed is no such sign by itself: a TUI still
// starting redraws (opencode, on a busy machine, took the paste before
// its input was up, lost it, then drew its home screen again), and a turn
// read as over then ended end_turn with nothing done. A composer the
// profile cannot read may still hold the prompt, so there a change is all
// there is to go on.
func (s *Session) started(t *turn, v profile.Verdict, body []string, snap term.Snapshot) bool {
	if v.Composer == profile.ComposerUnknown {
		return true
	}
	if s.prof.Reply(t.before, s.transcript(t, body), t.text) != "" {
		return true
	}
	head := []rune(strings.Join(strings.Fields(t.text), " "))
	head = head[:min(len(head), 16)]
	for _, rows := range [][]string{s.scroll.since(t.scrollAt), snap.Lines} {
		for _, l := range rows {
			if strings.Contains(strings.Join(strings.Fields(l), " "), string(head)) {
				return true
			}
		}
	}
	return false
}

// retype types the prompt again when it is gone from an empty composer
// with no sign the agent took it (typed before the TUI read its input),
// once the app is at rest: one that cleared its box and has not drawn the
// echo yet (starved of CPU) must not get the prompt twice. After Retries
// the turn fails: a turn with no sign it started is not end_turn.
func (s *Session) retype(t *turn, snap term.Snapshot, now time.Time) {
	if now.Sub(s.set.lastOut) < s.set.quiet || s.set.byProcess(now) != StatusIdle {
		return
	}
	if t.types >= s.cfg.Retries {
		s.endTurn("", "", fmt.Errorf("pty: %s showed no sign of taking the prompt after typing it %d times; last screen:\n%s", s.cfg.Agent, t.types+1, lastRows(snap.Lines, 15)))
		return
	}
	t.types++
	s.log.Info("pty: the prompt is gone from the input with no sign the agent took it; typing it again", "times", t.types)
	t.phase = phaseWait
	s.turnWait(t, StatusIdle, snap, now)
}

// turnRunning streams the reply as the TUI writes it, until idle.
func (s *Session) turnRunning(t *turn, st string, body []string, now time.Time) {
	if d := t.stream.next(s.prof.Reply(t.before, s.transcript(t, body), t.text)); d != "" {
		s.emit(driver.Event{Type: driver.EventMessage, Message: &driver.MessageChunk{Role: driver.RoleAgent, MessageID: t.stream.id, Text: d}})
	}
	if st == StatusIdle && !s.endSettled(now) {
		return
	}
	s.maybeEnd(st, body)
}

// endSettled says whether an idle screen may end the turn under
// Profile.EndSettle: the output paused that long and the process tree is
// at rest (a TUI still typing its reply out, starved of CPU, is runnable),
// or quiescence was reached.
func (s *Session) endSettled(now time.Time) bool {
	if s.prof.EndSettle <= 0 {
		return true
	}
	quiet := now.Sub(s.set.lastOut)
	switch {
	case quiet >= s.set.quiet:
		return true
	case quiet < s.prof.EndSettle:
		return false
	}
	return s.set.byProcess(now) == StatusIdle
}

// transcript is the turn's part of the transcript: the rows that
// scrolled off since its prompt was submitted, then body. A reply longer
// than the screen is read whole from it, however rarely the screen was
// read while it scrolled.
func (s *Session) transcript(t *turn, body []string) []string {
	off := s.scroll.since(t.scrollAt)
	if len(off) == 0 {
		return body
	}
	return append(slices.Clip(off), body...)
}

// testSlowRead, if set, is how long the output must pause before the
// screen is read, with no cap under a continuous stream: a reader slower
// than any loaded machine's, for tests; set through
// TAI_TEST_PTY_SLOW_READ only in binaries built with the tai_testhooks
// tag.
var testSlowRead time.Duration

// testProfileMiss makes every turn's reply a profile miss, read by the
// fallback, for tests; set through TAI_TEST_PTY_PROFILE_MISS only in
// binaries built with the tai_testhooks tag.
var testProfileMiss bool

func (s *Session) maybeEnd(st string, body []string) {
	t := s.cur
	if st != StatusIdle || s.verdict.Composer == profile.ComposerDraft {
		return
	}
	stop := driver.StopEndTurn
	if t.cancelled {
		stop = driver.StopCancelled
	}
	s.scroll.settle()
	transcript := s.transcript(t, body)
	reply, src := s.prof.Reply(t.before, transcript, t.text), driver.ReplyProfile
	limit, limited := s.prof.Limit(t.before, transcript, s.clock.Now())
	if !t.cancelled && (testProfileMiss || profile.Implausible(reply, t.text)) {
		// A release the profile was not tuned to: read the reply from
		// what changed on screen instead.
		snap := s.proc.Screen.Snapshot()
		if fb := profile.FallbackReply(profile.Turn{Idle: t.idle, Submit: t.screen, Scrolled: s.scroll.since(t.scrollAt),
			End: snap.Lines, Prompt: t.text, Notices: s.prof.Notices}); fb != "" {
			s.log.Info("pty: the profile found no reply; using the screen diff", "agent", s.cfg.Agent)
			reply, src = fb, driver.ReplyFallback
			if !limited {
				limit, limited = profile.FallbackLimit(fb, s.clock.Now())
			}
		}
	}
	if reply == "" {
		src = ""
	}
	if limited && !t.cancelled {
		// The TUI's provider refused the turn at a limit: the turn ends
		// on it (the runner parks, or waits and types the continue
		// prompt into this same session), its text kept as the reply.
		s.log.Info("pty: the turn ended on a usage limit", "agent", s.cfg.Agent, "limit", limit.Message, "resets_at", limit.ResetsAt)
		s.autoResume = s.prof.AutoResume != nil
		s.endTurnErr(reply, &quota.Error{Limit: limit})
		s.cancelAutoResume(s.proc.Screen.Snapshot().Lines)
		return
	}
	s.endTurnFrom(stop, reply, src)
}

// endTurnErr ends the turn with err, after the reply the screen shows.
func (s *Session) endTurnErr(reply string, err error) {
	t := s.cur
	s.cur = nil
	s.record("m", []byte("turn-end"))
	if text, replace := t.stream.final(reply); text != "" || replace {
		s.emit(driver.Event{Type: driver.EventMessage, Message: &driver.MessageChunk{Role: driver.RoleAgent, MessageID: t.stream.id, Text: text, Replace: replace}})
	}
	t.done <- turnResult{err: err}
}

func (s *Session) endTurn(stop, reply string, err error) {
	if err != nil {
		t := s.cur
		s.cur = nil
		t.done <- turnResult{err: err}
		return
	}
	src := driver.ReplyProfile
	if reply == "" {
		src = ""
	}
	s.endTurnFrom(stop, reply, src)
}

// endTurnFrom ends the turn with its reply and where the reply was read.
func (s *Session) endTurnFrom(stop, reply string, src driver.ReplySource) {
	t := s.cur
	s.cur = nil
	s.record("m", []byte("turn-end"))
	// What streamed during the turn, completed (or replaced) by the reply
	// the final screen shows.
	if text, replace := t.stream.final(reply); text != "" || replace {
		s.emit(driver.Event{Type: driver.EventMessage, Message: &driver.MessageChunk{Role: driver.RoleAgent, MessageID: t.stream.id, Text: text, Replace: replace}})
	}
	s.emit(driver.Event{Type: driver.EventTurnEnded, Turn: &driver.TurnEnded{StopReason: stop, ReplySource: src}})
	t.done <- turnResult{res: driver.TurnResult{StopReason: stop}}
}

// delta emits the transcript rows that changed since the last frame.
func (s *Session) delta(body []string) {
	from := 0
	for from < len(body) && from < len(s.lastBody) && body[from] == s.lastBody[from] {
		from++
	}
	if from == len(body) && len(body) == len(s.lastBody) {
		return
	}
	lines := append([]string{}, body[from:]...)
	s.lastBody = append(s.lastBody[:0], body...)
	s.emit(driver.Event{Type: driver.EventScreenDelta, Screen: &driver.ScreenDelta{From: from, Lines: lines}})
}

// answerPicker asks the policy and presses the keys of the chosen option.
// A question (options neither allow nor deny) cannot be decided by policy:
// the turn fails, saying what was asked, instead of hanging.
func (s *Session) answerPicker(pk *profile.Picker, snap term.Snapshot) {
	s.pressedAt, s.confirm = time.Time{}, 0
	if pk.Kind == profile.PickerQuestion {
		s.unanswerable(pk)
		return
	}
	dec := s.decidePicker(s.pickerRequest(pk))
	target := pickerTarget(pk, dec)
	if target < 0 {
		return
	}
	s.pickTarget, s.presses = target, 1
	s.pickEsc = s.prof.EscOption && escLabel().MatchString(pk.Options[target].Label)
	s.press(pk, snap)
}

// pickerQuietCap bounds the wait for Profile.PickerQuiet, in multiples of
// it: a picker over a screen that never stops moving (a spinner elsewhere)
// is still answered.
const pickerQuietCap = 4

// pickerDue is when the picker on screen may be answered: it has been up
// for Profile.PickerDelay; before the first idle screen, under StartQuiet,
// the output has paused for the quiet window; under PickerQuiet, the
// output has paused that long (or the picker has been up pickerQuietCap
// times that).
func (s *Session) pickerDue() time.Time {
	due := s.pickSeen.Add(s.prof.PickerDelay)
	if !s.isReady && s.prof.StartQuiet {
		due = maxTime(due, s.set.lastOut.Add(s.set.quiet))
	}
	if q := s.prof.PickerQuiet; q > 0 {
		due = maxTime(due, minTime(s.set.lastOut.Add(q), s.pickSeen.Add(pickerQuietCap*q)))
	}
	return due
}

// unanswerable fails the turn (or the start) on a question policy cannot
// answer.
func (s *Session) unanswerable(pk *profile.Picker) {
	msg := fmt.Sprintf("%s asks a question tai cannot answer by policy: %s", s.cfg.Agent, pk.Title)
	s.emit(driver.Event{Type: driver.EventError, Error: &driver.ErrorInfo{Code: "unanswerable_picker", Message: msg}})
	if s.cur != nil {
		s.endTurn("", "", errors.New("pty: "+msg))
	} else if !s.isReady {
		s.readyErr = errors.New("pty: " + msg)
		s.isReady = true
		close(s.ready)
	}
}

// pickerRequest is the permission request a picker on screen asks.
func (s *Session) pickerRequest(pk *profile.Picker) driver.PermissionRequest {
	s.reqSeq++
	reqID := strconv.Itoa(s.reqSeq)
	tc := driver.ToolCall{ID: "pty-" + reqID, Title: pk.Title, Kind: pk.ToolKind, Status: "pending"}
	if pk.Kind == profile.PickerTrust {
		tc.Title = "Trust folder " + s.cfg.Cwd
		if pk.Title != "" {
			tc.Title += " (" + pk.Title + ")"
		}
		tc.Locations = []driver.Location{{Path: s.cfg.Cwd}}
	} else if pk.Path != "" {
		p := pk.Path
		if !filepath.IsAbs(p) {
			p = filepath.Join(s.cfg.Cwd, p)
		}
		tc.Locations = []driver.Location{{Path: p}}
	}
	if len(pk.Context) > 0 {
		raw, _ := json.Marshal(map[string]any{"screen": pk.Context, "picker": string(pk.Kind)})
		tc.RawInput = raw
	}
	req := driver.PermissionRequest{ID: reqID, Session: s.id, ToolCall: tc}
	for _, o := range pk.Options {
		if o.Kind == "" {
			continue
		}
		req.Options = append(req.Options, driver.PermissionOption{ID: o.Number, Name: o.Label, Kind: o.Kind})
	}
	return req
}

// decidePicker asks the decider, cancelled if the session stops (saying
// why its turn was cancelled, if it was).
func (s *Session) decidePicker(req driver.PermissionRequest) driver.PermissionDecision {
	ctx, cancel := context.WithCancelCause(context.Background())
	go func() {
		select {
		case <-s.stop:
			var why error
			if c := s.cause.Load(); c != nil {
				why = *c
			}
			cancel(why)
		case <-ctx.Done():
		}
	}()
	dec, _ := driver.AskPermission(ctx, s.cfg.Host.Decider, s.emit, req, nil)
	cancel(nil)
	return dec
}

// pickerTarget is the index of the option the decision chose, or -1. A
// cancelled decision picks the picker's own way out: its reject.
func pickerTarget(pk *profile.Picker, dec driver.PermissionDecision) int {
	target := -1
	for i, o := range pk.Options {
		if dec.Outcome == driver.OutcomeSelected && o.Number == dec.OptionID && o.Number != "" {
			target = i
		}
	}
	if target < 0 {
		for i, o := range pk.Options {
			if target < 0 && (o.Kind == driver.OptionRejectOnce || o.Kind == driver.OptionRejectAlways) {
				target = i
			}
		}
	}
	return target
}

// press sends the keys that pick the answered picker's chosen option
// from the highlight pk shows.
func (s *Session) press(pk *profile.Picker, snap term.Snapshot) {
	s.pressedAt = s.clock.Now()
	if s.pickEsc {
		_ = s.send("\x1b")
		return
	}
	keys := pickKeys(pk.Selected, s.pickTarget, snap.AppCursor, pk.Horizontal)
	if s.pickTarget == pk.Selected || pk.Horizontal {
		// Nothing to move, or a highlight the screen text does not show
		// (opencode's colour): keys and Enter at once.
		_ = s.send(keys)
		return
	}
	// The arrows now, the Enter once the screen shows the highlight on the
	// target (evaluate): an Enter on an unverified highlight could pick
	// another option than the policy chose (Claude Code, starting, redraws
	// its trust dialog with the first option highlighted again, and an
	// arrow typed before is lost).
	s.confirm = s.pickTarget + 1
	_ = s.send(strings.TrimSuffix(keys, "\r"))
}

// mayPressAgain says whether the answered picker's keys went unread so
// far: pressed, the screen unchanged since, and not pressed Retries times
// again already. A TUI that reads a key redraws (the picker goes, or its
// highlight moves); codex also writes frames that change nothing, and a
// key it dropped while draining its input was never pressed again.
func (s *Session) mayPressAgain() bool {
	return !s.pressedAt.IsZero() && s.pickSig == s.answered && !s.changedAt.After(s.pressedAt) && s.presses <= s.cfg.Retries
}

// escLabel marks an option whose key is Esc: "No, and tell Copilot what
// to do differently (Esc to stop)".
var escLabel = lazyre.New(`(?i)\(esc\b`)

// pickKeys moves the highlight from the selected option to the target
// with arrow keys and confirms with Enter: the same keystrokes for
// numbered and arrow-only lists, and no digit that an app might read as
// "select and confirm" differently.
func pickKeys(selected, target int, appCursor, horizontal bool) string {
	up, down := "\x1b[A", "\x1b[B"
	if horizontal {
		up, down = "\x1b[D", "\x1b[C"
	}
	if appCursor {
		up, down = "\x1bO"+up[2:], "\x1bO"+down[2:]
	}
	var b strings.Builder
	for i := selected; i < target; i++ {
		b.WriteString(down)
	}
	for i := selected; i > target; i-- {
		b.WriteString(up)
	}
	b.WriteString("\r")
	return b.String()
}

func equalLines(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func lastRows(lines []string, n int) string {
	end := len(lines)
	for end > 0 && strings.TrimSpace(lines[end-1]) == "" {
		end--
	}
	return strings.Join(lines[max(0, end-n):end], "\n")
}

// finish runs when the process is gone: the turn in flight ends (cancelled
// if tai cancelled it, else with the exit as its error), the exit and the
// final screen are emitted.
func (s *Session) finish() {
	ps, _ := s.proc.ExitState()
	code, sig := -1, ""
	if ps != nil {
		if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			sig = ws.Signal().String()
		} else {
			code = ps.ExitCode()
		}
	}
	snap, scrolled := s.proc.Screen.Take()
	s.mu.Lock()
	s.final = snap
	s.exitErr = &driver.AgentExitError{ExitCode: code, Signal: sig, Stderr: lastRows(snap.Lines, 20)}
	s.mu.Unlock()
	if t := s.cur; t != nil {
		if t.cancelled {
			s.endTurn(driver.StopCancelled, "", nil)
		} else {
			s.endTurn("", "", s.exitErr)
		}
	}
	pe := &driver.ProcessExit{Pid: s.proc.Pid(), Signal: sig}
	if sig == "" {
		pe.ExitCode = &code
	}
	s.emit(driver.Event{Type: driver.EventProcessExited, Process: pe})
	// The rows that scrolled off the top go with the last screen, so the
	// record of a long session is whole.
	s.scroll.take(scrolled)
	s.scroll.settle()
	s.scroll.observe(s.prof.Body(snap.Lines), len(scrolled.Rows) > 0)
	s.emit(driver.Event{Type: driver.EventScreenFinal, FinalScreen: &driver.FinalScreen{Cols: snap.Cols, Rows: snap.Rows,
		Cursor: []int{snap.CursorX, snap.CursorY}, AltScreen: snap.AltScreen, Text: snap.Text(),
		Scrollback: slices.Clone(s.scroll.lines), ScrollbackDropped: s.scroll.dropped}})
	if !s.isReady {
		s.isReady = true
		close(s.ready)
	}
}

func (s *Session) exitError() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.exitErr == nil {
		return errors.New("pty: agent exited")
	}
	return s.exitErr
}

// ID is the session id (tai's own: a TUI has none to offer).
func (s *Session) ID() string { return s.id }

// Capabilities: a TUI offers none of ACP's session features.
func (s *Session) Capabilities() driver.Capabilities { return driver.Capabilities{} }

// Prompt types the prompt when the agent is idle and returns when the
// agent is idle again (or the turn was cancelled, or the agent died).
func (s *Session) Prompt(ctx context.Context, prompt []driver.Content) (driver.TurnResult, error) {
	var parts []string
	for _, c := range prompt {
		switch c.Type {
		case "text":
			parts = append(parts, c.Text)
		default:
			// A TUI takes @path mentions for files.
			if p, ok := strings.CutPrefix(c.URI, "file://"); ok {
				parts = append(parts, "@"+p)
			}
		}
	}
	text := strings.TrimSpace(strings.Join(parts, " "))
	if text == "" {
		return driver.TurnResult{}, fmt.Errorf("pty: %w: empty prompt", driver.ErrBadValue)
	}
	t := &turn{text: text, done: make(chan turnResult, 1), stream: replyStream{id: "pty-reply-" + randomID()}}
	select {
	case s.promptCh <- t:
	case <-s.exited:
		return driver.TurnResult{}, s.exitError()
	case <-ctx.Done():
		return driver.TurnResult{}, ctx.Err()
	}
	select {
	case r := <-t.done:
		return r.res, r.err
	case <-ctx.Done():
		_ = s.Cancel(context.Background(), context.Cause(ctx))
		r := <-t.done
		return r.res, r.err
	}
}

// Cancel presses the profile's cancel keys (Esc for most) during a turn;
// a picker's ask withdrawn after it says cause.
func (s *Session) Cancel(ctx context.Context, cause error) error {
	if cause != nil {
		s.cause.Store(&cause)
	}
	select {
	case s.cancelCh <- struct{}{}:
	default:
	}
	return nil
}

// SetMode is not supported: TUI modes are keystroke cycles (shift+tab)
// whose state tai cannot read reliably.
func (s *Session) SetMode(ctx context.Context, modeID string) error {
	return fmt.Errorf("pty: set mode %q: %w", modeID, driver.ErrUnsupported)
}

// SetModel is not supported: pass the agent's own flag in its command.
func (s *Session) SetModel(ctx context.Context, model string) error {
	return fmt.Errorf("pty: set model %q: %w", model, driver.ErrUnsupported)
}

// SetConfigOption is not supported.
func (s *Session) SetConfigOption(ctx context.Context, id, value string) error {
	return fmt.Errorf("pty: set %s: %w", id, driver.ErrUnsupported)
}

// CurrentMode is unknown for a TUI.
func (s *Session) CurrentMode() string { return "" }

// Exited is closed once the agent process is gone.
func (s *Session) Exited() <-chan struct{} { return s.exited }

// Pid is the agent's pid, also its process group.
func (s *Session) Pid() int { return s.proc.Pid() }

// FinalScreen is the screen as the agent left it (valid after Exited).
func (s *Session) FinalScreen() term.Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.final
}

// Screen is the current screen.
func (s *Session) Screen() term.Snapshot { return s.proc.Screen.Snapshot() }

// Close stops the agent: SIGHUP and SIGTERM to its process group (a TUI
// whose terminal goes away gets SIGHUP anyway), SIGKILL after StopGrace,
// then waits for the loop to emit the exit and the final screen.
func (s *Session) Close(ctx context.Context) error {
	s.stopOnce.Do(func() { close(s.stop) })
	select {
	case <-s.exited:
		return nil
	default:
	}
	s.proc.Signal(syscall.SIGHUP)
	s.proc.Signal(syscall.SIGTERM)
	t := s.clock.NewTimer(s.cfg.StopGrace, "pty", "stop-grace")
	defer t.Stop()
	select {
	case <-s.exited:
		return nil
	case <-t.C:
	case <-ctx.Done():
	}
	kt := s.clock.NewTimer(s.cfg.StopGrace, "pty", "kill")
	defer kt.Stop()
	s.proc.Kill(kt.C)
	<-s.exited
	return nil
}
