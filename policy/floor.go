package policy

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/tai-dev/tai/internal/lazyre"
	"github.com/tai-dev/tai/internal/statedir"
)

// FloorRule describes one rule of the built-in deny floor.
type FloorRule struct {
	ID          string // provenance is "rule:<ID>"
	Description string
}

// FloorRules is the built-in deny floor: denied in every mode, before any
// allow rule or remembered answer is looked at. Only the policy file can
// turn it off (floor = false, or floor_disable = [ids]); no flag can.
var FloorRules = []FloorRule{
	{"floor-rm-root", "recursive rm (or find -delete, or a tree deletion in an interpreter one-liner), or mv, of /, a top-level directory, ~ or $HOME, or the workspace root or a parent of it; a target not known before the command runs counts"},
	{"floor-chmod-root", "recursive chmod, chown or chgrp of the same targets"},
	{"floor-write-outside", "an edit, delete or move of a path outside the workspace (and the write roots)"},
	{"floor-policy-files", "an edit, delete or move of tai's own files: the policy file, the persistent memory file, and tai's config and state directories (audit logs, sessions, fleet state)"},
	{"floor-git-force-push", "a forced push to, or a deletion of, a protected branch (a forced push whose branch cannot be told counts)"},
	{"floor-mkfs", "making or wiping a filesystem (mkfs, mke2fs, mkswap, wipefs)"},
	{"floor-dd-device", "dd of=/dev/..., shred of a device, or a redirection (or tee, cp) onto a disk device"},
	{"floor-fork-bomb", "a fork bomb (a function that starts copies of itself, fork in a loop)"},
	{"floor-pipe-shell", "a download (or a decoded blob) piped or substituted into a shell or an interpreter (curl ... | sh, curl ... | python3, base64 -d | sh)"},
}

// DefaultProtectedBranches are the branches floor-git-force-push protects
// when the policy file names none.
var DefaultProtectedBranches = []string{"main", "master", "trunk", "develop", "release/*", "release-*"}

func floorKnown(id string) bool {
	for _, r := range FloorRules {
		if r.ID == id {
			return true
		}
	}
	return false
}

// floor is the built-in deny floor, as configured.
type floor struct {
	off       map[string]bool
	protected []textPattern
	files     []string // tai's own files and directories (policy, memory, config, state), absolute
}

// own sets the files floor-policy-files protects: files, and tai's config
// and state directories, each also with its symlinks resolved.
func (fl *floor) own(files []string) {
	for _, f := range append(files, statedir.Own()...) {
		if abs, err := filepath.Abs(f); f != "" && err == nil {
			fl.files = append(fl.files, filepath.Clean(abs), resolveExisting(abs))
		}
	}
}

var (
	// For lines that do not parse: the text itself is searched.
	forkBomb       = lazyre.New(`([A-Za-z_:.][\w:.]*)\s*\(\)\s*\{\s*([\w:.]+)\s*\|\s*([\w:.]+)\s*&`)
	deviceRedirect = lazyre.New(`>\s*/dev/(sd[a-z]|hd[a-z]|vd[a-z]|xvd[a-z]|nvme\d|mmcblk\d|disk\d|rdisk\d|md\d|dm-\d|mapper/|loop\d|nbd\d)`)
	downloadPipe   = lazyre.New(`\b(curl|wget|fetch|aria2c|nc|ncat|socat|xh|http)\b[^|]*\|.*\b(sh|bash|zsh|dash|ksh|fish|python[0-9.]*|perl|ruby|node|php|source|eval)\b`)

	diskDevice = lazyre.New(`^/dev/(sd[a-z]|hd[a-z]|vd[a-z]|xvd[a-z]|nvme\d|mmcblk\d|disk\d|rdisk\d|md\d|dm-\d|mapper/|loop\d|nbd\d|sr\d)`)
)

