package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/tai-dev/tai/agentspec"
	"github.com/tai-dev/tai/ask"
	"github.com/tai-dev/tai/audit"
	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/exitcode"
	"github.com/tai-dev/tai/feed"
	"github.com/tai-dev/tai/fleet"
	"github.com/tai-dev/tai/internal/safetext"
	"github.com/tai-dev/tai/internal/secretenv"
	"github.com/tai-dev/tai/internal/statedir"
	"github.com/tai-dev/tai/policy"
	"github.com/tai-dev/tai/remote"
	"github.com/tai-dev/tai/sandbox"
	"github.com/tai-dev/tai/worktree"
)

// token is the NATS token a client presents: --nats-token-file, else
// TAI_NATS_TOKEN, else (with no creds file either) the token of this
// host's hub when the URL is on this host (remote.LocalHubToken).
func (n NATSFlags) token(std IO) (string, error) {
	if n.TokenFile != "" {
		b, err := os.ReadFile(n.TokenFile)
		if err != nil {
			return "", exitcode.With(exitcode.Usage, fmt.Errorf("--nats-token-file: %w", err))
		}
		return strings.TrimSpace(string(b)), nil
	}
	if tok := std.Getenv("TAI_NATS_TOKEN"); tok != "" || n.URL == "" || n.creds(std) != "" {
		return tok, nil
	}
	tok, err := remote.LocalHubToken(n.URL)
	if err != nil {
		return "", exitcode.With(exitcode.Usage, err)
	}
	return tok, nil
}

// creds is the NATS credentials file: --nats-creds, else TAI_NATS_CREDS.
func (n NATSFlags) creds(std IO) string {
	if n.Creds != "" {
		return n.Creds
	}
	return std.Getenv("TAI_NATS_CREDS")
}

func (n NATSFlags) connect(name string, std IO) (*nats.Conn, error) {
	tok, err := n.token(std)
	if err != nil {
		return nil, err
	}
	if tok != "" {
		_ = secretenv.HideProcess() // the token is in memory: no agent reads /proc/TAI/mem
	}
	nc, err := remote.Connect(n.URL, n.creds(std), tok, name)
	if err != nil {
		return nil, exitcode.With(exitcode.Usage, err)
	}
	return nc, nil
}

// hubToken is the token the hub's clients must present: --token-file (or
// TAI_NATS_TOKEN), else the one it keeps for this host's clients
// (remote.HubToken); none only with --insecure, which says so.
func (f HubFlags) hubToken(std IO) (string, error) {
	tok, err := NATSFlags{TokenFile: f.TokenFile}.token(std)
	if err != nil {
		return "", exitcode.With(exitcode.Usage, fmt.Errorf("hub: %w", err))
	}
	switch {
	case f.Insecure && tok != "":
		return "", exitcode.Usagef("hub: --insecure serves without a token, but one was given (--token-file or TAI_NATS_TOKEN)")
	case f.Insecure:
		fmt.Fprintln(std.Err, "tai hub: WARNING: --insecure: anyone who reaches this server (any process on this host, an agent "+
			"included) can submit runs, answer asks, forge results and delete its streams")
		return "", nil
	case tok != "":
		return tok, nil
	}
	tok, path, err := remote.HubToken()
	if err != nil {
		return "", exitcode.With(exitcode.AgentError, fmt.Errorf("hub: %w", err))
	}
	fmt.Fprintf(std.Err, "tai hub: clients must present the token in %s: tai on this host reads it there; "+
		"on another host, copy it and pass --nats-token-file FILE\n", path)
	return tok, nil
}

