package worktree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
)

// GitError is a git command that failed, with what it printed.
type GitError struct {
	Args   []string
	Stderr string
	Err    error
}

func (e *GitError) Error() string {
	msg := strings.TrimSpace(e.Stderr)
	if msg == "" {
		msg = e.Err.Error()
	}
	return fmt.Sprintf("git %s: %s", strings.Join(e.Args, " "), msg)
}

func (e *GitError) Unwrap() error { return e.Err }

// ErrGitDir is a worktree whose .git no longer points at the gitdir git
// made for it under the repository's .git/worktrees/: tai refuses to run
// git there, since the gitdir (and its config) would be whoever rewrote it.
var ErrGitDir = errors.New("worktree's .git does not point at its registered gitdir")

// safeConfig turns off, for tai's own git calls, every configuration key
// that makes git run a command or talk to the network, whoever set it: the
// agents work in these repositories and may have written their config.
// Command-line -c wins over every config file. The drivers a config names
// (filter.<x>, merge.<x>) cannot be turned off as a family: driverConfig
// turns off each one the config defines.
var safeConfig = []string{
	"core.fsmonitor=false",
	"core.hooksPath=/dev/null",
	"core.pager=cat",
	"core.editor=false",
	"sequence.editor=false",
	"core.askPass=",
	"core.gitProxy=",
	"core.alternateRefsCommand=",
	"diff.external=",
	"gpg.program=false",
	"commit.gpgSign=false",
	"tag.gpgSign=false",
	"rebase.updateRefs=false",
	"rebase.autoStash=false",
	"submodule.recurse=false",
	"fetch.recurseSubmodules=false",
	"push.recurseSubmodules=no",
	"core.untrackedCache=false",
	"advice.detachedHead=false",
	// No automatic gc in the middle of a fleet: it repacks refs other
	// tasks are updating.
	"gc.auto=0",
	"maintenance.auto=false",
}

// localConfig are safeConfig's network keys for a git that stays in the
// repository: no transport at all, no credential helper, no ssh.
var localConfig = []string{
	"protocol.allow=never",
	"core.sshCommand=",
	"credential.helper=",
}

// networkConfig are those for a git that clones, fetches or pushes (a
// worker, the NATS coordinator): the transports a repository URL names,
// never ext:: (which runs a command). The user's ssh command and
// credential helper stay: they can come only from config files no agent
// writes (runConfig refuses the others).
var networkConfig = []string{
	"protocol.allow=never",
	"protocol.file.allow=always",
	"protocol.ssh.allow=always",
	"protocol.https.allow=always",
	"protocol.http.allow=always",
	"protocol.git.allow=always",
}