// isSafeDevice reports whether /dev/s is harmless to write to.
func isSafeDevice(s string) bool {
	switch s {
	case "null", "zero", "stdout", "stderr", "stdin", "tty", "random", "urandom", "full":
		return true
	}
	return false
}

// floorCheck returns the floor rule the request hits and why, or "".
func (e *Engine) floorCheck(f *facts) (id, why string) {
	fl := e.floor
	if fl == nil {
		return "", ""
	}
	hit := func(rid string) bool { return !fl.off[rid] }
	if f.writes {
		for _, p := range f.paths {
			if hit("floor-policy-files") && p.abs != "" {
				resolved := resolveExisting(p.abs)
				for _, file := range fl.files {
					if isAncestorOrSelf(file, p.abs) || isAncestorOrSelf(file, resolved) {
						return "floor-policy-files", fmt.Sprintf("built-in floor: %s is one of tai's own files (policy, config or state); agents may not change it", p.abs)
					}
				}
			}
			if hit("floor-rm-root") && (f.kind == kindDelete || f.kind == kindMove) && p.abs != "" &&
				(isAncestorOrSelf(p.abs, e.ws.root) || isAncestorOrSelf(p.abs, e.ws.home) || p.abs == "/") {
				return "floor-rm-root", fmt.Sprintf("built-in floor: a %s of %s, the workspace root, home or a parent of them", f.kind, p.abs)
			}
			if hit("floor-write-outside") && e.ws.root != "" && !e.ws.writable(p) {
				where := p.abs
				if where == "" {
					where = p.raw
				}
				return "floor-write-outside", fmt.Sprintf("built-in floor: %s is outside the workspace %s", where, e.ws.root)
			}
		}
	}
	for i, line := range f.shell {
		if id, why := e.floorLine(line, f.lines[i]); id != "" {
			return id, "built-in floor: " + why
		}
	}
	return "", ""
}

// floorLine checks one command line, as read by parseShell; raw is the
// line as written.
func (e *Engine) floorLine(sl *shellLine, raw string) (id, why string) {
	hit := func(rid string) bool { return !e.floor.off[rid] }
	if hit("floor-fork-bomb") && len(sl.bombs) > 0 {
		return "floor-fork-bomb", "a fork bomb (" + sl.bombs[0] + " starts copies of itself)"
	}
	if !sl.ok {
		// Not all of the line parsed: its text is searched as well.
		const guessed = " (the line does not parse: read at its most dangerous)"
		if hit("floor-fork-bomb") {
			for _, m := range forkBomb().FindAllStringSubmatch(raw, -1) {
				if m[1] == m[2] && m[2] == m[3] {
					return "floor-fork-bomb", "a fork bomb" + guessed
				}
			}
		}
		if hit("floor-dd-device") && deviceRedirect().MatchString(raw) {
			return "floor-dd-device", "a redirection onto a disk device" + guessed
		}
		if hit("floor-pipe-shell") && downloadPipe().MatchString(raw) {
			return "floor-pipe-shell", "a download piped into an interpreter" + guessed
		}
	}
	for _, c := range sl.cmds {
		if id, why := e.floorCmd(c, hit); id != "" {
			if c.guess {
				why += " (the line does not parse: read at its most dangerous)"
			}
			return id, why
		}
	}
	return "", ""
}

// floorName reports whether the floor looks at a program of this name.
func floorName(name string) bool {
	switch name {
	case "rm", "find", "mv", "chmod", "chown", "chgrp", "git", "mke2fs", "mkswap", "wipefs", "dd", "shred", "blkdiscard",
		"tee", "cp":
		return true
	}
	return strings.HasPrefix(name, "mkfs") || runsProgram(name)
}

// runsProgram reports whether a program runs its input or arguments as a
// program of its own: shells, eval, source and interpreters.
func runsProgram(name string) bool {
	return isShell(name) || name == "eval" || name == "source" || name == "." || interpreter(name) != ""
}

