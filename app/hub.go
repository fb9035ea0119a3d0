package app

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/tai-dev/tai/agentspec"
	"github.com/tai-dev/tai/audit"
	"github.com/tai-dev/tai/exitcode"
	"github.com/tai-dev/tai/fleet"
	"github.com/tai-dev/tai/internal/statedir"
	"github.com/tai-dev/tai/remote"
	"github.com/tai-dev/tai/sandbox"
)

// NATSFlags say how to reach a NATS server: a URL, and credentials from a
// creds file or a token file (or TAI_NATS_CREDS / TAI_NATS_TOKEN), never on
// the command line.
type NATSFlags struct {
	URL       string
	Creds     string
	TokenFile string
}

func (n NATSFlags) token(std IO) (string, error) {
	if n.TokenFile != "" {
		b, err := os.ReadFile(n.TokenFile)
		if err != nil {
			return "", exitcode.With(exitcode.Usage, fmt.Errorf("--nats-token-file: %w", err))
		}
		return strings.TrimSpace(string(b)), nil
	}
	return std.Getenv("TAI_NATS_TOKEN"), nil
}

func (n NATSFlags) connect(name string, std IO) (*nats.Conn, error) {
	tok, err := n.token(std)
	if err != nil {
		return nil, err
	}
	creds := n.Creds
	if creds == "" {
		creds = std.Getenv("TAI_NATS_CREDS")
	}
	nc, err := remote.Connect(n.URL, creds, tok, name)
	if err != nil {
		return nil, exitcode.With(exitcode.Usage, err)
	}
	return nc, nil
}

// HubFlags are `tai hub`'s flags.
type HubFlags struct {
	Listen    string
	Store     string
	TokenFile string
	Verbose   bool
}

// Hub runs `tai hub`: an embedded NATS server with JetStream until ctx
// ends. Its URL is the first line on stdout.
func Hub(ctx context.Context, f HubFlags, std IO) error {
	logger := newLogger(std.Err, f.Verbose)
	store := f.Store
	if store == "" {
		store = statedir.Dir("hub")
	}
	tok, err := NATSFlags{TokenFile: f.TokenFile}.token(std)
	if err != nil {
		return exitcode.With(exitcode.Usage, fmt.Errorf("hub: %w", err))
	}
	h, err := remote.StartHub(remote.HubOptions{Listen: f.Listen, Store: store, Token: tok})
	if err != nil {
		return exitcode.With(exitcode.Usage, fmt.Errorf("hub: %w", err))
	}
	defer h.Close()
	// The streams and buckets exist before the first client needs them.
	nc, err := remote.Connect(h.URL(), "", tok, "tai hub")
	if err == nil {
		_, err = remote.Open(ctx, nc)
		nc.Close()
	}
	if err != nil {
		return exitcode.With(exitcode.AgentError, fmt.Errorf("hub: %w", err))
	}
	fmt.Fprintln(std.Out, h.URL())
	logger.Info("hub ready", "url", h.URL(), "store", store)
	<-ctx.Done()
	return nil
}

// WorkerFlags are `tai worker`'s flags.
type WorkerFlags struct {
	NATS    NATSFlags
	Name    string
	Slots   int
	Agents  []string
	Dir     string // clones and state; default the state directory's worker/NAME
	Lease   time.Duration
	Verbose bool
	Sandbox string // --sandbox: auto | on | off
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
		dir = statedir.Dir("worker", name)
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
	wo := remote.WorkerOptions{Bus: bus, Name: name, Agents: f.Agents, Slots: f.Slots,
		Clones: filepath.Join(dir, "clones"), State: filepath.Join(dir, "state"), Lease: f.Lease, Version: Version, Logger: logger}
	// Each task's agent confined as in a local fleet, by its task's policy;
	// the worker's own task audit logs stay out of its reach.
	wo.Sandbox = &agentspec.Sandbox{Mode: f.Sandbox, Protect: []string{filepath.Join(dir, "state", "audit")}}
	if err := remote.RunWorker(ctx, wo); err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	return nil
}

// runRemote coordinates a fleet run over NATS instead of running its
// tasks here.
func runRemote(ctx context.Context, f FleetFlags, o fleet.Options, log *audit.Log, std IO) (*fleet.State, error) {
	nc, err := f.NATS.connect("tai fleet "+o.RunID, std)
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	bus, err := remote.Open(ctx, nc)
	if err != nil {
		return nil, err
	}
	url := ""
	if f.Remote != "" {
		dir := f.Repo
		if dir == "" && o.Plan != nil {
			dir = o.Plan.Dir
		}
		out, err := exec.CommandContext(ctx, "git", "-C", dir, "remote", "get-url", f.Remote).Output()
		if err != nil {
			return nil, exitcode.Usagef("--remote %s: not a remote of the repository: %v", f.Remote, err)
		}
		url = strings.TrimSpace(string(out))
	}
	return remote.Coordinate(ctx, remote.CoordinatorOptions{Bus: bus, Plan: o.Plan, RunID: o.RunID, Dir: o.Dir, Repo: f.Repo, RepoURL: url,
		Lease: f.Lease, Resume: o.Resume, Audit: log, Progress: o.Progress, Command: o.Command, Logger: o.Logger})
}