// gitEnv is the fixed environment of tai's git calls: only what git needs
// to find the user's identity and programs; nothing inherited that points
// it at another repository, config or command (GIT_DIR, GIT_CONFIG_*,
// GIT_EXTERNAL_DIFF, GIT_SSH_COMMAND, ...).
func gitEnv(network bool) []string {
	env := []string{
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_OPTIONAL_LOCKS=0",
		"GIT_PAGER=cat",
		"GIT_EDITOR=false",
		"GIT_ASKPASS=",
		"SSH_ASKPASS=",
		"GIT_NO_REPLACE_OBJECTS=1",
		"LC_ALL=C",
	}
	keep := []string{"PATH", "HOME", "XDG_CONFIG_HOME", "TMPDIR", "USER", "LOGNAME",
		// The user's identity, when set in the environment.
		"GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "EMAIL"}
	if network {
		keep = append(keep, "SSH_AUTH_SOCK", "HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy")
	}
	for _, k := range keep {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// Git runs git for tai, hardened: every git call tai makes goes through
// one (a Manager's, a worker's clone's, a coordinator's). It runs git -C
// <dir> with a fixed environment and safeConfig; in a linked worktree of
// Repo only after checking that its .git names the gitdir git registered
// for it, and with that gitdir named explicitly; with every filter and
// merge driver the config defines turned off; never when the config it
// would read comes from a file inside an agent's worktree (an include of
// a tracked file); and with --no-ext-diff --no-textconv for diff, log and
// show. The zero Git runs outside any repository (a clone).
type Git struct {
	// Repo is the repository's top level, or a bare repository: where git
	// runs from, a directory known to exist.
	Repo string
	// CommonDir is its git common directory; a linked worktree's .git
	// must point at a gitdir under <CommonDir>/worktrees.
	CommonDir string
	// AgentRoots are the directories agents write in (worktrees): git
	// config read from a file there is refused.
	AgentRoots []string
	// Env is more environment: a worker's identity.
	Env []string
	// Network lets git clone, fetch and push (networkConfig).
	Network bool

	mu    sync.Mutex
	scans map[string]driverScan // by gitdir ("" for Repo's own)
}

// driverScan is a config read's result, valid while none of the files it
// came from, nor those git reads first, has changed.
type driverScan struct {
	off   []string
	files map[string]fileSig
}

type fileSig struct {
	exists      bool
	size, mtime int64
	ino         uint64
}

func sigOf(p string) fileSig {
	fi, err := os.Stat(p)
	if err != nil {
		return fileSig{}
	}
	sig := fileSig{exists: true, size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		sig.ino = st.Ino
	}
	return sig
}

// ErrAgentConfig is git config read from a file an agent can write.
var ErrAgentConfig = errors.New("git config comes from a file inside an agent's worktree")

// run runs git in dir (Repo, a linked worktree of it, or for the zero Git
// any directory) and returns its standard output. It is this package's
// own: other packages run git through the named operations (ops.go), so
// none composes a git command line of its own.
func (g *Git) run(ctx context.Context, dir string, args ...string) (string, error) {
	return g.runInput(ctx, dir, nil, args...)
}

// runInput is run with stdin as git's standard input.
func (g *Git) runInput(ctx context.Context, dir string, stdin []byte, args ...string) (string, error) {
	pre, err := g.prefix(ctx, dir, runsDrivers(args))
	if err != nil {
		return "", err
	}
	if len(args) > 0 && (args[0] == "diff" || args[0] == "log" || args[0] == "show") {
		// An external diff or textconv driver is a command too (named by
		// .gitattributes, which the agent writes).
		args = append([]string{args[0], "--no-ext-diff", "--no-textconv"}, args[1:]...)
	}
	return g.exec(ctx, stdin, append(pre, args...), args)
}

// prefix is what goes before the subcommand: the gitdir, -C and the -c
// settings, those that turn off the config's drivers included.
func (g *Git) prefix(ctx context.Context, dir string, drivers bool) ([]string, error) {
	full := []string{"--no-pager"}
	if dir == "" {
		dir = g.Repo
	}
	if dir != "" {
		if _, err := os.Stat(dir); err != nil {
			return nil, fmt.Errorf("refusing to run git in %s: %w", dir, err)
		}
	}
	if g.Repo != "" && !sameFile(dir, g.Repo) {
		// A linked worktree: use the gitdir git registered for it, named
		// explicitly, so a rewritten .git file is refused here and cannot
		// be swapped in between the check and the run.
		gd, err := worktreeGitDir(g.CommonDir, dir)
		if err != nil {
			return nil, err
		}
		full = append(full, "--git-dir="+gd, "--work-tree="+dir)
	}
	if dir != "" {
		full = append(full, "-C", dir)
	}
	full = append(full, flagged(safeConfig)...)
	if g.Network {
		full = append(full, flagged(networkConfig)...)
	} else {
		full = append(full, flagged(localConfig)...)
	}
	if g.Repo == "" || !drivers {
		return full, nil // no repository (the user's own config only), or no driver to run
	}
	off, err := g.drivers(ctx, full, dir, gitDirArg(full))
	if err != nil {
		return nil, err
	}
	return append(full, off...), nil
}

// flagged is -c before each setting.
func flagged(settings []string) []string {
	out := make([]string, 0, 2*len(settings))
	for _, c := range settings {
		out = append(out, "-c", c)
	}
	return out
}

// ErrEmbedded is a git repository inside a worktree where git add would
// take it.
var ErrEmbedded = errors.New("a git repository inside the worktree")

// AddAll stages everything in the worktree at dir, as git add -A does:
// the one way tai stages an agent's work. It reads the worktree's status
// first (one git process, as a checkpoint did before): nothing changed
// stages nothing and returns false; a git repository inside the worktree
// among the files git add -A would take (a .git directory or file below
// its top, not ignored) is refused, since git would add it as a gitlink,
// a commit id without its files, and read that repository to do so.
func (g *Git) AddAll(ctx context.Context, dir string) (bool, error) {
	out, err := g.run(ctx, dir, "status", "--porcelain=v1", "-z", "--untracked-files=normal", "--no-renames")
	if err != nil {
		return false, err
	}
	if out == "" {
		return false, nil
	}
	for _, e := range strings.Split(out, "\x00") {
		p, ok := strings.CutPrefix(e, "?? ")
		if !ok || !strings.HasSuffix(p, "/") {
			continue // git lists a directory holding a repository as the directory
		}
		found := ""
		_ = filepath.WalkDir(filepath.Join(dir, p), func(q string, d fs.DirEntry, err error) error {
			if err == nil && d.Name() == ".git" {
				found = q
				return fs.SkipAll
			}
			return nil
		})
		if found != "" {
			rel, _ := filepath.Rel(dir, filepath.Dir(found))
			return false, fmt.Errorf("refusing to commit in %s: %w: %s has a .git (an embedded repository, which git would add as a gitlink without its files); remove it or ignore the directory", dir, ErrEmbedded, rel)
		}
	}
	if _, err := g.run(ctx, dir, "add", "-A"); err != nil {
		return false, err
	}
	return true, nil
}

// plumbing are the git commands tai runs that read no file of a worktree
// through .gitattributes: no filter or merge driver can run.
var plumbing = map[string]bool{"rev-parse": true, "config": true, "for-each-ref": true, "cat-file": true, "update-ref": true,
	"symbolic-ref": true, "merge-base": true, "rev-list": true, "ls-tree": true, "commit-tree": true, "show-ref": true,
	"branch": true, "log": true, "version": true, "init": true, "clone": true, "fetch": true, "push": true}

// runsDrivers: the command may run a filter or merge driver (it reads or
// writes a worktree's files, or merges).
func runsDrivers(args []string) bool {
	if len(args) == 0 {
		return false
	}
	if args[0] == "worktree" && len(args) > 1 {
		return args[1] == "add" || args[1] == "remove" || args[1] == "move"
	}
	return !plumbing[args[0]]
}

// gitDirArg is the --git-dir= of a prefix, or "".
func gitDirArg(full []string) string {
	for _, a := range full {
		if gd, ok := strings.CutPrefix(a, "--git-dir="); ok {
			return gd
		}
	}
	return ""
}

// drivers is driverConfig, read again only when a config file changed:
// a fleet runs git many times on the same config.
func (g *Git) drivers(ctx context.Context, pre []string, dir, gd string) ([]string, error) {
	g.mu.Lock()
	sc, ok := g.scans[gd]
	g.mu.Unlock()
	if ok {
		for f, sig := range sc.files {
			if sigOf(f) != sig {
				ok = false
				break
			}
		}
		if ok {
			return sc.off, nil
		}
	}
	// The files git reads whether or not they exist yet, then those the
	// read names (includes).
	files := map[string]fileSig{}
	home, _ := os.UserHomeDir()
	cands := []string{filepath.Join(home, ".gitconfig")}
	if x := os.Getenv("XDG_CONFIG_HOME"); x != "" {
		cands = append(cands, filepath.Join(x, "git", "config"))
	} else {
		cands = append(cands, filepath.Join(home, ".config", "git", "config"))
	}
	if g.CommonDir != "" {
		cands = append(cands, filepath.Join(g.CommonDir, "config"))
	}
	if gd != "" {
		cands = append(cands, filepath.Join(gd, "config.worktree"))
	}
	for _, f := range cands {
		files[f] = sigOf(f)
	}
	off, origins, err := g.driverConfig(ctx, pre, dir)
	if err != nil {
		return nil, err
	}
	for _, f := range origins {
		files[f] = sigOf(f)
	}
	g.mu.Lock()
	if g.scans == nil {
		g.scans = map[string]driverScan{}
	}
	g.scans[gd] = driverScan{off: off, files: files}
	g.mu.Unlock()
	return off, nil
}

// driverConfig reads the config git would read in dir (pre: its gitdir
// and -c settings) and returns the -c settings that turn off every filter
// and merge driver it defines: .gitattributes, which the agent writes,
// picks among them, and each runs a command. A config read from a file
// in an agent's worktree (include.path, includeIf) is refused: the agent
// could change it between this read and the command.
func (g *Git) driverConfig(ctx context.Context, pre []string, dir string) (off, origins []string, err error) {
	out, err := g.exec(ctx, nil, append(pre, "config", "--list", "--show-origin", "-z"), []string{"config", "--list"})
	if err != nil {
		return nil, nil, err
	}
	seen := map[string]bool{}
	fields := strings.Split(out, "\x00")
	for i := 0; i+1 < len(fields); i += 2 {
		origin, kv := fields[i], fields[i+1]
		key, val, _ := strings.Cut(kv, "\n")
		if f, ok := strings.CutPrefix(origin, "file:"); ok {
			if !filepath.IsAbs(f) {
				f = filepath.Join(dir, f)
			}
			origins = append(origins, f)
			if g.agentWritable(f, dir) {
				return nil, nil, fmt.Errorf("refusing to run git in %s: %w (%s sets %s)", dir, ErrAgentConfig, f, key)
			}
			lk := strings.ToLower(key)
			if lk == "include.path" || (strings.HasPrefix(lk, "includeif.") && strings.HasSuffix(lk, ".path")) {
				// An include of a file not there yet is no origin, but
				// the agent could make it.
				inc := val
				if rest, ok := strings.CutPrefix(inc, "~/"); ok {
					home, _ := os.UserHomeDir()
					inc = filepath.Join(home, rest)
				} else if !filepath.IsAbs(inc) {
					inc = filepath.Join(filepath.Dir(f), inc)
				}
				if g.agentWritable(inc, dir) {
					return nil, nil, fmt.Errorf("refusing to run git in %s: %w (%s includes %s)", dir, ErrAgentConfig, f, inc)
				}
				origins = append(origins, inc)
			}
		}
		section, rest, ok := strings.Cut(key, ".")
		if !ok || (section != "filter" && section != "merge") {
			continue
		}
		i := strings.LastIndexByte(rest, '.')
		if i <= 0 || seen[section+"."+rest[:i]] {
			continue // merge.renames and the like: no driver
		}
		name := rest[:i]
		seen[section+"."+name] = true
		switch section {
		case "filter":
			off = append(off, "-c", "filter."+name+".clean=", "-c", "filter."+name+".smudge=",
				"-c", "filter."+name+".process=", "-c", "filter."+name+".required=false")
		case "merge":
			// An empty driver runs nothing: the merge of such a path
			// conflicts.
			off = append(off, "-c", "merge."+name+".driver=")
		}
	}
	return off, origins, nil
}

// agentWritable: the config file f is inside the linked worktree dir or
// an agent root, and not in the repository's git directory.
func (g *Git) agentWritable(f, dir string) bool {
	f = realPath(f)
	if g.CommonDir != "" && within(f, realPath(g.CommonDir)) {
		return false
	}
	roots := g.AgentRoots
	if !sameFile(dir, g.Repo) {
		roots = append(roots[:len(roots):len(roots)], dir)
	}
	for _, r := range roots {
		if within(f, realPath(r)) {
			return true
		}
	}
	return false
}

// realPath is p with its symlinks resolved, as far as they exist.
func realPath(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	if d := filepath.Dir(p); d != p {
		return filepath.Join(realPath(d), filepath.Base(p))
	}
	return p
}

func within(p, root string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

func (g *Git) exec(ctx context.Context, stdin []byte, full, args []string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", full...)
	cmd.Dir = g.Repo
	if cmd.Dir == "" {
		cmd.Dir = os.TempDir()
	}
	cmd.Env = append(gitEnv(g.Network), g.Env...)
	cmd.SysProcAttr = gitProcAttr()
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), &GitError{Args: args, Stderr: errb.String(), Err: err}
	}
	return out.String(), nil
}

// git runs git -C dir args... from a directory that is known to exist (the
// repository's top level), never from a worktree that may have been
// deleted: a git run from a vanished cwd silently falls through to whatever
// repository encloses it.
func (m *Manager) git(ctx context.Context, dir string, args ...string) (string, error) {
	return m.gitIn(ctx, dir, nil, args...)
}

func (m *Manager) gitIn(ctx context.Context, dir string, stdin []byte, args ...string) (string, error) {
	return m.Git().runInput(ctx, dir, stdin, args...)
}

// Git is the manager's git runner: every worktree under Root is an
// agent's. It is made once Open has found the repository.
func (m *Manager) Git() *Git {
	if m.runner != nil {
		return m.runner
	}
	return &Git{Repo: m.Repo, CommonDir: m.CommonDir} // Open, finding the repository
}

// NetGit is Git that may also clone, fetch and push (a NATS
// coordinator's clone).
func (m *Manager) NetGit() *Git {
	m.netOnce.Do(func() {
		m.netRunner = &Git{Repo: m.Repo, CommonDir: m.CommonDir, AgentRoots: []string{m.Root}, Network: true}
	})
	return m.netRunner
}

func (m *Manager) worktreeGitDir(dir string) (string, error) {
	return worktreeGitDir(m.CommonDir, dir)
}

// worktreeGitDir checks that the linked worktree at dir is one git
// registered in the repository of commonDir: its .git is a regular file naming a
// directory directly under <common dir>/worktrees/, whose gitdir file
// points back at dir/.git and whose commondir is this repository's. It
// returns that gitdir. The agent working in dir can rewrite dir/.git, but
// not (under tai's sandbox) the repository's .git/worktrees.
func worktreeGitDir(commonDir, dir string) (string, error) {
	dotgit := filepath.Join(dir, ".git")
	bad := func(why string, a ...any) error {
		return fmt.Errorf("refusing to run git in %s: %w (%s)", dir, ErrGitDir, fmt.Sprintf(why, a...))
	}
	fi, err := os.Lstat(dotgit)
	if err != nil {
		return "", bad("%v", err)
	}
	if !fi.Mode().IsRegular() {
		return "", bad("%s is a %s, not the file git writes", dotgit, fi.Mode().Type())
	}
	b, err := os.ReadFile(dotgit)
	if err != nil {
		return "", bad("%v", err)
	}
	gd, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir: ")
	if !ok || strings.ContainsAny(gd, "\n\x00") {
		return "", bad("%s is not a gitdir link", dotgit)
	}
	if !filepath.IsAbs(gd) {
		gd = filepath.Join(dir, gd)
	}
	gd = filepath.Clean(gd)
	if !sameFile(filepath.Dir(gd), filepath.Join(commonDir, "worktrees")) {
		return "", bad("it points at %s, outside %s", gd, filepath.Join(commonDir, "worktrees"))
	}
	if fi, err := os.Lstat(gd); err != nil || !fi.IsDir() {
		return "", bad("%s is not a directory", gd)
	}
	back, err := os.ReadFile(filepath.Join(gd, "gitdir"))
	if err != nil {
		return "", bad("%v", err)
	}
	if !sameFile(strings.TrimSpace(string(back)), dotgit) {
		return "", bad("%s belongs to %s", gd, strings.TrimSpace(string(back)))
	}
	cd, err := os.ReadFile(filepath.Join(gd, "commondir"))
	if err != nil {
		return "", bad("%v", err)
	}
	c := strings.TrimSpace(string(cd))
	if !filepath.IsAbs(c) {
		c = filepath.Join(gd, c)
	}
	if !sameFile(c, commonDir) {
		return "", bad("%s's common dir is %s", gd, c)
	}
	return gd, nil
}

// sameFile: a and b name the same existing file (symlinked temp dirs
// make equal paths look different).
func sameFile(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}

// exitCode is the exit status of a failed git command, or -1.
func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}