// floorCmd checks one simple command.
func (e *Engine) floorCmd(c *shCmd, hit func(string) bool) (id, why string) {
	if hit("floor-pipe-shell") {
		if c.pipeShell {
			return "floor-pipe-shell", fmt.Sprintf("a download (or a decoded blob) piped into %s", c.name)
		}
		if c.fetchSub && (c.name == "" || runsProgram(c.name)) {
			return "floor-pipe-shell", "a download (or a decoded blob) run through a substitution"
		}
	}
	if hit("floor-dd-device") && c.devRedir != "" {
		return "floor-dd-device", "a redirection onto the disk device " + c.devRedir
	}
	if len(c.argv) == 0 {
		return "", ""
	}
	name, args := c.name, c.argv[1:]
	switch {
	case (name == "rm" || name == "") && hit("floor-rm-root"):
		// A program whose name cannot be known is read as rm.
		if t, ok := e.rmTarget(args, c.cwds); ok {
			return "floor-rm-root", fmt.Sprintf("rm -r of %s", t)
		}
	case name == "find" && hit("floor-rm-root"):
		if t, ok := e.findDelete(args, c.cwds); ok {
			return "floor-rm-root", fmt.Sprintf("find %s deleting", t)
		}
	case name == "mv" && hit("floor-rm-root"):
		if t, ok := e.mvSource(args, c.cwds); ok {
			return "floor-rm-root", fmt.Sprintf("mv of %s", t)
		}
	case (name == "chmod" || name == "chown" || name == "chgrp") && hit("floor-chmod-root"):
		if t, ok := e.chmodTarget(args, c.cwds); ok {
			return "floor-chmod-root", fmt.Sprintf("recursive %s of %s", name, t)
		}
	case name == "git" && hit("floor-git-force-push"):
		for _, cwd := range c.cwds {
			if why := e.gitForcePush(args, cwd); why != "" {
				return "floor-git-force-push", why
			}
		}
	case (strings.HasPrefix(name, "mkfs") || name == "mke2fs" || name == "wipefs" || name == "mkswap") && hit("floor-mkfs"):
		return "floor-mkfs", name + " makes or wipes a filesystem"
	case name == "dd" && hit("floor-dd-device"):
		for _, a := range args {
			if dev, ok := strings.CutPrefix(a.val, "of=/dev/"); ok && !isSafeDevice(dev) && !strings.HasPrefix(dev, "fd/") {
				return "floor-dd-device", "dd onto /dev/" + dev
			}
		}
	case (name == "shred" || name == "blkdiscard") && hit("floor-dd-device"):
		for _, a := range args {
			if dev, ok := strings.CutPrefix(a.val, "/dev/"); ok && !isSafeDevice(dev) && !strings.HasPrefix(dev, "fd/") {
				return "floor-dd-device", name + " of /dev/" + dev
			}
		}
	case (name == "tee" || name == "cp") && hit("floor-dd-device"):
		targets := args
		if name == "cp" && len(args) > 0 {
			targets = args[len(args)-1:] // cp reads the others
		}
		for _, a := range targets {
			if diskDevice().MatchString(a.val) {
				return "floor-dd-device", name + " onto the disk device " + a.val
			}
		}
	}
	for _, code := range c.code {
		if id, why := e.floorCode(code, c, hit); id != "" {
			return id, why
		}
	}
	return "", ""
}

