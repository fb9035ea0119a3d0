package policy

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/tai-dev/tai/policy/shell"
	"github.com/tai-dev/tai/worktree"
)

// This file reads a git command line as git reads it, for
// floor-git-force-push: its global options (-C, -c, --git-dir), aliases
// (from -c alias.X=... and from the repository's and the user's config,
// expanded recursively up to a bound), and a push's options (abbreviated
// as git's parse-options accepts them), refspecs (+ forces, wildcards,
// :dst deletes, DWIM short names such as heads/main), and what a push with
// no refspec pushes (push.default, remote.<name>.push and .mirror,
// branch.<name>.merge). A push the sandbox cannot see (it talks to the
// network) is judged here only.

// maxGitAliases bounds alias expansion (git itself stops at a loop).
const maxGitAliases = 8

// gitConf is git configuration: values by canonical key (section and name
// lower case, subsection as written), in the order git reads them.
type gitConf map[string][]string

// gitKey canonicalises a configuration key as git does.
func gitKey(k string) string {
	i, j := strings.IndexByte(k, '.'), strings.LastIndexByte(k, '.')
	if i < 0 {
		return strings.ToLower(k)
	}
	if i == j {
		return strings.ToLower(k)
	}
	return strings.ToLower(k[:i]) + k[i:j] + strings.ToLower(k[j:])
}

func (c gitConf) add(key, val string) { c[gitKey(key)] = append(c[gitKey(key)], val) }

func (c gitConf) get(key string) (string, bool) {
	v := c[gitKey(key)]
	if len(v) == 0 {
		return "", false
	}
	return v[len(v)-1], true
}

// readGitConfig reads the configuration git sees in dir (the repository's,
// the user's and the system's, includes followed), with the global options
// opts (--git-dir=...). It runs `git config --list`, which runs nothing
// the repository names (no hooks, filters or fsmonitor). nil when git
// cannot tell (no git, a bad repository): the caller reads that at its
// most dangerous.
func readGitConfig(dir string, opts, env []string) gitConf {
	// Through tai's one git wrapper, with the command's own environment
	// over its fixed one: what that command's git would read.
	g := &worktree.Git{Env: env}
	out, err := g.ConfigList(context.Background(), dir, opts...)
	if err != nil {
		// Outside a repository git still lists the user's config; an error
		// means a config it cannot read.
		return nil
	}
	conf := gitConf{}
	for _, ent := range bytes.Split([]byte(out), []byte{0}) {
		if len(ent) == 0 {
			continue
		}
		k, v, _ := strings.Cut(string(ent), "\n")
		conf.add(k, v)
	}
	return conf
}

// gitLine is a git command as git will run it.
type gitLine struct {
	cwd  string   // the directory it runs in; "" unknown
	opts []string // global options that place the repository (--git-dir, --work-tree)
	cmdC gitConf  // -c settings given on the line
	env  []string // the line's environment for git (GIT_DIR=..., HOME=...)
	// unknown: some of its config is not known before it runs (-c "$X",
	// GIT_CONFIG_PARAMETERS="$X"): an alias may be a push, a push may mirror.
	unknown bool
	conf    func() gitConf
}

// setting is a config value, -c first.
func (g *gitLine) setting(key string) (string, bool) {
	if v, ok := g.cmdC.get(key); ok {
		return v, true
	}
	if c := g.conf(); c != nil {
		return c.get(key)
	}
	return "", false
}

func (g *gitLine) settings(key string) []string {
	var out []string
	if c := g.conf(); c != nil {
		out = append(out, c[gitKey(key)]...)
	}
	return append(out, g.cmdC[gitKey(key)]...)
}

// gitCommon are git's own commands that agents run often: their names are
// never looked up as aliases (git's commands win over aliases), which saves
// reading the config for each.
var gitCommon = map[string]bool{"status": true, "log": true, "diff": true, "add": true, "commit": true, "show": true,
	"checkout": true, "switch": true, "branch": true, "fetch": true, "pull": true, "rev-parse": true, "ls-files": true,
	"init": true, "clone": true, "restore": true, "stash": true, "tag": true, "merge": true, "rebase": true,
	"remote": true, "config": true, "grep": true, "blame": true, "reset": true, "worktree": true, "describe": true,
	"cherry-pick": true, "mv": true, "rm": true, "apply": true, "version": true, "help": true}