// Hub runs `tai hub`: a nats-server with JetStream, started and watched
// by tai, until ctx ends or the server dies. Its URL is the first line on
// stdout.
func Hub(ctx context.Context, f HubFlags, std IO) error {
	logger := newLogger(std.Err, f.Verbose)
	if f.NATS.URL != "" {
		if !f.Coordinate {
			return exitcode.Usagef("tai hub --nats URL: only with --coordinate (the hub is that server)")
		}
		nc, err := f.NATS.connect("tai hub --coordinate", std)
		if err != nil {
			return err
		}
		defer nc.Close()
		stop, err := f.serveWeb(ctx, nc, logger, std)
		if err != nil {
			return err
		}
		defer stop()
		return serveRuns(ctx, nc, f.NATS.URL, logger, std)
	}
	store := f.Store
	if store == "" {
		store = statedir.Dir("hub")
	}
	tok, err := f.hubToken(std)
	if err != nil {
		return err
	}
	if tok != "" {
		_ = secretenv.HideProcess() // the token is in memory: no agent reads /proc/TAI/mem
	}
	h, err := remote.StartHub(ctx, remote.HubOptions{Listen: f.Listen, Store: store, Token: tok, Server: f.server(std), Logger: logger})
	if err != nil {
		if errors.Is(err, remote.ErrNoServer) || errors.Is(err, fs.ErrNotExist) || errors.Is(err, exec.ErrNotFound) {
			return exitcode.With(exitcode.Usage, fmt.Errorf("hub: %w", err))
		}
		return exitcode.With(exitcode.AgentError, fmt.Errorf("hub: %w", err))
	}
	defer h.Close()
	// A server that dies ends the hub, with its cause.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		select {
		case <-h.Done():
			cancel(h.Err())
		case <-ctx.Done():
		}
	}()
	// The streams and buckets exist before the first client needs them.
	nc, err := remote.Connect(h.URL(), "", tok, "tai hub")
	if err == nil {
		_, err = remote.Open(ctx, nc)
	}
	if err != nil {
		return exitcode.With(exitcode.AgentError, fmt.Errorf("hub: %w", err))
	}
	defer nc.Close()
	stop, err := f.serveWeb(ctx, nc, logger, std)
	if err != nil {
		return err
	}
	defer stop()
	if f.Coordinate {
		err = serveRuns(ctx, nc, h.URL(), logger, std)
	} else {
		fmt.Fprintln(std.Out, h.URL())
		logger.Info("hub ready", "url", h.URL(), "store", store)
		<-ctx.Done()
	}
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		return exitcode.With(exitcode.AgentError, fmt.Errorf("hub: %w", cause))
	}
	return err
}

// server is the nats-server program the hub runs: --nats-server, else
// TAI_NATS_SERVER, else "" (remote looks on PATH and next to tai).
func (f HubFlags) server(std IO) string {
	if f.Server != "" {
		return f.Server
	}
	return std.Getenv("TAI_NATS_SERVER")
}

// serveRuns coordinates the runs submitted on nc's server until ctx ends.
// Each has its run directory here, as a local run's: state.json, its audit
// log and its frames, so tai fleet status and logs on this host read it.
func serveRuns(ctx context.Context, nc *nats.Conn, url string, logger *slog.Logger, std IO) error {
	bus, err := remote.Open(ctx, nc)
	if err != nil {
		return err
	}
	fmt.Fprintln(std.Out, url)
	logger.Info("hub coordinating submitted runs", "url", url)
	err = remote.Serve(ctx, remote.ServeOptions{Bus: bus, Logger: logger, Prepare: func(rec remote.RunRecord, o *remote.CoordinatorOptions) (func(*fleet.State), error) {
		run := rec.Run
		o.Dir = fleet.RunDir(run)
		o.Version = Version
		o.Clones = statedir.Dir("hub", "repos") // runs submitted from other hosts
		if err := os.MkdirAll(o.Dir, 0o700); err != nil {
			return nil, err
		}
		red, err := newRedactor(os.Environ(), nil, nil)
		if err != nil {
			return nil, err
		}
		log, err := audit.Open(filepath.Join(o.Dir, "audit.jsonl"), audit.Options{Run: run, Redactor: red, Logger: logger, TruncatePartial: true})
		if err != nil {
			return nil, err
		}
		frames, err := os.OpenFile(filepath.Join(o.Dir, framesFile), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			_ = log.Close()
			return nil, err
		}
		stream := newFleetStream(frames, run, time.Now)
		// A live feed per run: tai top and fleet logs -f on this host
		// watch it as a local run.
		lf, closeFeed, err := openFeed(run, feed.KindFleet, FeedFlags{NoNotify: true}, logger, std)
		if err != nil {
			logger.Warn("the run's live feed", "run", run, "err", err)
		}
		srv := lf.srv
		guardFeed(srv, log, red, nil) // one of the hub's runs: an interrupt would stop them all
		// Paused and released by hand as a local fleet: through its live
		// feed here (tai fleet pause on this host, the page of tai hub
		// --serve) and through the bus (tai fleet pause RUN --nats URL).
		hands := newHandEntry(log)
		if srv != nil {
			srv.OnHand(hands.apply)
		}
		stopHands, err := hands.serveBus(bus, run)
		if err != nil {
			closeFeed()
			_ = frames.Close()
			_ = log.Close()
			return nil, err
		}
		o.Hands = hands.hands
		if srv != nil {
			stream.publish = srv.Publish
		}
		o.Audit = log
		o.Progress = func(e fleet.Event) {
			stream.event(e)
			if srv != nil {
				publishTask(srv, e, fleetBudget{})
			}
		}
		o.TaskSink = func(task string) driver.Sink {
			ks := sinks{stream.task(task)}
			if srv != nil {
				ks = append(ks, srv.Sink(task))
			}
			return ks
		}
		o.Sandbox = &agentspec.Sandbox{Protect: []string{log.Path()}} // the answerer's: auto
		if rec.Human {
			// Its submitter follows it at a terminal: the asks policy and
			// the answerer leave to a human go there and to this live
			// feed (tai top here). A run nobody follows keeps the plan's
			// non-interactive rule, and nothing waits.
			o.Prompter, o.AskHuman = hubHuman(remote.Submitter{Bus: bus, Run: run}, srv)
		}
		return func(st *fleet.State) {
			stopHands()
			if st != nil {
				stream.result(summaryOf(st, log.Path()))
			}
			closeFeed()
			_ = frames.Close()
			_ = log.Close()
		}, nil
	}})
	if err != nil {
		return err
	}
	return nil
}

