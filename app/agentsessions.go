package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/tai-dev/tai/agentspec"
	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/driver/acp"
	"github.com/tai-dev/tai/exitcode"
	"github.com/tai-dev/tai/internal/safetext"
	"github.com/tai-dev/tai/internal/statedir"
	"github.com/tai-dev/tai/sessions"
)

// agentSessionTimeout bounds a launch that only lists or deletes.
const agentSessionTimeout = 2 * time.Minute

// connectAgent launches an ACP agent and stops after initialize: the
// connection then asks the agent about its own sessions.
func connectAgent(ctx context.Context, f SessionsFlags, std IO) (*acp.Session, string, error) {
	r, err := resolveRun(RunOptions{Flags: RunFlags{Agent: f.Agent, AgentCmd: f.AgentCmd, Cwd: f.Cwd, Driver: string(driver.ACP)}, IO: std})
	if err != nil {
		return nil, "", err
	}
	p, argv := r.agent.Preset, r.agent.Argv
	if p.Driver != "" && p.Driver != driver.ACP && f.AgentCmd == "" {
		return nil, "", exitcode.Usagef("agent %s is driven over %s: only ACP agents list their sessions (session/list)", p.Name, p.Driver)
	}
	var env []string
	if agentspec.IsTai(argv) {
		// tai as the agent keeps its state where tai run puts it.
		env = append(std.Env(), "XDG_STATE_HOME="+statedir.Agents())
	}
	s, err := acp.Start(ctx, acp.Config{Argv: argv, Env: env, Cwd: f.Cwd, Agent: p.Name, NoSession: true, ClientVersion: Version,
		Quirks: p.Quirks, Logger: newLogger(std.Err, false),
		Host: driver.Host{Sink: discardSink{}}})
	if err != nil {
		return nil, "", fmt.Errorf("starting %s: %w", p.Name, err)
	}
	return s, p.Name, nil
}

type discardSink struct{}

func (discardSink) Emit(driver.Event) {}

// agentSession is one of the agent's sessions as `tai sessions --agent`
// shows it: what the agent says, and whether tai ran it.
type agentSession struct {
	driver.SessionSummary
	Recorded bool `json:"recorded"` // tai ran it (it is in tai's session record)
}

// agentListing is `tai sessions --agent NAME --json`.
type agentListing struct {
	Agent    string            `json:"agent"`
	Cwd      string            `json:"cwd,omitempty"` // the filter; absent with --all
	Sessions []agentSession    `json:"sessions"`      // the agent's own list, every page
	Recorded []sessions.Record `json:"recorded"`      // tai's records of this agent in the workspace
}

// agentSessions lists the agent's own sessions (session/list, every page)
// next to tai's records.
func agentSessions(ctx context.Context, f SessionsFlags, ws string, recs []sessions.Record, std IO) error {
	ctx, cancel := context.WithTimeout(ctx, agentSessionTimeout)
	defer cancel()
	f.Cwd = ws
	s, name, err := connectAgent(ctx, f, std)
	if err != nil {
		return err
	}
	defer s.Close(context.Background())
	filter := ws
	if f.All {
		filter = ""
	}
	list, err := s.ListSessions(ctx, filter)
	if errors.Is(err, driver.ErrUnsupported) {
		return exitcode.Usagef("sessions --agent: %s does not list its sessions (no session/list)", name)
	}
	if err != nil {
		return exitcode.With(exitcode.AgentError, fmt.Errorf("sessions --agent %s: %w", name, err))
	}
	out := agentListing{Agent: name, Cwd: filter, Sessions: []agentSession{}, Recorded: []sessions.Record{}}
	ran := map[string]bool{}
	for i := len(recs) - 1; i >= 0; i-- {
		if recs[i].Agent == name {
			out.Recorded = append(out.Recorded, recs[i])
			ran[recs[i].SessionID] = true
		}
	}
	for _, si := range list {
		out.Sessions = append(out.Sessions, agentSession{SessionSummary: si, Recorded: ran[si.ID]})
	}
	switch {
	case f.JSON:
		enc := json.NewEncoder(std.Out)
		enc.SetIndent("", "  ")
		_ = enc.Encode(out)
	case f.IDOnly:
		for _, a := range out.Sessions {
			fmt.Fprintln(std.Out, a.ID)
		}
	default:
		fmt.Fprintf(std.Out, "%s's own sessions (%d):\n", name, len(out.Sessions))
		l := safetext.Line
		tw := tabwriter.NewWriter(std.Out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "UPDATED\tSESSION\tTAI\tTITLE\tCWD")
		for _, a := range out.Sessions {
			byTai := "-"
			if a.Recorded {
				byTai = "ran"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", agentTime(a.UpdatedAt), l(a.ID), byTai, l(a.Title), l(a.Cwd)) // the agent's words: escaped
		}
		tw.Flush()
		listed := map[string]bool{}
		for _, a := range out.Sessions {
			listed[a.ID] = true
		}
		var only []sessions.Record
		for _, r := range out.Recorded {
			if !listed[r.SessionID] && !slices.ContainsFunc(only, func(x sessions.Record) bool { return x.SessionID == r.SessionID }) {
				only = append(only, r)
			}
		}
		if len(only) > 0 {
			fmt.Fprintf(std.Out, "\nrecorded by tai but not listed by %s (%d):\n", name, len(only))
			tw = tabwriter.NewWriter(std.Out, 0, 4, 2, ' ', 0)
			for _, r := range only {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", sessionTime(r.Time), l(r.SessionID), l(string(r.Status)), l(r.Prompt))
			}
			tw.Flush()
		}
	}
	return nil
}

// SessionsRm deletes one of the agent's sessions (session/delete).
func SessionsRm(ctx context.Context, f SessionsFlags, id string, std IO) error {
	ctx, cancel := context.WithTimeout(ctx, agentSessionTimeout)
	defer cancel()
	ws, err := sessionsWorkspace(f.Cwd, std)
	if err != nil {
		return err
	}
	f.Cwd = ws
	s, name, err := connectAgent(ctx, f, std)
	if err != nil {
		return err
	}
	defer s.Close(context.Background())
	err = s.DeleteSession(ctx, id)
	switch {
	case errors.Is(err, driver.ErrUnsupported):
		return exitcode.Usagef("sessions rm: %s cannot delete sessions (no session/delete)", name)
	case errors.Is(err, driver.ErrNoSession):
		return exitcode.With(exitcode.NoSession, fmt.Errorf("sessions rm: %w", err))
	case err != nil:
		return exitcode.With(exitcode.AgentError, fmt.Errorf("sessions rm: %w", err))
	}
	// tai's own records of it go too: --continue must not pick a session
	// the agent no longer has.
	if err := sessionStore().Add(ctx, sessions.Record{Time: time.Now().UTC(), Workspace: ws, Agent: name, SessionID: id,
		Status: "deleted", Deleted: true}); err != nil {
		warn(std, "deleted %s's session %s, but tai's record of it stays: %v", name, id, err)
	}
	fmt.Fprintf(std.Out, "deleted %s's session %s\n", name, id)
	return nil
}
