// Package sandbox runs the processes tai starts for agents (the agents,
// their TUIs, the commands tai serves them) under a small launcher of
// tai's own: tai re-executes itself as the launcher, which becomes a child
// subreaper, enforces the Linux Landlock ruleset tai built for it, and
// starts the agent as its child, in a cgroup tai made for it where one can
// be made. When the agent exits, when tai asks, or when tai dies (even by
// kill -9), the launcher kills everything the agent left behind,
// double-forked and setsid children included, and only then exits.
//
// Where tai is built with cgo (the default where a C compiler is), the
// launcher is native: a constructor in launcher_linux.c takes over before
// the Go runtime starts, so a launch costs a few system calls, not a Go
// program's start. Without cgo, Main does the same job in Go.
//
// What the Landlock rules allow: writes inside the workspace roots, the
// agent's own state directories and a private temp dir; reads everywhere
// else except the secret paths; and never a write to tai's own policy and
// state, even inside the workspace. Each launch's cgroup has pids and
// memory limits (Limits), and where the kernel allows, the agent sees only
// its own processes (HideProcesses). It is not a container: the network
// is open unless a connect rule is asked for.
package sandbox

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/tai-dev/tai/internal/secretenv"
)

// Mode is --sandbox: auto, on or off.
type Mode string

const (
	// ModeAuto confines with Landlock where the kernel supports it.
	ModeAuto Mode = "auto"
	// ModeOn confines, or refuses to run where it cannot.
	ModeOn Mode = "on"
	// ModeOff does not confine. The launcher still keeps the process tree
	// from outliving tai.
	ModeOff Mode = "off"
)

// ParseMode reads a --sandbox value; "" is auto.
func ParseMode(s string) (Mode, error) {
	switch Mode(s) {
	case "", ModeAuto:
		return ModeAuto, nil
	case ModeOn, ModeOff:
		return Mode(s), nil
	}
	return "", fmt.Errorf("--sandbox %q: want auto, on or off", s)
}

// ErrUnsupported is returned by New for ModeOn where the kernel has no
// usable Landlock.
var ErrUnsupported = errors.New("the kernel does not support Landlock")

// Config is what one run's sandbox allows.
type Config struct {
	Mode Mode
	// Write are the workspace roots and the agent's state directories
	// (files or directories); missing ones are skipped.
	Write []string
	// Deny are the secret paths: neither read nor written.
	Deny []string
	// Protect are tai's own policy and state: readable, never writable,
	// even inside a Write root. A missing one protects its nearest existing
	// parent below the Write root, so that it cannot be planted either.
	Protect []string
	// NetAllow, when not nil, turns on the network rule: TCP connections
	// only to these HOST:PORT (Landlock checks the port only).
	NetAllow []string
	// Exe is the tai binary that serves as the launcher; "" is
	// /proc/self/exe.
	Exe string
	// Env ("NAME=value") is set in every confined process's environment,
	// over what it was given: the private caches.
	Env []string
	// Limits cap each launch's cgroup (see DefaultLimits); none with
	// ModeOff.
	Limits Limits
	// HideProcesses starts each launcher in a PID namespace of its own
	// with a /proc of its own, where the kernel allows it (see hide); not
	// with ModeOff.
	HideProcesses bool
	// ReadOnly are the agent's config files that name commands: where
	// processes are hidden, the launcher's init binds each read-only in
	// its mount namespace, so that the agent can neither rewrite nor
	// replace it while its directory stays writable (Protect, Landlock's
	// way, freezes the directory's entries). tai makes a missing one
	// first, holding Init, so that the agent cannot plant it.
	ReadOnly []ReadOnlyFile
	// WriteRoots are the user's write roots among Write (--sandbox-write,
	// the policy's write_roots), and WriteRefused those refused (at or
	// under Deny or Protect): for the status, and so the record.
	WriteRoots   []string
	WriteRefused []Refusal
}

// Refusal is a path the sandbox would not open, and why.
type Refusal struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// ReadOnlyFile is one of Config.ReadOnly: a file or a directory, which
// tai makes when missing if Make (a file holding Init).
type ReadOnlyFile struct {
	Path string
	Dir  bool
	Make bool
	Init string
}