var (
	// Calls that delete a directory tree, in the interpreters' libraries.
	codeTreeDelete  = lazyre.New(`\b(rmtree|remove_tree|rm_rf|rm_r|remove_dir|remove_entry_secure|remove_entry|rmSync|rmdirSync|remove_dir_all|RemoveAll|rimraf|deltree)\b\s*`)
	codeRecursiveRm = lazyre.New(`\.(rm|rmdir)\s*\(\s*`)
	// Calls that run a command line.
	codeExec          = lazyre.New(`\b(system|popen|exec|execSync|execFile|execFileSync|spawn|spawnSync|check_call|check_output|call|run|Popen|getoutput|getstatusoutput|shell_exec|passthru|proc_open|execute|execvp|execv|execl|execlp)\b\s*`)
	codeBackticks     = lazyre.New("`([^`]*)`|\\bqx\\s*[({\\[/]([^)}\\]/]*)|%x[({\\[]([^)}\\]]*)")
	codeForkBomb      = lazyre.New(`(?s)(\b(while|until|loop)\b|for\s*\(\s*;\s*;\s*\)).{0,60}\bfork\b|\bfork\b.{0,20}\bwhile\b`)
	codeInterpolation = lazyre.New(`#\{[^}]*\}|\$\{[^}]*\}`)
	codeDisk          = lazyre.New(`["']/dev/(sd[a-z]|hd[a-z]|vd[a-z]|xvd[a-z]|nvme\d|mmcblk\d|disk\d|md\d|dm-\d|mapper/|loop\d|nbd\d)`)
)

// floorCode checks a program given to an interpreter (python3 -c CODE):
// a tree deletion whose target is dangerous or not a literal, a command it
// runs, a fork loop, a disk device it opens.
func (e *Engine) floorCode(code string, c *shCmd, hit func(string) bool) (id, why string) {
	if hit("floor-rm-root") {
		for _, m := range codeTreeDelete().FindAllStringSubmatchIndex(code, -1) {
			if t, ok := e.codeTarget(code, m[1], c.cwds); ok {
				return "floor-rm-root", fmt.Sprintf("%s deleting the tree %s", c.name, t)
			}
		}
		if strings.Contains(code, "recursive") {
			for _, m := range codeRecursiveRm().FindAllStringIndex(code, -1) {
				if t, ok := e.codeTarget(code, m[1], c.cwds); ok {
					return "floor-rm-root", fmt.Sprintf("%s deleting the tree %s", c.name, t)
				}
			}
		}
	}
	if hit("floor-fork-bomb") && codeForkBomb().MatchString(code) {
		return "floor-fork-bomb", c.name + " forking in a loop"
	}
	if hit("floor-dd-device") && codeDisk().MatchString(code) {
		return "floor-dd-device", c.name + " opening a disk device"
	}
	if c.depth >= maxShellDepth {
		return "", ""
	}
	var lines []string
	for _, m := range codeExec().FindAllStringIndex(code, -1) {
		if l, ok := codeCommand(code, m[1]); ok {
			lines = append(lines, l)
		}
	}
	for _, m := range codeBackticks().FindAllStringSubmatch(code, -1) {
		// Ruby's #{x} and the like are not known before it runs.
		lines = append(lines, codeInterpolation().ReplaceAllString(m[1]+m[2]+m[3], "$$unknown"))
	}
	for _, l := range lines {
		sl := parseShellAt(l, shellEnv{home: e.ws.home, cwd: ""}, c.cwds, c.depth+1)
		if id, why := e.floorLine(sl, l); id != "" {
			return id, why + " (run by " + c.name + ")"
		}
	}
	return "", ""
}

// codeTarget judges the first argument of a tree deletion at code[k:]: a
// string literal is judged as a path, anything else cannot be known and
// counts as dangerous.
func (e *Engine) codeTarget(code string, k int, cwds []string) (string, bool) {
	v, ok := codeString(code, k)
	if !ok || codeContinues(code, codeStringEnd(code, k)) {
		return "a path not known before it runs", true
	}
	return e.dangerous(shWord{src: v, val: v, glob: -1}, cwds)
}