// hubHuman is who answers the asks of a hub-coordinated run a human
// follows: its submitter's terminal (over JetStream) raced against the
// run's live feed on the hub, as a local fleet races its terminal against
// its feed. The first answer wins; the other channel withdraws, saying
// who answered.
func hubHuman(sub remote.Submitter, srv *feed.Server) (policy.Prompter, func(ctx context.Context, task, q string) (string, error)) {
	perms, questions := []policy.PermissionChannel{sub.Channel()}, []ask.QuestionChannel{sub.Questions()}
	if srv != nil {
		perms, questions = append(perms, srv.Channel()), append(questions, srv.Questions())
	}
	return policy.Race(perms...), func(ctx context.Context, task, q string) (string, error) {
		text, _, err := ask.AskQuestion(ctx, ask.Question{Task: task, Text: q}, questions...)
		return text, err
	}
}

// Worker runs `tai worker`: it pulls tasks of its agents until ctx ends.
func Worker(ctx context.Context, f WorkerFlags, std IO) error {
	logger := newLogger(std.Err, f.Verbose)
	if f.NATS.URL == "" {
		return exitcode.Usagef("worker: --nats URL is required")
	}
	name := f.Name
	if name == "" {
		host, _ := os.Hostname()
		name = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	dir := f.Dir
	if dir == "" {
		// Not in tai's state, which no agent may write: its tasks'
		// worktrees are there. Its audit logs are protected below.
		dir = statedir.Data("worker", name)
	}
	nc, err := f.NATS.connect("tai worker "+name, std)
	if err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	defer nc.Close()
	bus, err := remote.Open(ctx, nc)
	if err != nil {
		return exitcode.With(exitcode.AgentError, fmt.Errorf("worker: %w", err))
	}
	if _, err := sandbox.Preflight(f.Sandbox); err != nil {
		return exitcode.With(exitcode.Usage, err)
	}
	sayUnconfined(f.Sandbox, std)
	// What it is, for whoever started it (stderr, as tai hub's notes: a
	// worker has no results of its own to print).
	say := func(line string) { fmt.Fprintf(std.Err, "tai worker: %s\n", safetext.Line(line)) }
	say(fmt.Sprintf("%s on %s, directory %s", name, nc.ConnectedUrlRedacted(), dir))
	wo := remote.WorkerOptions{Bus: bus, Name: name, Agents: f.Agents, Slots: f.Slots,
		Clones: filepath.Join(dir, "clones"), State: filepath.Join(dir, "state"), Lease: f.Lease, Version: Version, Logger: logger, Notice: say}
	// Each task's agent confined as in a local fleet, by its task's policy;
	// the worker's own task audit logs stay out of its reach.
	wo.Sandbox = &agentspec.Sandbox{Mode: f.Sandbox, Protect: []string{filepath.Join(dir, "state", "audit")}, Write: f.SandboxWrite}
	if err := remote.RunWorker(ctx, wo); err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	return nil
}

// runRemote coordinates a fleet run over NATS instead of running its
// tasks here.
func runRemote(ctx context.Context, f FleetFlags, o fleet.Options, log *audit.Log, hands *handEntry, std IO) (*fleet.State, error) {
	nc, err := f.NATS.connect("tai fleet "+o.RunID, std)
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	bus, err := remote.Open(ctx, nc)
	if err != nil {
		return nil, err
	}
	if hands != nil {
		// tai fleet pause/resume RUN --nats URL from any host, as its
		// live feed here.
		stop, err := hands.serveBus(bus, o.RunID)
		if err != nil {
			return nil, err
		}
		defer stop()
	}
	url, err := remoteURL(ctx, f, o.Plan)
	if err != nil {
		return nil, err
	}
	return remote.Coordinate(ctx, remote.CoordinatorOptions{Bus: bus, Plan: o.Plan, RunID: o.RunID, Dir: o.Dir, Repo: f.Repo, RepoURL: url,
		Lease: f.Lease, Resume: o.Resume, Concurrency: o.Concurrency, FailFast: o.FailFast, Audit: log, Progress: o.Progress, TaskSink: o.TaskSink, Command: o.Command, Logger: o.Logger,
		Prompter: o.Prompter, AskHuman: o.AskHuman, Version: o.Version, Sandbox: o.Sandbox, Hands: o.Hands})
}

// remoteURL is --remote's URL, if given.
func remoteURL(ctx context.Context, f FleetFlags, plan *fleet.Plan) (string, error) {
	if f.Remote == "" {
		return "", nil
	}
	dir := f.Repo
	if dir == "" && plan != nil {
		dir = plan.Dir
	}
	if dir == "" {
		dir = "."
	}
	url, err := (&worktree.Git{}).RemoteURL(ctx, dir, f.Remote)
	if err != nil {
		return "", exitcode.Usagef("--remote %s: not a remote of the repository: %v", f.Remote, err)
	}
	return url, nil
}

func openBus(ctx context.Context, n NATSFlags, name string, std IO) (*remote.Bus, func(), error) {
	if n.URL == "" {
		return nil, nil, exitcode.Usagef("--nats URL is required")
	}
	nc, err := n.connect(name, std)
	if err != nil {
		return nil, nil, err
	}
	bus, err := remote.Open(ctx, nc)
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return bus, nc.Close, nil
}

// submitFleet hands a run to the hub's coordinator, then (unless --detach)
// follows it as tai fleet run shows a local one, and exits with its code.
func submitFleet(ctx context.Context, f FleetFlags, o fleet.Options, std IO) error {
	if o.Resume {
		return exitcode.Usagef("a submitted run is resumed by the hub's coordinator itself: follow it with tai fleet logs %s --nats URL -f", o.RunID)
	}
	if f.NATS.URL == "" {
		return exitcode.Usagef("--submit and --detach need --nats URL (a hub started with --coordinate)")
	}
	bus, closeBus, err := openBus(ctx, f.NATS, "tai fleet submit "+o.RunID, std)
	if err != nil {
		return err
	}
	defer closeBus()
	url, err := remoteURL(ctx, f, o.Plan)
	if err != nil {
		return err
	}
	// A human follows the run at this terminal: the hub puts its asks
	// here too. Detached or without a terminal (CI), nobody is waited for.
	var tty *os.File
	if !f.Detach {
		if t, ok := std.TTY(); ok {
			tty = t
			defer tty.Close()
		}
	}
	if _, err := remote.Submit(ctx, bus, remote.SubmitOptions{Plan: o.Plan, RunID: o.RunID, Repo: f.Repo, RepoURL: url, Lease: f.Lease, Human: tty != nil}); err != nil {
		return err
	}
	fmt.Fprintf(std.Err, "tai fleet: run %s submitted to the hub's coordinator; follow it with: tai fleet logs %s --nats %s -f\n", o.RunID, o.RunID, f.NATS.URL)
	if f.Detach {
		fmt.Fprintln(std.Out, o.RunID)
		return nil
	}
	return followRun(ctx, bus, o.RunID, f.Output, tty, std)
}

// followRun shows a run another process coordinates, from its events and
// the state its coordinator publishes, until it finishes. With a tty, the
// human there answers the run's asks the coordinator puts to it.
func followRun(ctx context.Context, bus *remote.Bus, run, output string, tty *os.File, std IO) error {
	progressOut := std.Out
	if output == OutputJSON || output == OutputStreamJSON {
		progressOut = std.Err
	}
	var progress func(fleet.Event)
	table := fleetTable(run, output, std)
	if table != nil {
		progress = table.Event
	} else {
		progress = fleet.Lines(progressOut)
	}
	if tty != nil {
		defer answerAsks(ctx, bus, run, tty, table, std)()
	}
	var st *fleet.State
	var end remote.EventMsg
	var rec remote.RunRecord
	err := remote.Events(ctx, bus, run, true, func(ev remote.EventMsg) error {
		if ev.Worker != "" || ev.Kind == remote.KindFrame {
			return nil // the coordinator's own events say it (worker.*)
		}
		r, s, err := remote.LoadRun(ctx, bus, run)
		if err != nil {
			return err
		}
		rec = r
		if s != nil {
			st = s
		}
		state := fleet.State{}
		if st != nil {
			state = *st
		}
		progress(fleet.Event{Time: ev.Time, Kind: fleet.EventKind(ev.Kind), Task: ev.Task, Detail: ev.Detail, State: state})
		if ev.Kind == "run.end" && ev.Task == "" && !rec.Finished.IsZero() {
			end = ev
			return remote.ErrStop
		}
		return nil
	})
	if err != nil {
		return err
	}
	if st == nil && !rec.Finished.IsZero() {
		fmt.Fprintf(std.Err, "tai fleet: run %s: %s\n", run, safetext.Line(end.Detail)) // may quote an agent
		return exitcode.Said(exitcode.Code(rec.ExitCode))
	}
	if st == nil || ctx.Err() != nil {
		fmt.Fprintf(std.Err, "tai fleet: stopped following run %s; it goes on at the hub\n", run)
		if tty != nil {
			fmt.Fprintf(std.Err, "tai fleet: its asks for a human now wait for tai top on the hub's host\n")
		}
		return exitcode.With(exitcode.Interrupted, nil)
	}
	return followedResult(st, output, std)
}

// answerAsks has the human at tty answer the run's asks the coordinator
// puts to it, until the returned stop.
func answerAsks(ctx context.Context, bus *remote.Bus, run string, tty *os.File, table *fleet.Table, std IO) (stop func()) {
	h := newHuman(tty)
	h.table = table
	actx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := remote.FollowAsks(actx, bus, run, follower{h}); err != nil {
			fmt.Fprintf(std.Err, "tai fleet: the run's asks will not come here: %v\n", err)
		}
	}()
	return func() { cancel(); <-done }
}