// gitVerdict is what floor-git-force-push makes of a git command: why it
// is refused ("" = not), or a shell command an alias runs.
type gitVerdict struct {
	why   string
	shell string // an alias's !command, for the floor to read
}

// readGit reads a git command line (args after "git") run in cwd. lineC
// holds settings an earlier `git config` of the same line made.
func (e *Engine) readGit(words []shell.Word, cwd string, env map[string]string, lineC gitConf) gitVerdict {
	return e.readGitWith(words, cwd, env, lineC, readGitConfig)
}

// maxGitEnvConfig bounds GIT_CONFIG_COUNT.
const maxGitEnvConfig = 64

// readGitWith is readGit with the config read by readConf.
func (e *Engine) readGitWith(words []shell.Word, cwd string, env map[string]string, lineC gitConf, readConf func(dir string, opts, env []string) gitConf) gitVerdict {
	g := &gitLine{cwd: cwd, cmdC: gitConf{}}
	for k, v := range lineC {
		g.cmdC[k] = append([]string(nil), v...)
	}
	for k, v := range env {
		switch {
		case strings.Contains(v, shell.Unknown):
			g.unknown = true
		case k == "GIT_CONFIG_PARAMETERS":
			// 'key=value' or 'key'='value', as git writes it for -c.
			fields, ok := splitGitCmdline(strings.ReplaceAll(v, "'='", "="))
			if !ok {
				g.unknown = true
			}
			for _, f := range fields {
				k, v, _ := strings.Cut(f, "=")
				g.cmdC.add(k, v)
			}
		case k == "GIT_CONFIG_COUNT":
			n := 0
			if _, err := fmt.Sscan(v, &n); err != nil || n > maxGitEnvConfig {
				g.unknown = true
			}
			for i := 0; i < min(n, maxGitEnvConfig); i++ {
				key, kok := env[fmt.Sprint("GIT_CONFIG_KEY_", i)]
				val := env[fmt.Sprint("GIT_CONFIG_VALUE_", i)]
				if kok {
					g.cmdC.add(key, val)
				}
			}
		case strings.HasPrefix(k, "GIT_CONFIG_KEY_") || strings.HasPrefix(k, "GIT_CONFIG_VALUE_"):
		default:
			g.env = append(g.env, k+"="+v)
		}
	}
	g.conf = sync.OnceValue(func() gitConf {
		if g.cwd == "" || g.cwd == shell.CwdUnknown {
			return nil
		}
		return readConf(g.cwd, g.opts, g.env)
	})
	for expansions := 0; ; expansions++ {
		rest, ok := e.gitGlobals(g, words)
		if !ok || len(rest) == 0 {
			return gitVerdict{}
		}
		sub := rest[0]
		if !sub.Static() {
			// A subcommand known only when it runs may be a push.
			return gitVerdict{why: "a git command not known before it runs (it may be a forced push)"}
		}
		if sub.Val == "push" || sub.Val == "send-pack" {
			// send-pack is push's plumbing, with the same --force, --all,
			// --mirror and refspecs.
			return gitVerdict{why: e.gitPush(g, rest[1:])}
		}
		if gitCommon[sub.Val] || expansions == maxGitAliases {
			return gitVerdict{}
		}
		alias, ok := g.setting("alias." + sub.Val)
		if !ok {
			if v, set := g.setting("help.autocorrect"); set && autocorrects(v) && editDistance(sub.Val, "push") <= 2 {
				// git runs the command it guesses a typo meant.
				return gitVerdict{why: e.gitPush(g, rest[1:])}
			}
			if g.unknown {
				return gitVerdict{why: "git " + sub.Val + " with a config not known before it runs (it may be an alias of a forced push)"}
			}
			return gitVerdict{}
		}
		if script, ok := strings.CutPrefix(alias, "!"); ok {
			// git runs it with sh -c, its arguments after it.
			for _, w := range rest[1:] {
				script += " " + joinArgv([]string{w.Text()})
			}
			return gitVerdict{shell: script}
		}
		fields, ok := splitGitCmdline(alias)
		if !ok || len(fields) == 0 {
			return gitVerdict{} // git refuses a badly quoted alias
		}
		exp := make([]shell.Word, 0, len(fields)+len(rest)-1)
		for _, f := range fields {
			exp = append(exp, shell.Lit(f))
		}
		words = append(exp, rest[1:]...)
	}
}

