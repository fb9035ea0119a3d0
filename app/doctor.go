package app

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/tai-dev/tai/config"
	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/internal/secretenv"
	"github.com/tai-dev/tai/internal/statedir"
	"github.com/tai-dev/tai/policy"
	"github.com/tai-dev/tai/preset"
	"github.com/tai-dev/tai/remote"
	"github.com/tai-dev/tai/runner"
	"github.com/tai-dev/tai/sandbox"
	"github.com/tai-dev/tai/sessions"
	"github.com/tai-dev/tai/worktree"
)

// Doctor is `tai doctor`: what works here.
type Doctor struct {
	Tai      BuildInfo      `json:"tai"`
	Agents   []DoctorAgent  `json:"agents"`
	Drivers  []DoctorDriver `json:"drivers"`
	Landlock DoctorLandlock `json:"landlock"`
	Limits   DoctorLimits   `json:"limits"`
	Hub      DoctorHub      `json:"hub"`
	// EnvDropped are tai's own secret variables in this environment, which
	// no agent's environment carries (secretenv).
	EnvDropped []string         `json:"agent_env_dropped"`
	Dirs       []DoctorDir      `json:"dirs"`
	Worktrees  *DoctorWorktrees `json:"worktrees,omitempty"`
}

// DoctorHub is the nats-server tai hub would run (TAI_NATS_SERVER, PATH,
// next to tai).
type DoctorHub struct {
	Server  string `json:"nats_server,omitempty"`
	Version string `json:"version,omitempty"`
	Error   string `json:"error,omitempty"`
	// TokenFile is the token a hub started without credentials made, if
	// one did: this host's clients read it, other hosts get a copy.
	TokenFile string `json:"token_file,omitempty"`
}

// DoctorAgent is one agent preset (or config agent) here.
type DoctorAgent struct {
	Name      string `json:"name"`
	Installed bool   `json:"installed"`
	Path      string `json:"path,omitempty"`
	Package   string `json:"package,omitempty"` // npm package
	// AgentVersion: the version from the package's package.json, else
	// (an agent tai knows no package of) the first line of its --version.
	AgentVersion
	Drivers []string `json:"drivers"`
	Note    string   `json:"note,omitempty"`
	// Confinement says whose sandbox confines the agent under the default
	// --sandbox auto: tai's, its own, or none.
	Confinement string `json:"confinement,omitempty"`
}

// DoctorDriver is one driver and whether it can run here.
type DoctorDriver struct {
	Name  string `json:"name"`
	Works bool   `json:"works"`
	Note  string `json:"note,omitempty"`
}

// DoctorLandlock is the kernel's Landlock ABI (0: none), and which
// launcher this build has: "native" (built with cgo: a launch is a few
// system calls) or "go" (each launch starts a Go runtime).
type DoctorLandlock struct {
	ABI      int    `json:"abi"`
	Error    string `json:"error,omitempty"`
	Launcher string `json:"launcher"`
	// Scopes: the signal and abstract-socket scopes are in force (ABI 6
	// on): an agent cannot stop tai, signal other agents, or reach X11 or
	// D-Bus by an abstract socket.
	Scopes bool `json:"scopes"`
}

// DoctorLimits are the limits a run's agent would have here (the user's
// policy's, else tai's defaults), in force or why not, and whether the
// agent is kept from seeing the user's other processes.
type DoctorLimits struct {
	sandbox.LimitStatus
	ProcessesHidden bool   `json:"processes_hidden"`
	ProcessesReason string `json:"processes_reason,omitempty"`
}

// DoctorDir is a directory or file tai reads or writes.
type DoctorDir struct {
	What     string `json:"what"`
	Path     string `json:"path"`
	Exists   bool   `json:"exists"`
	Writable bool   `json:"writable"` // it, or the directory it would be created in
	Optional bool   `json:"optional,omitempty"`
	// Error says why a directory tai needs cannot be created (or is not
	// a directory): tai run would fail on it.
	Error string `json:"error,omitempty"`
}

// DoctorWorktrees are tai's worktrees of the repository in the current
// directory, and the stale ones among them (`tai worktree gc` removes
// what is safe to).
type DoctorWorktrees struct {
	Repo  string          `json:"repo"`
	Total int             `json:"total"`
	Stale []worktree.Info `json:"stale"`
	Error string          `json:"error,omitempty"`
}

// versionTimeout bounds one agent's --version.
const versionTimeout = 10 * time.Second

