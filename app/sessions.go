package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/exitcode"
	"github.com/tai-dev/tai/internal/safetext"
	"github.com/tai-dev/tai/runner"
	"github.com/tai-dev/tai/sessions"
)

// sessionStore is where runs keep their session ids: TAI_SESSIONS_DIR if
// set (tests, sandboxes), else the state directory.
func sessionStore() *sessions.Store {
	if d := os.Getenv("TAI_SESSIONS_DIR"); d != "" {
		return sessions.Open(d)
	}
	return sessions.Open(sessions.DefaultDir())
}

// continueSession finds the session --continue resumes: the newest
// resumable one of this agent over this driver in this workspace.
func continueSession(ctx context.Context, workspace, agent string, drv driver.Name) (string, error) {
	r, err := sessionStore().Last(ctx, workspace, agent, string(drv))
	if errors.Is(err, sessions.ErrNone) {
		return "", exitcode.With(exitcode.NoSession, fmt.Errorf("--continue: no resumable %s session (driver %s) in %s; `tai sessions` lists what there is",
			agent, drv, workspace))
	}
	if err != nil {
		return "", exitcode.With(exitcode.NoSession, fmt.Errorf("--continue: %w", err))
	}
	return r.SessionID, nil
}

// recordSession keeps the run's session with its workspace, excerpt being
// its prompt's (promptExcerpt). A store that cannot be written costs the
// --continue of later runs, not this run's result: it is logged.
// recordStart adds to o a sink that keeps the session's record as soon as
// the session starts (status running), so that a run killed before its
// end (kill -9) is still listed and can be continued; recordSession then
// replaces it. The returned wait is for that first write, before the last.
func recordStart(o *runner.Options, logger *slog.Logger) (wait func()) {
	st := &startRecorder{o: o, logger: logger, done: make(chan struct{})}
	o.Sinks = append(o.Sinks, st)
	return func() {
		if st.started.Load() {
			<-st.done
		}
	}
}

// startRecorder writes the record off the event path: the prompt's
// excerpt needs a redactor, and the session's first updates must not wait
// on a disk.
type startRecorder struct {
	o       *runner.Options
	logger  *slog.Logger
	started atomic.Bool
	done    chan struct{}
}

func (s *startRecorder) Emit(ev driver.Event) {
	if ev.Type != driver.EventSessionStarted || ev.Started == nil || ev.Session == "" || !s.started.CompareAndSwap(false, true) {
		return
	}
	caps := ev.Started.Capabilities
	r := sessions.Record{
		Time: time.Now().UTC(), Workspace: s.o.Cwd, Agent: s.o.Agent, Driver: string(ev.Started.Driver), SessionID: ev.Session,
		RunID: s.o.RunID, Resumable: caps.LoadSession || caps.ResumeSession, Resumed: s.o.ResumeID,
		Status: sessions.StatusRunning, ExitCode: -1,
	}
	if r.Driver == "" {
		r.Driver = string(s.o.Driver)
	}
	go func() {
		defer close(s.done)
		r.Prompt = promptExcerpt(s.o.Prompt, s.o.Env)
		if err := sessionStore().Add(context.Background(), r); err != nil {
			s.logger.Warn("could not keep the session id with the workspace; --continue will not find it", "err", err)
		}
	}()
}

func recordSession(ctx context.Context, o runner.Options, res runner.Result, excerpt string, logger *slog.Logger) {
	if res.SessionID == "" {
		return
	}
	r := sessions.Record{
		Time: time.Now().UTC(), Workspace: o.Cwd, Agent: o.Agent, Driver: string(res.Driver), SessionID: res.SessionID,
		RunID: o.RunID, Resumable: res.Resumable, Resumed: o.ResumeID, Status: res.Status, ExitCode: res.ExitCode,
		Prompt: excerpt, Audit: res.Audit,
	}
	if r.Driver == "" {
		r.Driver = string(o.Driver)
	}
	if err := sessionStore().Add(ctx, r); err != nil {
		logger.Warn("could not keep the session id with the workspace; --continue will not find it", "err", err)
	}
}