// codeCommand reads the command line a call at code[k:] runs: a string
// literal, a list of them (an argv), or literal arguments (perl's and
// ruby's system "rm", "-rf", "/"), possibly followed by a list
// (spawn("rm", ["-rf", "/"])).
func codeCommand(code string, k int) (string, bool) {
	k = skipCodeSpace(code, k)
	if k < len(code) && code[k] == '(' {
		k = skipCodeSpace(code, k+1)
	}
	var argv []string
	if first, ok := codeString(code, k); ok {
		end := codeStringEnd(code, k)
		if codeContinues(code, end) {
			// "rm -rf " + d: the rest is not known before it runs.
			return first + " $unknown", true
		}
		k = skipCodeSpace(code, end)
		if k >= len(code) || code[k] != ',' {
			return first, first != ""
		}
		argv = append(argv, first)
		for k = skipCodeSpace(code, k+1); k < len(code) && code[k] != '['; {
			v, ok := codeString(code, k)
			if !ok {
				if len(argv) == 1 {
					return first, first != "" // run("rm -rf /", shell=True)
				}
				return codeArgv(append(argv, codeUnknown)), true
			}
			argv = append(argv, v)
			k = skipCodeSpace(code, codeStringEnd(code, k))
			if k >= len(code) || code[k] != ',' {
				return codeArgv(argv), true
			}
			k = skipCodeSpace(code, k+1)
		}
	}
	if k >= len(code) || code[k] != '[' {
		if len(argv) > 0 {
			return codeArgv(argv), true
		}
		return "", false
	}
	for k = skipCodeSpace(code, k+1); k < len(code) && code[k] != ']'; {
		v, ok := codeString(code, k)
		if !ok {
			argv = append(argv, codeUnknown)
			for k < len(code) && code[k] != ',' && code[k] != ']' {
				k++
			}
		} else {
			argv = append(argv, v)
			k = codeStringEnd(code, k)
		}
		k = skipCodeSpace(code, k)
		if k < len(code) && code[k] == ',' {
			k = skipCodeSpace(code, k+1)
		}
	}
	if len(argv) == 0 {
		return "", false
	}
	return codeArgv(argv), true
}

// codeUnknown stands in an argv read from code for an argument that is
// not a literal.
const codeUnknown = unknownMark

// codeArgv renders an argv read from code as a command line, with the
// arguments that are not literals as $unknown.
func codeArgv(argv []string) string {
	parts := make([]string, len(argv))
	for i, a := range argv {
		if a == codeUnknown {
			parts[i] = "$unknown"
			continue
		}
		parts[i] = joinArgv([]string{a})
	}
	return strings.Join(parts, " ")
}

// codeContinues reports whether the string literal ending at code[k] goes
// on in an expression ("rm " + x, "rm %s" % x, "rm {}".format(x), awk's
// "rm " $1) rather than ending an argument.
func codeContinues(code string, k int) bool {
	k = skipCodeSpace(code, k)
	return k < len(code) && strings.IndexByte("),;]}\n", code[k]) < 0
}

func skipCodeSpace(code string, k int) int {
	for k < len(code) && (code[k] == ' ' || code[k] == '\t' || code[k] == '\n') {
		k++
	}
	return k
}

// codeString reads a string literal at code[k:] (after white space, an
// opening parenthesis and a Python prefix such as r or f). One with
// interpolation ($x, #{x}, {x} in an f-string), or with a part the shell
// could not know, is not a literal.
func codeString(code string, k int) (string, bool) {
	k = skipCodeSpace(code, k)
	if k < len(code) && code[k] == '(' {
		k = skipCodeSpace(code, k+1)
	}
	fstring := false
	for i := 0; i < 2 && k < len(code) && strings.IndexByte("rRbBuUfF", code[k]) >= 0 && k+1 < len(code) && strings.IndexByte("rRbBuUfF'\"", code[k+1]) >= 0; i++ {
		fstring = fstring || code[k] == 'f' || code[k] == 'F'
		k++
	}
	if k >= len(code) || strings.IndexByte("'\"`", code[k]) < 0 {
		return "", false
	}
	q := code[k]
	var b strings.Builder
	for i := k + 1; i < len(code); i++ {
		c := code[i]
		switch {
		case c == '\\' && i+1 < len(code):
			i++
			b.WriteByte(code[i])
		case c == q:
			v := b.String()
			if strings.Contains(v, unknownMark) || q != '\'' && (strings.Contains(v, "$") || strings.Contains(v, "#{")) || fstring && strings.Contains(v, "{") {
				return "", false
			}
			return v, true
		default:
			b.WriteByte(c)
		}
	}
	return "", false
}