// Status says how a run was confined, for the result, the audit log and
// the manifest.
type Status struct {
	Mode    Mode   `json:"mode"`
	Enabled bool   `json:"enabled"`
	ABI     int    `json:"landlock_abi,omitempty"`
	Cgroup  bool   `json:"cgroup"`
	Net     bool   `json:"net_restricted,omitempty"`
	Reason  string `json:"reason,omitempty"` // why it is off
	TempDir string `json:"tmpdir,omitempty"`
	// Limits are the cgroup limits in force, and what they caught (nil:
	// none asked for).
	Limits *LimitStatus `json:"limits,omitempty"`
	// ProcessesHidden: the agent sees only its own processes (a PID
	// namespace and /proc of its own); ProcessesReason says why not.
	ProcessesHidden bool   `json:"processes_hidden"`
	ProcessesReason string `json:"processes_reason,omitempty"`
	// ConfigReason says why the agent's config files (Config.ReadOnly)
	// were not all bound read-only: they stay writable, but for those
	// Landlock keeps (Config.Protect).
	ConfigReason string `json:"config_files_reason,omitempty"`
	// WriteRoots are the user's write roots (Config.WriteRoots), and
	// WriteRefused those the floor's paths kept closed.
	WriteRoots   []string  `json:"write_roots,omitempty"`
	WriteRefused []Refusal `json:"write_roots_refused,omitempty"`
}

// Sandbox is one run's launcher configuration. A nil *Sandbox starts
// processes directly, as before.
type Sandbox struct {
	exe    string
	rules  *rules // nil: no Landlock
	status Status
	cgroup atomic.Bool
	// plan is where the limits go on each launch; pidsHits, oomKills
	// what they caught; unlimited why a launch ran without them.
	plan               limitPlan
	pidsHits, oomKills atomic.Int64
	unlimited          atomic.Pointer[string]
	hide               bool // launchers start in namespaces of their own
	// impl, where tests set it, is TAI_LAUNCHER for the launcher: "go"
	// for the Go one even where the native one is built in, "copy" for
	// the native one starting agents as copies of itself (its fallback
	// where the shared-memory start is refused). Tests run them all.
	impl     string
	env      []string // Config.Env, set where Landlock confines
	readOnly []string // Config.ReadOnly's paths, bound where processes are hidden
}

// testNoLandlock makes ABI report no Landlock (a kernel without it), for
// tests; set through TAI_TEST_NO_LANDLOCK only in binaries built with the
// tai_testhooks tag.
var testNoLandlock bool

// Preflight checks a --sandbox value before anything starts: a bad value,
// or on where the kernel has no Landlock (ErrUnsupported), is refused here
// as New would refuse it, so a fleet or a worker fails before its first task.
func Preflight(s string) (Mode, error) {
	mode, err := ParseMode(s)
	if err != nil {
		return "", err
	}
	if abi := ABI(); mode == ModeOn && abi < 1 {
		return "", fmt.Errorf("--sandbox on: %w (Landlock ABI %d; use --sandbox auto or off)", ErrUnsupported, abi)
	}
	return mode, nil
}

// New prepares a run's sandbox: checks the kernel (ModeOn fails with
// ErrUnsupported where Landlock is missing, see Preflight) and creates the
// private temp dir. Close removes it.
func New(cfg Config) (*Sandbox, error) {
	mode, err := Preflight(string(cfg.Mode))
	if err != nil {
		return nil, err
	}
	s := &Sandbox{exe: cfg.Exe, status: Status{Mode: mode, WriteRoots: cfg.WriteRoots, WriteRefused: cfg.WriteRefused}}
	if s.exe == "" {
		s.exe = "/proc/self/exe"
	}
	sweepCgroups()
	if mode != ModeOff && cfg.Limits != (Limits{}) {
		var ls LimitStatus
		s.plan, ls = planLimits(cfg.Limits)
		s.plan.sweepV1()
		s.status.Limits = &ls
	}
	switch {
	case mode == ModeOff:
		s.status.ProcessesReason = "--sandbox off"
	case cfg.HideProcesses:
		if err := canHide(s.exe, s.impl); err != nil {
			s.status.ProcessesReason = err.Error()
		} else {
			s.hide, s.status.ProcessesHidden = true, true
		}
	}
	abi := ABI()
	switch {
	case mode == ModeOff:
		s.status.Reason = "--sandbox off"
		return s, nil
	case abi < 1:
		s.status.Reason = "the kernel does not support Landlock"
		return s, nil
	}
	tmp, err := os.MkdirTemp("", "tai-sandbox-")
	if err != nil {
		return nil, fmt.Errorf("sandbox: private temp dir: %w", err)
	}
	r := &rules{Grants: Grants(cfg.Write, cfg.Deny, cfg.Protect, tmp)}
	if cfg.NetAllow != nil {
		ports, err := ports(cfg.NetAllow)
		if err != nil {
			os.RemoveAll(tmp)
			return nil, err
		}
		r.Net, r.Ports = true, ports
	}
	s.rules = r
	s.env = cfg.Env
	s.status = Status{Mode: mode, Enabled: true, ABI: abi, Net: r.Net, TempDir: tmp, Limits: s.status.Limits,
		ProcessesHidden: s.status.ProcessesHidden, ProcessesReason: s.status.ProcessesReason,
		WriteRoots: cfg.WriteRoots, WriteRefused: cfg.WriteRefused}
	s.readOnly, s.status.ConfigReason = readOnlyFiles(cfg.ReadOnly, s.hide, s.status.ProcessesReason)
	return s, nil
}