// gitGlobals reads git's global options (git [opts] SUBCOMMAND ...) into
// g, as git's handle_options does (no abbreviations); false when git would
// refuse them.
func (e *Engine) gitGlobals(g *gitLine, words []shell.Word) ([]shell.Word, bool) {
	for len(words) > 0 {
		w := words[0]
		if !w.Static() {
			return words, true
		}
		a := w.Val
		if !strings.HasPrefix(a, "-") {
			return words, true
		}
		words = words[1:]
		next := func() (shell.Word, bool) {
			if len(words) == 0 {
				return shell.Word{}, false
			}
			n := words[0]
			words = words[1:]
			return n, true
		}
		switch {
		case a == "-C":
			d, ok := next()
			if !ok {
				return nil, false
			}
			if !d.Static() {
				g.unknown = true
			}
			if d.Val != "" {
				g.cwd = e.cd(g.cwd, []string{d.Val})
			}
		case a == "-c":
			kv, ok := next()
			if !ok {
				return nil, false
			}
			if !kv.Static() {
				// A setting not known before it runs may be an alias or
				// push.default.
				g.unknown = true
				continue
			}
			k, v, _ := strings.Cut(kv.Val, "=")
			g.cmdC.add(k, v)
		case strings.HasPrefix(a, "--config-env"):
			if a == "--config-env" {
				next()
			}
			g.unknown = true // its value is in the environment
		case a == "--git-dir" || a == "--work-tree":
			d, ok := next()
			if !ok {
				return nil, false
			}
			g.opts = append(g.opts, a+"="+d.Val)
		case strings.HasPrefix(a, "--git-dir=") || strings.HasPrefix(a, "--work-tree="):
			g.opts = append(g.opts, a)
		case a == "--namespace" || a == "--super-prefix":
			next()
		case a == "-h" || a == "--help" || a == "-v" || a == "--version":
			return nil, false
		}
	}
	return words, true
}

// pushOpts are git push's long options, for abbreviations.
var pushOpts = []string{"verbose", "quiet", "repo", "all", "branches", "mirror", "delete", "tags", "dry-run", "porcelain",
	"force", "force-with-lease", "force-if-includes", "recurse-submodules", "thin", "receive-pack", "exec", "set-upstream",
	"progress", "prune", "no-verify", "verify", "follow-tags", "signed", "atomic", "push-option", "ipv4", "ipv6"}

// pushArgOpts take an argument (as --opt=X or the next word).
var pushArgOpts = map[string]bool{"repo": true, "recurse-submodules": true, "receive-pack": true, "exec": true, "push-option": true}