// codeStringEnd returns the index past the string literal at code[k:].
func codeStringEnd(code string, k int) int {
	k = skipCodeSpace(code, k)
	if k < len(code) && code[k] == '(' {
		k = skipCodeSpace(code, k+1)
	}
	for k < len(code) && strings.IndexByte("'\"`", code[k]) < 0 {
		k++
	}
	if k >= len(code) {
		return k
	}
	q := code[k]
	for i := k + 1; i < len(code); i++ {
		switch code[i] {
		case '\\':
			i++
		case q:
			return i + 1
		}
	}
	return len(code)
}

// cd follows a cd in a command chain; "" means the directory is unknown.
func (e *Engine) cd(cwd string, args []string) string {
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		return e.ws.home
	}
	d := expandHome(args[0], e.ws.home)
	if strings.HasPrefix(d, "$") || d == "-" || strings.Contains(d, unknownMark) || cwd == cwdUnknown {
		return ""
	}
	if filepath.IsAbs(d) {
		return filepath.Clean(d)
	}
	if cwd == "" {
		return ""
	}
	return filepath.Join(cwd, d)
}

// dangerous resolves a target of a recursive delete or chmod and reports
// whether it is /, a top-level directory, home or a parent of it, or the
// workspace root or a parent of it. A glob counts as its directory: rm -rf
// ~/* empties home. A target whose value cannot be known before the
// command runs ($X, $(...)) counts as dangerous: it may be any of them.
func (e *Engine) dangerous(w shWord, cwds []string) (string, bool) {
	if !w.static() {
		return w.src + " (not known before it runs)", true
	}
	arg := w.src
	if strings.ContainsAny(arg, "$`") {
		arg += " = " + w.val // $(echo /), $X set in the line
	}
	t := w.val
	if w.glob >= 0 {
		t = t[:w.glob]
		if j := strings.LastIndexByte(t, '/'); j >= 0 {
			t = t[:j+1]
		} else {
			t = "."
		}
	}
	t = expandHome(t, e.ws.home)
	if t == "" {
		return "", false
	}
	var abs []string
	if filepath.IsAbs(t) {
		abs = []string{filepath.Clean(t)}
	} else {
		for _, cwd := range cwds {
			switch cwd {
			case "": // no workspace: a relative path cannot be placed
			case cwdUnknown:
				return arg + " (in a directory not known before it runs)", true
			default:
				abs = append(abs, filepath.Join(cwd, t))
			}
		}
	}
	for _, t := range abs {
		switch {
		case t == "/":
			return arg, true
		case strings.Count(t, "/") == 1:
			return arg + " (a top-level directory)", true
		case isAncestorOrSelf(t, e.ws.home):
			return arg + " (home)", true
		case isAncestorOrSelf(t, e.ws.root) || isAncestorOrSelf(t, e.ws.real):
			return arg + " (the workspace root)", true
		}
	}
	return "", false
}

// rmTarget returns a dangerous target of a recursive rm. An unquoted
// word whose value cannot be known may hold -r as well as the target.
func (e *Engine) rmTarget(args []shWord, cwds []string) (string, bool) {
	recursive := false
	var targets []shWord
	opts := true
	for _, w := range args {
		a := w.val
		switch {
		case !w.static():
			recursive = recursive || w.split
			targets = append(targets, w)
		case opts && a == "--":
			opts = false
		case opts && strings.HasPrefix(a, "--"):
			recursive = recursive || a == "--recursive"
		case opts && strings.HasPrefix(a, "-") && len(a) > 1:
			recursive = recursive || strings.ContainsAny(a, "rR")
		default:
			targets = append(targets, w)
		}
	}
	if !recursive {
		return "", false
	}
	for _, t := range targets {
		if why, ok := e.dangerous(t, cwds); ok {
			return why, true
		}
	}
	return "", false
}