// readOnlyFiles makes the missing config files and returns the paths to
// bind, and why any stay writable. Bind mounts need the mount namespace of
// hidden processes; a symlink is left alone (the bind would land on its
// target, and the link itself could still be replaced).
func readOnlyFiles(files []ReadOnlyFile, hide bool, whyNot string) ([]string, string) {
	if len(files) == 0 {
		return nil, ""
	}
	if !hide {
		return nil, "config files not bound read-only, so writable but for those Landlock keeps (Claude Code's): " + whyNot
	}
	var out, left []string
	for _, f := range files {
		p := abs(f.Path)
		if p == "" {
			continue
		}
		fi, err := os.Lstat(p)
		if errors.Is(err, os.ErrNotExist) && !f.Make && !f.Dir {
			continue // not to be made: Protect keeps it from being planted
		}
		if errors.Is(err, os.ErrNotExist) {
			err = makeConfig(f)
			if err == nil {
				fi, err = os.Lstat(p)
			}
		}
		switch {
		case err != nil:
			left = append(left, fmt.Sprintf("%s (%v)", p, err))
		case !fi.Mode().IsRegular() && !fi.IsDir():
			left = append(left, p+" (not a regular file)")
		default:
			out = append(out, p)
		}
	}
	if len(left) > 0 {
		return out, "config files left writable: " + strings.Join(left, ", ")
	}
	return out, ""
}

// makeConfig creates a missing config file (0600, holding Init) or
// directory, and the directories above it.
func makeConfig(f ReadOnlyFile) error {
	if f.Dir {
		return os.MkdirAll(f.Path, 0o700)
	}
	if err := os.MkdirAll(filepath.Dir(f.Path), 0o700); err != nil {
		return err
	}
	w, err := os.OpenFile(f.Path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600) // O_EXCL: not through a symlink
	if errors.Is(err, os.ErrExist) {
		return nil // made meanwhile: Lstat judges it
	}
	if err != nil {
		return err
	}
	_, err = w.WriteString(f.Init)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	return err
}

// Status is how the run is confined.
func (s *Sandbox) Status() Status {
	if s == nil {
		return Status{Mode: ModeOff, Reason: "no launcher"}
	}
	st := s.status
	st.Cgroup = s.cgroup.Load()
	if st.Limits != nil {
		ls := *st.Limits
		ls.PidsMaxHits, ls.OOMKills = s.pidsHits.Load(), s.oomKills.Load()
		if why := s.unlimited.Load(); why != nil {
			ls.Reason = strings.TrimPrefix(ls.Reason+"; "+*why, "; ")
		}
		st.Limits = &ls
	}
	return st
}

// Close removes the private temp dir.
func (s *Sandbox) Close() error {
	if s == nil || s.status.TempDir == "" {
		return nil
	}
	return os.RemoveAll(s.status.TempDir)
}

// Grants turns a run's paths into grants: everything readable, the write
// roots and the temp dir writable, the device files a program needs, the
// secrets hidden and tai's own files read-only.
func Grants(write, deny, protect []string, tmp string) []Grant {
	gs := []Grant{{Path: "/", Access: Read}}
	for _, p := range write {
		if p = abs(p); p != "" {
			gs = append(gs, Grant{Path: p, Access: Write})
		}
	}
	if tmp != "" {
		gs = append(gs, Grant{Path: tmp, Access: Write})
	}
	for _, d := range devices {
		gs = append(gs, Grant{Path: d, Access: Write})
	}
	for _, p := range deny {
		if p = abs(p); p != "" {
			gs = append(gs, Grant{Path: p, Access: None})
		}
	}
	for _, p := range protect {
		if p = abs(p); p == "" {
			continue
		}
		gs = append(gs, Grant{Path: existingOrParent(p, write), Access: Read})
	}
	return gs
}