// RunDoctor finds out what works here, in std's environment; dir is the
// repository whose worktrees to look at.
func RunDoctor(ctx context.Context, std IO, dir string) Doctor {
	d := Doctor{Tai: ReadBuildInfo(), Agents: doctorAgents(ctx), Drivers: doctorDrivers()}
	d.Landlock.Launcher = "go"
	if sandbox.Native {
		d.Landlock.Launcher = "native"
	}
	if abi, err := landlockABI(); err != nil {
		d.Landlock.Error = err.Error()
	} else {
		d.Landlock.ABI = abi
		d.Landlock.Scopes = abi >= sandbox.ScopesABI
	}
	d.Limits = doctorLimits()
	for i := range d.Agents {
		d.Agents[i].Confinement = agentConfinement(d.Agents[i].Name, d.Landlock.Error == "")
	}
	d.Hub = doctorHub(ctx, std)
	d.EnvDropped = secretenv.Dropped(std.Env())
	d.Dirs = doctorDirs()
	d.Worktrees = doctorWorktrees(ctx, dir)
	return d
}

// doctorLimits probes the limits of the user's policy (tai's defaults
// where it has none or cannot be read).
func doctorLimits() DoctorLimits {
	want := sandbox.DefaultLimits()
	if p, err := policy.DefaultPath(); err == nil {
		if c, err := policy.Load(p); err == nil {
			want = c.Limits.Resolve()
		}
	}
	d := DoctorLimits{LimitStatus: sandbox.ProbeLimits(want)}
	d.ProcessesHidden, d.ProcessesReason = sandbox.CanHideProcesses()
	return d
}

// doctorHub names the server tai hub would run, found as the hub finds it.
// agentConfinement is whose sandbox confines the named agent under --sandbox
// auto, given whether the kernel has Landlock.
func agentConfinement(name string, landlock bool) string {
	p, _ := preset.Lookup(name)
	own := p.OwnSandbox
	switch {
	case landlock && own != "":
		return "tai's sandbox; its own (" + own + ") cannot start under it, --sandbox off keeps its own"
	case landlock:
		return "tai's sandbox"
	case own != "":
		return "its own (" + own + "): no Landlock here"
	}
	return "none: no Landlock here"
}

func doctorHub(ctx context.Context, std IO) DoctorHub {
	p, err := remote.FindServer(HubFlags{}.server(std))
	if err != nil {
		return DoctorHub{Error: err.Error()}
	}
	h := DoctorHub{Server: p}
	h.Version, h.Error = toolVersion(ctx, p)
	if _, err := os.Stat(remote.HubTokenFile()); err == nil {
		h.TokenFile = remote.HubTokenFile()
	}
	return h
}

func doctorAgents(ctx context.Context) []DoctorAgent {
	ps := preset.All()
	out := make([]DoctorAgent, len(ps))
	var wg sync.WaitGroup
	for i, p := range ps {
		drivers := []string{string(p.Driver)}
		for d := range p.Drivers {
			drivers = append(drivers, string(d))
		}
		sort.Strings(drivers[1:])
		a := DoctorAgent{Name: p.Name, Package: p.Package, Drivers: drivers}
		a.Path, a.Installed = p.Installed()
		a.AgentVersion = agentVersion(p, a.Path)
		if !a.Installed {
			if argv, err := p.Command(); err == nil {
				a.Note = "not installed; runs through " + argv[0]
			} else {
				a.Note = err.Error()
			}
		}
		out[i] = a
		if a.Installed && !p.Builtin && a.Version == "" {
			// No package.json to read: ask the agent itself (unconfined,
			// so only when reading failed).
			wg.Add(1)
			go func() {
				defer wg.Done()
				v := &out[i].AgentVersion
				v.Version, out[i].Note = toolVersion(ctx, a.Path)
				if v.Tested != nil {
					v.VersionStatus = v.Tested.Status(releaseNumber.FindString(v.Version))
				}
			}()
		}
	}
	wg.Wait()
	rows, err := listAgents()
	for _, r := range rows {
		if r.Source == SourceConfig {
			out = append(out, DoctorAgent{Name: r.Name, Installed: r.Installed, Path: r.Path, Package: r.Package,
				AgentVersion: r.AgentVersion, Drivers: []string{string(r.Driver)}, Note: "from " + r.From})
		}
	}
	if err != nil {
		out = append(out, DoctorAgent{Name: "(config)", Note: err.Error()})
	}
	return out
}

// releaseNumber is the MAJOR.MINOR.PATCH in an agent's --version.
var releaseNumber = regexp.MustCompile(`[0-9]+\.[0-9]+\.[0-9]+`)

// toolVersion runs path --version and returns its first line.
func toolVersion(ctx context.Context, path string) (version, note string) {
	ctx, cancel := context.WithTimeout(ctx, versionTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "--version")
	cmd.Stdin = nil
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	line, _, _ := strings.Cut(strings.TrimSpace(out.String()), "\n")
	if len(line) > 80 {
		line = line[:80] + "…"
	}
	switch {
	case ctx.Err() != nil:
		return "", fmt.Sprintf("--version did not answer within %s", versionTimeout)
	case err != nil && line == "":
		return "", "--version: " + err.Error()
	}
	return line, ""
}