// gitPush explains why a push is refused, or "".
func (e *Engine) gitPush(g *gitLine, words []shell.Word) string {
	var force, del, mirror, all, prune, dry bool
	repo := ""
	var pos []shell.Word
	set := func(name string, on bool) {
		switch name {
		case "force", "force-with-lease":
			force = on
		case "delete":
			del = on
		case "mirror":
			mirror = on
		case "all", "branches":
			all = on
		case "prune":
			prune = on
		case "dry-run":
			dry = on
		}
	}
	for i := 0; i < len(words); i++ {
		w := words[i]
		if !w.Static() {
			if strings.HasPrefix(w.Val, shell.Unknown) {
				// It may be --mirror, --force, or a forced refspec.
				return "a push with an argument not known before it runs (" + w.Src + "): it may force or mirror"
			}
			pos = append(pos, w)
			continue
		}
		a := w.Val
		switch {
		case a == "--":
			pos = append(pos, words[i+1:]...)
			i = len(words)
		case strings.HasPrefix(a, "--"):
			name, val, hasVal := strings.Cut(a[2:], "=")
			on := true
			names := shell.LongOpts(name, pushOpts)
			if len(names) == 0 {
				if n, ok := strings.CutPrefix(name, "no-"); ok {
					names, on = shell.LongOpts(n, pushOpts), false
				}
			}
			for _, n := range names {
				set(n, on)
				if n == "repo" {
					repo = val
				}
			}
			if len(names) == 1 && pushArgOpts[names[0]] && !hasVal && on && i+1 < len(words) {
				i++
				if names[0] == "repo" {
					repo = words[i].Val
				}
			}
		case strings.HasPrefix(a, "-") && len(a) > 1:
			for k := 1; k < len(a); k++ {
				switch a[k] {
				case 'f':
					force = true
				case 'd':
					del = true
				case 'n':
					dry = true
				case 'o':
					if k == len(a)-1 {
						i++
					}
					k = len(a)
				}
			}
		default:
			pos = append(pos, w)
		}
	}
	if dry {
		return ""
	}
	if mirror {
		return "a mirror push (every ref on the remote forced to match, and deleted where missing here)"
	}
	remote := repo
	if remote == "" && len(pos) > 0 {
		remote, pos = pos[0].Val, pos[1:]
	}
	cur := ""
	if g.cwd != "" && g.cwd != shell.CwdUnknown {
		cur = gitBranch(g.cwd)
	}
	if remote == "" {
		for _, k := range []string{"branch." + cur + ".pushRemote", "remote.pushDefault", "branch." + cur + ".remote"} {
			if cur == "" && strings.HasPrefix(k, "branch.") {
				continue
			}
			if v, ok := g.setting(k); ok {
				remote = v
				break
			}
		}
		if remote == "" {
			remote = "origin"
		}
	}
	if all {
		switch {
		case force:
			return "a forced push of all branches"
		case prune:
			return "a push of all branches with --prune (it deletes the remote's branches not here)"
		}
	}
	if g.unknown && !all {
		for _, w := range pos {
			if !strings.Contains(w.Val, ":") {
				return "a push of " + w.Text() + " with a config not known before it runs (the remote's push mapping may force it)"
			}
		}
		if len(pos) == 0 {
			return "a push with a config not known before it runs (it may mirror, or push.default may force a protected branch)"
		}
	}
	if len(pos) == 0 && !all {
		if v, _ := g.setting("remote." + remote + ".mirror"); isGitTrue(v) {
			return "a push to " + remote + ", which its config (remote." + remote + ".mirror) makes a mirror push"
		}
		specs := g.settings("remote." + remote + ".push")
		if len(specs) == 0 {
			mode, _ := g.setting("push.default")
			switch strings.ToLower(mode) {
			case "nothing":
				return ""
			case "matching":
				if force {
					return "a forced push of every matching branch (push.default = matching)"
				}
				return ""
			case "upstream", "tracking":
				m, _ := g.setting("branch." + cur + ".merge")
				if cur == "" || m == "" {
					specs = []string{"HEAD"}
				} else {
					specs = []string{"HEAD:" + m}
				}
			default: // simple, current
				specs = []string{"HEAD"}
			}
		}
		for _, s := range specs {
			pos = append(pos, shell.Lit(s))
		}
	}
	for _, w := range pos {
		r := w.Val
		if strings.HasPrefix(r, "^") {
			continue // a negative refspec pushes nothing
		}
		plus := strings.HasPrefix(r, "+")
		r = strings.TrimPrefix(r, "+")
		src, dst, hasColon := strings.Cut(r, ":")
		deleting := del || hasColon && src == ""
		if !hasColon {
			dst = src
		}
		if why := e.pushTo(dst, cur, deleting, force || plus, prune); why != "" {
			return why
		}
		if hasColon {
			continue
		}
		// remote.<name>.push maps a refspec without a destination (read
		// only when the refspec as written is not refused: it costs a git).
		for _, m := range g.settings("remote." + remote + ".push") {
			ms, md, ok := strings.Cut(strings.TrimPrefix(m, "+"), ":")
			if ok && refMatches(ms, gitFullRef(src, cur)) {
				if why := e.pushTo(refMap(ms, md, gitFullRef(src, cur)), cur, deleting, force || plus || strings.HasPrefix(m, "+"), prune); why != "" {
					return why
				}
			}
		}
	}
	return ""
}

// pushTo explains why a push to the remote ref dst is refused, or "".
func (e *Engine) pushTo(dst, cur string, deleting, forcing, prune bool) string {
	if dst == "" || !deleting && !forcing && !prune {
		return ""
	}
	for _, b := range gitDstBranches(dst, cur) {
		switch {
		case b == "":
			if forcing {
				return "a forced push to " + dst + ", whose branch cannot be told"
			}
		case deleting && e.protectedMatch(b):
			return "deleting the protected branch " + b
		case forcing && e.protectedMatch(b):
			return "a forced push to the protected branch " + b
		case prune && strings.Contains(b, "*") && e.protectedMatch(b):
			return "a push with --prune of " + dst + ", which may delete a protected branch"
		}
	}
	return ""
}