// followedResult prints a followed run's end as a local run's, and is its
// exit.
func followedResult(st *fleet.State, output string, std IO) error {
	switch output {
	case OutputJSON:
		writeSummary(std.Out, st, "")
	case OutputStreamJSON:
	default:
		fmt.Fprintf(std.Out, "fleet %s: %s (exit %d) — coordinated by the hub, results on branch %s\n", st.Run, st.Status, st.ExitCode, st.Target)
		for _, id := range st.Order {
			if ts := st.Tasks[id]; ts.Status != fleet.StatusMerged && ts.Status != fleet.StatusDone {
				fmt.Fprintf(std.Err, "tai fleet: task %s %s: %s\n", id, ts.Status, safetext.Line(ts.Reason))
			}
		}
	}
	if st.ExitCode != 0 {
		return exitcode.Said(exitcode.Code(st.ExitCode))
	}
	return nil
}

// follower is the human at a following terminal, as the coordinator's
// asks reach it: the same prompts a local fleet's terminal shows.
type follower struct{ h *human }

func (f follower) Permission(ctx context.Context, a remote.HumanAsk) (policy.Answer, error) {
	return f.h.Ask(policy.WithWorkspace(policy.WithAsker(ctx, "task "+a.Task), a.Workspace), *a.Permission)
}