// findDelete returns a dangerous root of a find that deletes everything it
// walks.
func (e *Engine) findDelete(args []shWord, cwds []string) (string, bool) {
	deletes := false
	for i, w := range args {
		a := w.val
		switch {
		case a == "-delete":
			deletes = true
		case a == "-exec" || a == "-execdir" || a == "-ok" || a == "-okdir":
			if argv, _ := stripWrappers(args[i+1:]); len(argv) > 0 && (path.Base(argv[0].val) == "rm" || !argv[0].static()) {
				deletes = true
			}
		case isNameFilter(a):
			return "", false // a targeted clean-up (find . -name '*.o' -delete), not a wipe
		}
	}
	if !deletes {
		return "", false
	}
	roots, _ := findRoots(args)
	for _, r := range roots {
		if why, ok := e.dangerous(r, cwds); ok {
			return why, true
		}
	}
	return "", false
}

// mvSource returns a source of mv that is /, a top-level directory, home
// or a parent of it, or the workspace root. A glob counts only when it
// empties / or home (mv *.go pkg/ is fine); a source that cannot be known
// is let through.
func (e *Engine) mvSource(args []shWord, cwds []string) (string, bool) {
	var pos []shWord
	target := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch v := a.val; {
		case !a.static():
			pos = append(pos, a)
		case v == "--":
			pos = append(pos, args[i+1:]...)
			i = len(args)
		case v == "-t" || v == "--target-directory":
			target = true
			i++
		case strings.HasPrefix(v, "--target-directory=") || strings.HasPrefix(v, "-t"):
			target = true
		case v == "-S" || v == "--suffix":
			i++
		case strings.HasPrefix(v, "-") && len(v) > 1:
		default:
			pos = append(pos, a)
		}
	}
	if !target && len(pos) > 0 {
		pos = pos[:len(pos)-1]
	}
	for _, w := range pos {
		if !w.static() {
			continue
		}
		why, ok := e.dangerous(w, cwds)
		if !ok {
			continue
		}
		if w.glob >= 0 {
			prefix := w.val[:w.glob]
			dir := expandHome(prefix[:strings.LastIndexByte(prefix, '/')+1], e.ws.home)
			if d := filepath.Clean(dir); !filepath.IsAbs(dir) || d != "/" && !isAncestorOrSelf(d, e.ws.home) {
				continue
			}
		}
		return why, true
	}
	return "", false
}

// chmodTarget returns a dangerous target of a recursive chmod/chown/chgrp.
func (e *Engine) chmodTarget(args []shWord, cwds []string) (string, bool) {
	recursive := false
	var rest []shWord
	for _, w := range args {
		a := w.val
		switch {
		case !w.static():
			rest = append(rest, w)
		case a == "--recursive":
			recursive = true
		case strings.HasPrefix(a, "--"):
		case strings.HasPrefix(a, "-") && len(a) > 1 && !strings.ContainsAny(a[1:2], "0123456789"):
			recursive = recursive || strings.Contains(a, "R")
		default:
			rest = append(rest, w)
		}
	}
	if !recursive || len(rest) < 2 {
		return "", false
	}
	for _, t := range rest[1:] { // rest[0] is the mode or owner
		if why, ok := e.dangerous(t, cwds); ok {
			return why, true
		}
	}
	return "", false
}