func doctorDrivers() []DoctorDriver {
	var out []DoctorDriver
	for _, name := range runner.Drivers() {
		d := DoctorDriver{Name: string(name), Works: true}
		switch name {
		case driver.PTY:
			if ptm, tty, err := pty.Open(); err != nil {
				d.Works, d.Note = false, "no pseudo-terminal: "+err.Error()
			} else {
				ptm.Close()
				tty.Close()
			}
		case driver.A2A:
			d.Note = "needs the agent's URL reachable"
		}
		out = append(out, d)
	}
	return out
}

func doctorDirs() []DoctorDir {
	var out []DoctorDir
	add := func(what, path string, optional bool) {
		d := DoctorDir{What: what, Path: path, Optional: optional}
		probe := path
		if st, err := os.Stat(path); err == nil {
			d.Exists = true
			if !optional && !st.IsDir() {
				d.Error = path + " is not a directory"
			}
		} else {
			// Where it would be created: the nearest existing parent.
			for probe = filepath.Dir(path); probe != filepath.Dir(probe); probe = filepath.Dir(probe) {
				if _, err := os.Stat(probe); err == nil {
					break
				}
			}
		}
		d.Writable = unix.Access(probe, unix.W_OK) == nil
		if !d.Exists && !optional {
			d.Error = creatable(probe)
			d.Writable = d.Writable && d.Error == ""
		}
		out = append(out, d)
	}
	add("state", statedir.Dir(), false)
	add("audit logs", statedir.Dir("audit"), false)
	add("sessions", sessions.DefaultDir(), false)
	add("fleet runs", statedir.Dir("fleet"), false)
	if p, err := config.UserPath(); err == nil {
		add("config", p, true)
	}
	if p, err := policy.DefaultPath(); err == nil {
		add("policy", p, true)
	}
	return out
}

// creatable says why a directory cannot be created in parent, the
// nearest existing parent of a missing one ("" when it can): it makes and
// removes one there, since permission bits alone do not tell (root,
// read-only mounts, a file where a directory belongs).
func creatable(parent string) string {
	st, err := os.Stat(parent)
	if err != nil {
		return err.Error()
	}
	if !st.IsDir() {
		return parent + " is not a directory"
	}
	tmp, err := os.MkdirTemp(parent, ".tai-doctor-")
	if err != nil {
		return err.Error()
	}
	if err := os.Remove(tmp); err != nil {
		return fmt.Sprintf("removing the probe %s: %v", tmp, err)
	}
	return ""
}

// doctorWorktrees lists, read-only, tai's worktrees of the repository dir
// is in; nil when it is not in one (or dir is "": the command gives the
// working directory).
func doctorWorktrees(ctx context.Context, dir string) *DoctorWorktrees {
	if dir == "" {
		return nil
	}
	m, err := worktree.Open(ctx, dir)
	if err != nil {
		return nil // not a git repository: nothing to say
	}
	w := &DoctorWorktrees{Repo: dir, Stale: []worktree.Info{}}
	list, err := m.List(ctx)
	if err != nil {
		w.Error = err.Error()
		return w
	}
	w.Total = len(list)
	for _, i := range list {
		switch i.State {
		case "in-use", "active":
		default:
			w.Stale = append(w.Stale, i)
		}
	}
	return w
}