// devices are the device files and directories normal programs write.
var devices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom",
	"/dev/tty", "/dev/ptmx", "/dev/pts", "/dev/shm"}

func abs(p string) string {
	if p == "" || !filepath.IsAbs(p) {
		return ""
	}
	return filepath.Clean(p)
}

// existingOrParent is p, or where p is missing, its nearest existing
// parent that is still strictly inside a write root: protecting that keeps
// p from being created. Outside every write root p needs no protection
// beyond the default (read-only).
func existingOrParent(p string, write []string) string {
	for q := p; ; q = filepath.Dir(q) {
		if _, err := os.Lstat(q); err == nil {
			return q
		}
		inside := false
		for _, w := range write {
			if w = abs(w); w != "" && within(filepath.Dir(q), w) && filepath.Dir(q) != w {
				inside = true
			}
		}
		if !inside || q == "/" {
			return q // the root itself (missing p) is split around q
		}
	}
}

// ports reads HOST:PORT entries (comma lists allowed) into ports.
func ports(list []string) ([]uint16, error) {
	var out []uint16
	for _, item := range list {
		for _, hp := range strings.Split(item, ",") {
			hp = strings.TrimSpace(hp)
			if hp == "" {
				continue
			}
			_, port, err := net.SplitHostPort(hp)
			if err != nil {
				return nil, fmt.Errorf("--net-allow %q: want HOST:PORT: %w", hp, err)
			}
			n, err := strconv.ParseUint(port, 10, 16)
			if err != nil || n == 0 {
				return nil, fmt.Errorf("--net-allow %q: bad port", hp)
			}
			out = append(out, uint16(n))
		}
	}
	return out, nil
}

// EndpointsFromEnv finds the model endpoints an agent is pointed at in its
// environment (ANTHROPIC_BASE_URL, OPENAI_BASE_URL, ...), as HOST:PORT,
// plus the public APIs' port 443: what the network rule must let through
// besides --net-allow.
func EndpointsFromEnv(env []string) []string {
	out := []string{"api.anthropic.com:443"}
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !(strings.HasSuffix(k, "_BASE_URL") || strings.HasSuffix(k, "_API_BASE") || strings.HasSuffix(k, "_ENDPOINT")) {
			continue
		}
		u, err := url.Parse(v)
		if err != nil || u.Host == "" {
			continue
		}
		port := u.Port()
		if port == "" {
			port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
		}
		if port != "" {
			out = append(out, net.JoinHostPort(u.Hostname(), port))
		}
	}
	return out
}

// rules is what a run's Landlock ruleset is made of.
type rules struct {
	Grants []Grant
	Net    bool
	Ports  []uint16
}

// report is the launcher's answer, one JSON line on fd 5, once the agent
// runs (or it could not start it).
type report struct {
	Pid      int    `json:"pid,omitempty"`
	InCgroup bool   `json:"in_cgroup,omitempty"`
	Error    string `json:"error,omitempty"`
}

// parseReport reads a launcher's report. The usual one, a pid, is read by
// hand: encoding/json's first use of a type is a reflection walk, a
// fraction of a millisecond on every run's critical path.
func parseReport(line []byte) (report, error) {
	l := strings.TrimSuffix(string(line), "\n")
	if rest, ok := strings.CutPrefix(l, `{"pid":`); ok {
		num, tail, comma := strings.Cut(rest, ",")
		if !comma {
			num, tail = strings.TrimSuffix(rest, "}"), "}"
			if num == rest {
				tail = "" // no closing brace: not one of ours
			}
		}
		pid, err := strconv.Atoi(num)
		if err == nil && pid > 0 {
			switch tail {
			case "}", `"in_cgroup":false}`:
				return report{Pid: pid}, nil
			case `"in_cgroup":true}`:
				return report{Pid: pid, InCgroup: true}, nil
			}
		}
	}
	var r report
	err := json.Unmarshal(line, &r)
	return r, err
}

// Arg is the hidden first argument that makes tai the launcher.
const Arg = "__tai-launch"

// fds the launcher receives: the spec (a Unix socket, for the descriptors
// that come with it), the control pipe, the report.
const (
	fdSpec   = 3
	fdCtl    = 4
	fdReport = 5
)