// gitForcePush explains why a git command is a forced push to, or a
// deletion of, a protected branch; "" when it is not.
func (e *Engine) gitForcePush(words []shWord, cwd string) string {
	args := make([]string, len(words))
	for i, w := range words {
		args[i] = w.val
	}
	// Global options before the subcommand.
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		a := args[0]
		args = args[1:]
		switch {
		case a == "-C" && len(args) > 0:
			cwd = e.cd(cwd, args[:1])
			args = args[1:]
		case (a == "-c" || a == "--git-dir" || a == "--work-tree" || a == "--namespace") && len(args) > 0:
			args = args[1:]
		}
	}
	if len(args) == 0 || args[0] != "push" {
		return ""
	}
	force, del, all := false, false, false
	var pos []string
	for i := 1; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--force" || a == "--force-with-lease" || strings.HasPrefix(a, "--force-with-lease="):
			force = true
		case a == "--delete":
			del = true
		case a == "--all" || a == "--mirror" || a == "--branches":
			all = true
		case a == "-o" || a == "--push-option" || a == "--repo" || a == "--receive-pack" || a == "--exec":
			i++
		case strings.HasPrefix(a, "--"):
		case strings.HasPrefix(a, "-") && len(a) > 1:
			force = force || strings.Contains(a, "f")
			del = del || strings.Contains(a, "d")
			if strings.HasSuffix(a, "o") {
				i++
			}
		default:
			pos = append(pos, a)
		}
	}
	var refspecs []string
	if len(pos) > 1 {
		refspecs = pos[1:] // pos[0] is the remote
	}
	if force && all {
		return "a forced push of all branches"
	}
	for _, r := range refspecs {
		if strings.Contains(r, unknownMark) && (force || del || strings.HasPrefix(r, "+")) {
			return "a forced push to, or a deletion of, a branch not known before it runs"
		}
		plus := strings.HasPrefix(r, "+")
		r = strings.TrimPrefix(r, "+")
		src, dst, hasColon := strings.Cut(r, ":")
		if !hasColon {
			dst = src
		}
		dst = strings.TrimPrefix(dst, "refs/heads/")
		if dst == "HEAD" || dst == "@" {
			dst = gitBranch(cwd)
			if dst == "" {
				dst = "HEAD"
			}
		}
		switch {
		case (del || hasColon && src == "") && e.protected(dst):
			return "deleting the protected branch " + dst
		case (force || plus) && e.protected(dst):
			return "a forced push to the protected branch " + dst
		case (force || plus) && dst == "HEAD":
			return "a forced push to HEAD, whose branch cannot be told"
		}
	}
	if force && len(refspecs) == 0 {
		b := gitBranch(cwd)
		switch {
		case b == "":
			return "a forced push of the current branch, which cannot be told"
		case e.protected(b):
			return "a forced push of the current branch " + b + ", which is protected"
		}
	}
	return ""
}

func (e *Engine) protected(branch string) bool {
	return anyText(e.floor.protected, branch)
}

// gitBranch reads the branch checked out in the repository holding dir, or
// "" when it cannot tell (no repository, a detached HEAD).
func gitBranch(dir string) string {
	for d := dir; d != "" && d != "."; d = filepath.Dir(d) {
		gitPath := filepath.Join(d, ".git")
		st, err := os.Stat(gitPath)
		if err == nil {
			gitDir := gitPath
			if !st.IsDir() {
				// A worktree or submodule: .git is "gitdir: PATH".
				b, err := os.ReadFile(gitPath)
				if err != nil {
					return ""
				}
				g, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:")
				if !ok {
					return ""
				}
				gitDir = strings.TrimSpace(g)
				if !filepath.IsAbs(gitDir) {
					gitDir = filepath.Join(d, gitDir)
				}
			}
			head, err := os.ReadFile(filepath.Join(gitDir, "HEAD"))
			if err != nil {
				return ""
			}
			ref, ok := strings.CutPrefix(strings.TrimSpace(string(head)), "ref: refs/heads/")
			if !ok {
				return ""
			}
			return ref
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	return ""
}