// promptExcerpt is the prompt's first words with secrets of the
// environment masked, to tell sessions apart in a listing.
func promptExcerpt(prompt []driver.Content, env []string) string {
	var text string
	for _, c := range prompt {
		if c.Type == "text" {
			text = c.Text
			break
		}
	}
	text = strings.Join(strings.Fields(text), " ")
	if env == nil {
		env = os.Environ()
	}
	if red, err := newRedactor(env, nil, nil); err == nil {
		text = red.String(text)
	}
	if r := []rune(text); len(r) > 80 {
		text = string(r[:79]) + "…"
	}
	return text
}

// SessionsFlags are `tai sessions`' flags.
type SessionsFlags struct {
	Cwd   string
	Agent string
	// AgentCmd, with Agent or alone, asks this agent command (an ACP
	// agent) about its own sessions.
	AgentCmd string
	// Ask: list the agent's own sessions too (session/list); All drops
	// the workspace filter.
	Ask    bool
	All    bool
	JSON   bool
	Limit  int
	IDOnly bool
}

func sessionsWorkspace(dir string, std IO) (string, error) {
	if dir == "" {
		var err error
		if dir, err = std.Wd(); err != nil {
			return "", exitcode.With(exitcode.Usage, fmt.Errorf("sessions: %w", err))
		}
	}
	ws, err := filepath.Abs(dir)
	if err != nil {
		return "", exitcode.With(exitcode.Usage, fmt.Errorf("sessions: %w", err))
	}
	return ws, nil
}

// Sessions lists the sessions tai ran in a workspace, newest first; with
// Ask, next to the agent's own list.
func Sessions(ctx context.Context, f SessionsFlags, std IO) error {
	ws, err := sessionsWorkspace(f.Cwd, std)
	if err != nil {
		return err
	}
	recs, bad, err := sessionStore().List(ctx, ws)
	if err != nil {
		return exitcode.With(exitcode.AgentError, err) // the store says "sessions: "
	}
	if bad > 0 {
		warn(std, "sessions: skipped %d damaged line(s) in the store", bad)
	}
	if f.Ask {
		return agentSessions(ctx, f, ws, recs, std)
	}
	out := make([]sessions.Record, 0, len(recs))
	for i := len(recs) - 1; i >= 0; i-- {
		if f.Agent == "" || recs[i].Agent == f.Agent {
			out = append(out, recs[i])
		}
		if f.Limit > 0 && len(out) == f.Limit {
			break
		}
	}
	switch {
	case f.JSON:
		enc := json.NewEncoder(std.Out)
		enc.SetIndent("", "  ")
		_ = enc.Encode(out)
	case f.IDOnly:
		for _, r := range out {
			fmt.Fprintln(std.Out, r.SessionID)
		}
	default:
		if len(out) == 0 {
			fmt.Fprintf(std.Err, "no sessions in %s\n", ws)
			return nil
		}
		tout, flush := fitTerminal(std) // one row a line on a narrow terminal
		defer flush()
		tw := tabwriter.NewWriter(tout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "WHEN\tAGENT\tDRIVER\tSESSION\tSTATUS\tRESUMABLE\tPROMPT")
		for _, r := range out {
			res := "no"
			if r.Resumable {
				res = "yes"
			}
			l := safetext.Line // the session id is the agent's; the prompt may hold anything
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", sessionTime(r.Time), l(r.Agent), l(r.Driver),
				l(r.SessionID), l(string(r.Status)), res, l(r.Prompt))
		}
		tw.Flush()
	}
	return nil
}

// sessionTime is when a session was active, as every listing of sessions
// shows it (tai's records and the agent's own): local, to the minute.
func sessionTime(t time.Time) string { return t.Local().Format("2006-01-02 15:04") }

// agentTime is an agent's updated_at (RFC 3339) as sessionTime shows it;
// what is not such a time is shown as the agent said it, escaped.
func agentTime(s string) string {
	if t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(s)); err == nil {
		return sessionTime(t)
	}
	if s == "" {
		return "-"
	}
	return safetext.Line(s)
}