// DoctorCmd prints RunDoctor as text or JSON.
func DoctorCmd(ctx context.Context, dir string, asJSON bool, std IO) error {
	if dir == "" {
		dir, _ = std.Wd()
	}
	d := RunDoctor(ctx, std, dir)
	if asJSON {
		return printJSON(std.Out, d)
	}
	out, flush := fitTerminal(std) // one row a line on a narrow terminal
	defer flush()
	w := bufio.NewWriter(out)
	defer w.Flush()
	fmt.Fprintln(w, d.Tai.String())
	fmt.Fprintln(w, "\nAgents:")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  AGENT\tINSTALLED\tVERSION\tTESTED\tPACKAGE\tDRIVERS\tCONFINED BY\tNOTE")
	for _, a := range d.Agents {
		inst := "no"
		if a.Installed {
			inst = "yes"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", a.Name, inst, a.AgentVersion, a.testedString(), orDash(a.Package),
			strings.Join(a.Drivers, ","), orDash(a.Confinement), a.Note)
	}
	_ = tw.Flush()
	fmt.Fprintln(w, "\nDrivers:")
	for _, dr := range d.Drivers {
		st := "works"
		if !dr.Works {
			st = "does not work"
		}
		note := ""
		if dr.Note != "" {
			note = " (" + dr.Note + ")"
		}
		fmt.Fprintf(w, "  %-12s %s%s\n", dr.Name, st, note)
	}
	if d.Landlock.Error != "" {
		fmt.Fprintf(w, "\nLandlock: none (%s)\n", d.Landlock.Error)
	} else {
		fmt.Fprintf(w, "\nLandlock: ABI %d\n", d.Landlock.ABI)
		fmt.Fprintf(w, "Landlock scopes (signals, abstract sockets): %s\n", map[bool]string{true: "in force",
			false: "not on this kernel (ABI 6 or later): an agent can signal tai and reach abstract sockets"}[d.Landlock.Scopes])
	}
	if d.Landlock.Launcher == "native" {
		fmt.Fprintf(w, "Launcher: native\n")
	} else {
		fmt.Fprintf(w, "Launcher: go (built without cgo: every agent and served command starts a Go runtime first)\n")
	}
	fmt.Fprintf(w, "Limits: %s\n", limitsLine(d.Limits.LimitStatus))
	if d.Limits.ProcessesHidden {
		fmt.Fprintf(w, "Processes: hidden from agents (a PID namespace of their own)\n")
	} else {
		fmt.Fprintf(w, "Processes: NOT hidden from agents (%s): an agent sees the user's other processes and can read their environments (/proc/PID/environ)\n", d.Limits.ProcessesReason)
	}
	// The bind mounts that keep them read-only need the mount namespace
	// of hidden processes; elsewhere Landlock keeps Claude Code's only.
	if d.Limits.ProcessesHidden {
		fmt.Fprintf(w, "Agents' config files (hooks, MCP servers): read-only (bound read-only)\n")
	} else {
		fmt.Fprintf(w, "Agents' config files (hooks, MCP servers): only Claude Code's read-only: codex's, gemini's, qwen's, opencode's are writable (no mount namespace)\n")
	}
	switch {
	case d.Hub.Server == "":
		fmt.Fprintf(w, "\nHub (tai hub): no nats-server (%s)\n", d.Hub.Error)
	case d.Hub.Error != "":
		fmt.Fprintf(w, "\nHub (tai hub): %s (%s)\n", d.Hub.Server, d.Hub.Error)
	default:
		fmt.Fprintf(w, "\nHub (tai hub): %s, %s\n", d.Hub.Server, d.Hub.Version)
	}
	if d.Hub.TokenFile != "" {
		fmt.Fprintf(w, "Hub token: %s (this host's clients read it; copy it to another host's --nats-token-file)\n", d.Hub.TokenFile)
	}
	if len(d.EnvDropped) > 0 {
		fmt.Fprintf(w, "Agent environment: without tai's own secrets, here %s\n", strings.Join(d.EnvDropped, ", "))
	} else {
		fmt.Fprintf(w, "Agent environment: without tai's own secrets (TAI_NATS_*, none set here)\n")
	}
	fmt.Fprintln(w, "\nDirectories:")
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, dir := range d.Dirs {
		st := "missing (created when needed)"
		if dir.Optional {
			st = "none (optional)"
		}
		if dir.Exists {
			st = "exists"
		}
		switch {
		case dir.Error != "" && dir.Exists:
			st = "UNUSABLE (" + dir.Error + "): tai run fails until it is a writable directory"
		case dir.Error != "":
			st = "missing and CANNOT BE CREATED (" + dir.Error + "): tai run fails until it can be"
		case !dir.Writable:
			st += ", NOT WRITABLE"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", dir.What, dir.Path, st)
	}
	_ = tw.Flush()
	if wt := d.Worktrees; wt != nil {
		fmt.Fprintf(w, "\nWorktrees of %s: %d, %d stale", wt.Repo, wt.Total, len(wt.Stale))
		if wt.Error != "" {
			fmt.Fprintf(w, " (%s)", wt.Error)
		}
		fmt.Fprintln(w)
		for _, i := range wt.Stale {
			fmt.Fprintf(w, "  %s\t%s\t%s\n", i.State, i.Branch, i.Path)
		}
		if len(wt.Stale) > 0 {
			fmt.Fprintln(w, "  (tai worktree gc removes those whose work is merged or pushed)")
		}
	}
	return nil
}

// limitsLine says which limits hold an agent's process tree, and why not.
func limitsLine(ls sandbox.LimitStatus) string {
	var b strings.Builder
	b.WriteString("pids ")
	if ls.Pids > 0 {
		fmt.Fprint(&b, ls.Pids)
	} else {
		b.WriteString("none")
	}
	b.WriteString(", memory ")
	if ls.Memory > 0 {
		b.WriteString(sandbox.FormatSize(ls.Memory))
	} else {
		b.WriteString("none")
	}
	if ls.Via != "" {
		fmt.Fprintf(&b, " (%s)", ls.Via)
	}
	if ls.Reason != "" {
		fmt.Fprintf(&b, "; not in force: %s", ls.Reason)
	}
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