// Proc is one process started through the launcher.
type Proc struct {
	sb       *Sandbox
	cmd      *exec.Cmd
	spec     launchSpec
	specFd   int      // tai's end of the spec socket
	ctl      *os.File // tai's end: closing it kills the tree
	reportR  *os.File
	children []*os.File // the launcher's ends, closed once it started
	cgroup   string
	v1       [2]string // the launch's cgroup v1 cgroups (limitPlan)
	agentPid int
}

// Wrap rewrites cmd (not yet started) to run through the launcher: the
// same stdio, directory and process attributes, now the launcher's, which
// hands them to the agent. A nil Sandbox leaves cmd alone and returns a
// nil *Proc, whose methods do nothing. After cmd.Start, call Started.
func (s *Sandbox) Wrap(cmd *exec.Cmd) (*Proc, error) {
	if s == nil {
		return nil, nil
	}
	if cmd.Err != nil {
		return nil, cmd.Err // the program was not found: say so as exec would
	}
	if len(cmd.ExtraFiles) > 0 {
		return nil, errors.New("sandbox: command already has extra files")
	}
	env := cmd.Env
	if env == nil {
		env = secretenv.Scrub(os.Environ()) // tai's own secrets never reach what it confines
	}
	// exec.Cmd keeps the last of duplicate names; the launcher's exec
	// would pass them all, and getenv takes the first.
	env = dedupEnv(env)
	if s.status.TempDir != "" {
		env = setEnv(env, "TMPDIR", s.status.TempDir)
	}
	for _, kv := range s.env {
		k, v, _ := strings.Cut(kv, "=")
		env = setEnv(env, k, v)
	}
	p := &Proc{sb: s, cmd: cmd, spec: launchSpec{Path: cmd.Path, Args: cmd.Args, Env: env, Ruleset: -1, CgDir: -1, CgKill: -1}, specFd: -1}
	specFd, specChild, err := specSocket()
	if err != nil {
		return nil, fmt.Errorf("sandbox: spec socket: %w", err)
	}
	var files [4]*os.File
	if files[0], files[1], err = os.Pipe(); err == nil { // ctl: r, w
		files[2], files[3], err = os.Pipe() // report: r, w
	}
	if err != nil {
		closeFd(specFd)
		specChild.Close()
		for _, f := range files {
			if f != nil {
				f.Close()
			}
		}
		return nil, fmt.Errorf("sandbox: pipes: %w", err)
	}
	p.specFd, p.ctl, p.reportR = specFd, files[1], files[2]
	p.children = []*os.File{specChild, files[0], files[3]}
	cmd.ExtraFiles = p.children
	parentDeathSignal(cmd)
	cmd.Path = s.exe
	cmd.Args = []string{"tai", Arg}
	// The launcher's own environment: it gives the agent the spec's. The
	// Go launcher (a build without cgo) runs its Go code on one thread,
	// all it needs, and its runtime then starts without reading the
	// cgroup's CPU limit.
	cmd.Env = []string{"GOMAXPROCS=1"}
	if s.impl != "" {
		cmd.Env = append(cmd.Env, "TAI_LAUNCHER="+s.impl)
	}
	return p, nil
}

func dedupEnv(env []string) []string {
	last := map[string]int{}
	for i, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		last[k] = i
	}
	out := make([]string, 0, len(last))
	for i, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if last[k] == i {
			out = append(out, kv)
		}
	}
	return out
}

func setEnv(env []string, k, v string) []string {
	out := make([]string, 0, len(env)+1)
	for _, e := range env {
		if !strings.HasPrefix(e, k+"=") {
			out = append(out, e)
		}
	}
	return append(out, k+"="+v)
}

// Start starts cmd through the launcher: Wrap, start (nil: cmd.Start; a
// pty's start, say), then Started. On failure a launcher that did start
// has been waited for and released, so no zombie or cgroup is left and the
// caller has only its own ends of cmd's stdio to close. A nil Sandbox
// starts cmd as it is.
func (s *Sandbox) Start(cmd *exec.Cmd, start func() error) (*Proc, error) {
	p, err := s.Wrap(cmd)
	if err != nil {
		return nil, err
	}
	if start == nil {
		start = cmd.Start
	}
	if err := p.Started(start()); err != nil {
		if cmd.Process != nil {
			_ = cmd.Wait()
			p.Release()
		}
		return nil, err
	}
	return p, nil
}