// autocorrects reports whether help.autocorrect makes git run the command
// it guesses a mistyped one meant.
func autocorrects(v string) bool {
	switch strings.ToLower(v) {
	case "", "0", "false", "off", "no", "show", "never", "prompt":
		return false
	}
	return true
}

// editDistance is the Levenshtein distance of a and b, with a swap of two
// neighbours counting 1 (git's typo guesses count it cheaply too).
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 64
	}
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

func isGitTrue(v string) bool {
	switch strings.ToLower(v) {
	case "true", "yes", "on", "1":
		return true
	}
	return false
}

// gitFullRef is the ref a source names, as far as the floor needs it.
func gitFullRef(src, cur string) string {
	switch {
	case src == "HEAD" || src == "@":
		if cur == "" {
			return ""
		}
		return "refs/heads/" + cur
	case strings.HasPrefix(src, "refs/"):
		return src
	case strings.HasPrefix(src, "heads/"):
		return "refs/" + src
	}
	return "refs/heads/" + src
}

// refMatches reports whether ref matches a refspec side (one * at most).
func refMatches(pat, ref string) bool {
	if ref == "" {
		return false
	}
	pat = gitFullRef(pat, "")
	pre, suf, wild := strings.Cut(pat, "*")
	if !wild {
		return pat == ref
	}
	return len(ref) >= len(pre)+len(suf) && strings.HasPrefix(ref, pre) && strings.HasSuffix(ref, suf)
}

// refMap maps ref through src:dst, as git maps a wildcard refspec.
func refMap(src, dst, ref string) string {
	src = gitFullRef(src, "")
	pre, suf, wild := strings.Cut(src, "*")
	if !wild {
		return dst
	}
	mid := ref[len(pre) : len(ref)-len(suf)]
	return strings.Replace(dst, "*", mid, 1)
}

// gitDstBranches are the branches a push destination may name on the
// remote, read as git's DWIM may: main and heads/main and refs/heads/main
// are main; HEAD is the current branch ("" when it cannot be told). A *
// (a wildcard) or a part not known before it runs stays in: it matches
// any text (see protectedMatch). Refs outside refs/heads/ are no branch.
func gitDstBranches(dst, cur string) []string {
	dst = strings.ReplaceAll(dst, shell.Unknown, "*")
	switch {
	case dst == "HEAD" || dst == "@":
		return []string{cur}
	case strings.HasPrefix(dst, "refs/heads/"):
		return []string{strings.TrimPrefix(dst, "refs/heads/")}
	case strings.HasPrefix(dst, "refs/"):
		if rest := strings.TrimPrefix(dst, "refs/"); strings.HasPrefix(rest, "*") {
			return []string{rest} // refs/* holds the branches too
		}
		return nil
	case strings.HasPrefix(dst, "heads/"):
		return []string{strings.TrimPrefix(dst, "heads/"), dst}
	}
	return []string{dst}
}

// protectedMatch reports whether branch, which may hold * (any text), may
// be a protected branch.
func (e *Engine) protectedMatch(branch string) bool {
	if !strings.Contains(branch, "*") {
		return e.protected(branch)
	}
	for _, p := range e.floor.protected {
		if p.re != nil {
			return true // a pattern the floor cannot sample: the most dangerous reading
		}
		// A sample name the protected pattern matches.
		sample := strings.ReplaceAll(strings.ReplaceAll(p.glob, "*", "x"), "?", "x")
		if wildMatch(branch, sample) {
			return true
		}
	}
	return false
}

// splitGitCmdline splits an alias's value as git's split_cmdline does:
// white space separates, quotes group, a backslash quotes the next
// character; false for an unclosed quote.
func splitGitCmdline(s string) ([]string, bool) {
	var out []string
	var b strings.Builder
	in, quote := false, byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote == 0 && (c == ' ' || c == '\t' || c == '\n'):
			if in {
				out = append(out, b.String())
				b.Reset()
				in = false
			}
		case c == '\\' && quote != '\'' && i+1 < len(s):
			i++
			b.WriteByte(s[i])
			in = true
		case quote == 0 && (c == '"' || c == '\''):
			quote, in = c, true
		case c == quote:
			quote = 0
		default:
			b.WriteByte(c)
			in = true
		}
	}
	if quote != 0 {
		return nil, false
	}
	if in {
		out = append(out, b.String())
	}
	return out, true
}