func (f follower) Question(ctx context.Context, a remote.HumanAsk) (string, error) {
	text, _, err := f.h.askQuestion(ctx, ask.Question{Task: a.Task, Text: a.Question})
	return strings.TrimSpace(text), err
}

// serveWeb serves tai serve's page when --serve is given: the runs with a
// feed on this host (those the hub coordinates among them) and, shown
// only, the other runs on the bus.
func (f HubFlags) serveWeb(ctx context.Context, nc *nats.Conn, logger *slog.Logger, std IO) (func(), error) {
	if f.Web.Listen == "" {
		if f.Web.TLSCert != "" || f.Web.SelfSigned {
			return nil, exitcode.Usagef("hub: --tls-cert and --tls-self-signed go with --serve")
		}
		return func() {}, nil
	}
	bus, err := remote.Open(ctx, nc)
	if err != nil {
		return nil, exitcode.With(exitcode.AgentError, fmt.Errorf("hub: %w", err))
	}
	f.Web.Verbose = f.Verbose
	return startWeb(ctx, f.Web, func(ctx context.Context) ([]feed.State, error) {
		infos, err := remote.Store{Bus: bus}.Runs(ctx)
		if err != nil {
			return nil, err
		}
		var out []feed.State
		for _, in := range infos {
			if in.Live {
				out = append(out, feed.State{Run: in.Run, Kind: feed.KindFleet, Started: in.Created})
			}
		}
		return out, nil
	}, logger, std)
}