// Started is called after cmd.Start with its error: it waits for the
// launcher to say that the agent runs, confined, or why not. On error the
// launcher is gone or going (the caller still waits for cmd).
func (p *Proc) Started(startErr error) error {
	if p == nil {
		return startErr
	}
	for _, f := range p.children {
		f.Close()
	}
	if startErr != nil {
		closeFd(p.specFd)
		p.ctl.Close()
		p.reportR.Close()
		return startErr
	}
	// The spec is finished here, while the launcher starts: the Landlock
	// ruleset (planning it walks the directories on the way to each
	// exception) and the cgroup, named after the launcher. Here, not in a
	// goroutine: with tai's one thread, a goroutine could wait behind
	// others for the CPU, and the launcher waits for the spec.
	defer p.reportR.Close()
	if err := p.sendSpec(p.cmd.Process.Pid); err != nil {
		p.ctl.Close()
		return fmt.Errorf("sandbox: %w", err)
	}
	line, err := bufio.NewReader(p.reportR).ReadBytes('\n')
	if err != nil && len(line) == 0 {
		p.ctl.Close()
		return fmt.Errorf("sandbox: the launcher ended before starting the agent: %w", err)
	}
	r, err := parseReport(line)
	if err != nil {
		p.ctl.Close()
		return fmt.Errorf("sandbox: launcher report %q: %w", line, err)
	}
	if r.Error != "" {
		p.ctl.Close()
		return fmt.Errorf("sandbox: %s", r.Error)
	}
	p.agentPid = r.Pid
	if r.InCgroup {
		p.sb.cgroup.Store(true)
	}
	return nil
}

// sendSpec builds the rest of the spec for the launcher pid, sends it with
// its descriptors, and closes tai's end (the launcher reads to EOF). A
// failure closes it all the same: the launcher then reports a short spec.
func (p *Proc) sendSpec(launcher int) error {
	defer closeFd(p.specFd)
	sp := p.spec
	if r := p.sb.rules; r != nil {
		fd, flags, err := ruleset(r)
		if err != nil {
			return err
		}
		if fd >= 0 {
			defer closeFd(fd)
		}
		sp.Ruleset, sp.Restrict = fd, flags
	}
	// Made by tai for the launcher, whose cgroup is tai's: where none can
	// be made, the subreaper alone holds the tree. tai removes it
	// (Release) once the launcher has been waited for.
	cg := newCgroup(launcher)
	if cg != nil {
		defer cg.closeFds()
		p.cgroup = cg.dir
		sp.CgDir, sp.CgKill = cg.dirFd, cg.kill
	}
	v1, err := p.sb.plan.limit(cg, launcher)
	defer v1.closeFds()
	p.v1 = v1.dir
	sp.Join, sp.Home = v1.join, v1.home
	if err != nil {
		// The agent runs, held by the subreaper and its cgroup if any;
		// the status says which launch went without its limits.
		why := fmt.Sprintf("a launch ran without its limits: %v", err)
		p.sb.unlimited.Store(&why)
		v1.closeFds()
		sp.Join, sp.Home = v1.join, v1.home
	}
	sp.Hide = p.sb.hide
	if sp.Hide {
		sp.ReadOnly = p.sb.readOnly
	}
	b, fds, err := sp.encode()
	if err != nil {
		return err
	}
	return sendWithRights(p.specFd, b, fds)
}

// Kill makes the launcher SIGKILL the agent and everything below it, and
// exit. Idempotent.
func (p *Proc) Kill() {
	if p != nil {
		p.ctl.Close()
	}
}

// Killer is Kill as a func for agentproc.Stopping, nil without a
// launcher (then a SIGKILL of the group is the kill).
func (p *Proc) Killer() func() {
	if p == nil {
		return nil
	}
	return p.Kill
}

// AgentPid is the agent's pid below the launcher (0 without one).
func (p *Proc) AgentPid() int {
	if p == nil {
		return 0
	}
	return p.agentPid
}

// Release is called once the launcher has been waited for: whatever is
// left in its cgroup (if the launcher itself was SIGKILLed) is killed and
// the cgroup removed.
func (p *Proc) Release() {
	if p == nil {
		return
	}
	p.ctl.Close()
	pids, oom := p.sb.plan.caught(p.cgroup, p.v1)
	p.sb.pidsHits.Add(pids)
	p.sb.oomKills.Add(oom)
	if p.cgroup != "" {
		releaseCgroup(p.cgroup)
	}
	removeV1(p.v1)
}
