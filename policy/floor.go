package policy

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/tai-dev/tai/internal/lazyre"
	"github.com/tai-dev/tai/internal/statedir"
	"github.com/tai-dev/tai/policy/shell"
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
	{"floor-git-force-push", "a forced push to, or a deletion of, a protected branch, read as git reads it (+refspecs, wildcards, heads/main, aliases, push.default and the remote's config; a forced push whose branch cannot be told counts), and any mirror push"},
	{"floor-mkfs", "making or wiping a filesystem or a partition table (mkfs, mke2fs, mkswap, wipefs; fdisk, sfdisk, parted and the like on a disk device)"},
	{"floor-dd-device", "dd of=/dev/..., shred of a device, or a redirection (or tee, cp, ddrescue, ...) onto a disk device, its path read as the kernel does (//dev/sda, /proc/self/root/dev/sda)"},
	{"floor-fork-bomb", "a fork bomb (a function that starts copies of itself, fork in a loop)"},
	{"floor-pipe-shell", "a download (or a decoded blob) piped or substituted into a shell or an interpreter (curl ... | sh, curl ... | python3, curl ... | python3 -c 'exec(sys.stdin.read())', base64 -d | sh)"},
	{"floor-unknown-command", "a command known only when it runs, read at its most dangerous: a command word from a variable, a substitution, an array or \"$@\"; what sed's e, awk's | \"sh\" or a root shell (sudo -s, su) reading the terminal run"},
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

// floorLine checks one command line, as read by shell.Parse; raw is the
// line as written.
func (e *Engine) floorLine(sl *shell.Line, raw string) (id, why string) {
	hit := func(rid string) bool { return !e.floor.off[rid] }
	if hit("floor-fork-bomb") && len(sl.Bombs) > 0 {
		return "floor-fork-bomb", "a fork bomb (" + sl.Bombs[0] + " starts copies of itself)"
	}
	if !sl.OK {
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
	lineConf := gitConf{} // what a git config earlier in the line set
	for _, c := range sl.Cmds {
		if c.Name == "git" {
			gitConfigWrites(c.Argv[1:], lineConf)
		}
		if id, why := e.floorCmd(c, hit, lineConf); id != "" {
			if c.Guess {
				why += " (the line does not parse: read at its most dangerous)"
			}
			return id, why
		}
	}
	return "", ""
}

// readEnv is what the shell reader is told of the place a line runs in,
// and of what the floor reads: the programs it looks at, and the
// interpreter programs that run what they read.
func readEnv(home, cwd string) shell.Env {
	return shell.Env{Home: home, Cwd: cwd, Watched: floorName, RunsInput: runsCode}
}

// floorName reports whether the floor looks at a program of this name.
func floorName(name string) bool {
	switch name {
	case "rm", "find", "mv", "chmod", "chown", "chgrp", "git", "git-push", "git-send-pack", "dd", "dcfldd", "dc3dd", "shred", "blkdiscard",
		"tee", "cp", "install", "ddrescue", "rsync", "sed", "gsed", "tmux", "screen":
		return true
	}
	return isFormatter(name) || isPartitioner(name) || shell.RunsProgram(name)
}

// floorCmd checks one simple command.
func (e *Engine) floorCmd(c *shell.Cmd, hit func(string) bool, lineConf gitConf) (id, why string) {
	if hit("floor-pipe-shell") {
		if c.PipeShell {
			return "floor-pipe-shell", fmt.Sprintf("a download (or a decoded blob) piped into %s", c.Name)
		}
		if c.FetchSub && (c.Name == "" || shell.RunsProgram(c.Name)) {
			return "floor-pipe-shell", "a download (or a decoded blob) run through a substitution"
		}
	}
	if hit("floor-dd-device") && c.DevRedir != "" {
		return "floor-dd-device", "a redirection onto the disk device " + c.DevRedir
	}
	if len(c.Argv) == 0 {
		if c.UnknownRun != "" && hit("floor-unknown-command") {
			return "floor-unknown-command", c.UnknownRun
		}
		return "", ""
	}
	name, args := c.Name, c.Argv[1:]
	switch {
	case (name == "rm" || name == "") && hit("floor-rm-root"):
		// A program whose name cannot be known is read as rm.
		if t, ok := e.rmTarget(args, c.Cwds); ok {
			return "floor-rm-root", fmt.Sprintf("rm -r of %s", t)
		}
	case name == "find" && hit("floor-rm-root"):
		if t, ok := e.findDelete(args, c.Cwds); ok {
			return "floor-rm-root", fmt.Sprintf("find %s deleting", t)
		}
	case name == "mv" && hit("floor-rm-root"):
		if t, ok := e.mvSource(args, c.Cwds); ok {
			return "floor-rm-root", fmt.Sprintf("mv of %s", t)
		}
	case (name == "chmod" || name == "chown" || name == "chgrp") && hit("floor-chmod-root"):
		if t, ok := e.chmodTarget(args, c.Cwds); ok {
			return "floor-chmod-root", fmt.Sprintf("recursive %s of %s", name, t)
		}
	case (name == "git" || name == "git-push" || name == "git-send-pack") && hit("floor-git-force-push"):
		if sub, ok := strings.CutPrefix(name, "git-"); ok {
			// git's own programs, run by path (/usr/lib/git-core/git-push).
			args = append([]shell.Word{shell.Lit(sub)}, args...)
		}
		for _, cwd := range c.Cwds {
			v := e.readGit(args, cwd, c.Env, lineConf)
			if v.why != "" {
				return "floor-git-force-push", v.why
			}
			if v.shell != "" && c.Depth < shell.MaxDepth {
				sl := shell.ParseAt(v.shell, readEnv(e.ws.home, ""), []string{cwd}, c.Depth+1)
				if id, why := e.floorLine(sl, v.shell); id != "" {
					return id, why + " (run by a git alias)"
				}
			}
		}
	case isFormatter(name) && hit("floor-mkfs"):
		return "floor-mkfs", name + " makes or wipes a filesystem"
	case isPartitioner(name) && hit("floor-mkfs"):
		if dev, ok := partitions(args, c.Cwds); ok {
			return "floor-mkfs", name + " on the disk device " + dev
		}
	case hit("floor-dd-device"):
		if dev := e.rawWrite(name, args, c.Cwds); dev != "" {
			return "floor-dd-device", name + " onto the disk device " + dev
		}
	}
	for _, code := range c.Code {
		if id, why := e.floorCode(code, c, hit); id != "" {
			return id, why
		}
	}
	if hit("floor-unknown-command") {
		switch {
		case c.UnknownRun != "":
			return "floor-unknown-command", c.UnknownRun
		case !c.Argv[0].Static():
			return "floor-unknown-command", fmt.Sprintf("the command %s is not known before it runs (it may be any command)", c.Argv[0].Src)
		}
	}
	return "", ""
}

var (
	// Calls that delete a directory tree, in the interpreters' libraries.
	codeTreeDelete  = lazyre.New(`\b(rmtree|remove_tree|rm_rf|rm_r|remove_dir|remove_entry_secure|remove_entry|rmSync|rmdirSync|remove_dir_all|RemoveAll|rimraf|deltree)\b\s*`)
	codeRecursiveRm = lazyre.New(`\.(rm|rmdir)\s*\(\s*`)
	// Calls that run a command line.
	codeExec      = lazyre.New(`\b(system|popen|exec|execSync|execFile|execFileSync|spawn|spawnSync|check_call|check_output|call|run|Popen|getoutput|getstatusoutput|shell_exec|passthru|proc_open|execute|capture2|capture2e|capture3|popen2|popen3|pipeline|` + codeExecArgv0 + `)\b\s*`)
	codeArgv0Call = lazyre.New(`^(` + codeExecArgv0 + `)\b`)
	// Perl's open of a pipe: open(F, "| cmd"), open(F, "cmd |"), open(F, "|-", argv).
	codePerlOpen = lazyre.New(`\bopen\s*\(?\s*(?:my\s+)?[$\w:]+\s*,\s*`)
	// awk's pipes: print | "cmd", "cmd" | getline.
	codeAwkPipeOut    = lazyre.New(`\|&?\s*"((?:[^"\\]|\\.)*)"`)
	codeAwkPipeIn     = lazyre.New(`"((?:[^"\\]|\\.)*)"\s*\|&?\s*getline`)
	codeBackticks     = lazyre.New("`([^`]*)`|\\bqx\\s*[({\\[/]([^)}\\]/]*)|%x[({\\[]([^)}\\]]*)")
	codeForkBomb      = lazyre.New(`(?s)(\b(while|until|loop)\b|for\s*\(\s*;\s*;\s*\)).{0,60}\bfork\b|\bfork\b.{0,20}\bwhile\b`)
	codeInterpolation = lazyre.New(`#\{[^}]*\}|\$\{[^}]*\}`)
	// Calls that run code they are given (exec(sys.stdin.read())).
	codeEval = lazyre.New(`\b(exec|eval|compile|execfile|instance_eval|class_eval|module_eval|Function|loadstring|dofile|runpy|run_path|run_module|__import__|import_module)\b`)
	codeDisk = lazyre.New(`["']/dev/(sd[a-z]|hd[a-z]|vd[a-z]|xvd[a-z]|nvme\d|mmcblk\d|disk\d|md\d|dm-\d|mapper/|loop\d|nbd\d)`)
)

// codeExecArgv0 are the calls given a program's path, then its argv with
// argv[0] (os.execl("/bin/rm", "rm", "-rf", "/")).
const codeExecArgv0 = `execl|execle|execlp|execlpe|execv|execve|execvp|execvpe|spawnl|spawnle|spawnlp|spawnlpe|spawnv|spawnve|spawnvp|spawnvpe|posix_spawn|posix_spawnp`

// runsShell reports whether a library call runs a command line or a
// program by name (not Python's run() or call() of anything).
func runsShell(call string) bool {
	switch call {
	case "system", "popen", "shell_exec", "passthru", "proc_open", "execSync", "Popen", "check_output", "check_call",
		"getoutput", "getstatusoutput", "capture2", "capture2e", "capture3", "popen2", "popen3":
		return true
	}
	return codeArgv0Call().MatchString(call)
}

// codeCallEmpty reports whether the call at code[k:] has no argument, or
// is no call at all (a name mentioned, os.system without parentheses).
func codeCallEmpty(code string, k int) bool {
	k = skipCodeSpace(code, k)
	if k >= len(code) || code[k] != '(' {
		return true
	}
	k = skipCodeSpace(code, k+1)
	return k < len(code) && code[k] == ')'
}

// runsCode reports whether an interpreter's program runs code or commands
// it is given, or reads: fed a download, it runs the download.
func runsCode(code string) bool {
	return codeEval().MatchString(code) || codeExec().MatchString(code)
}

// floorCode checks a program given to an interpreter (python3 -c CODE):
// a tree deletion whose target is dangerous or not a literal, a command it
// runs, a fork loop, a disk device it opens.
func (e *Engine) floorCode(code string, c *shell.Cmd, hit func(string) bool) (id, why string) {
	if hit("floor-rm-root") {
		for _, m := range codeTreeDelete().FindAllStringSubmatchIndex(code, -1) {
			if t, ok := e.codeTarget(code, m[1], c.Cwds); ok {
				return "floor-rm-root", fmt.Sprintf("%s deleting the tree %s", c.Name, t)
			}
		}
		if strings.Contains(code, "recursive") {
			for _, m := range codeRecursiveRm().FindAllStringIndex(code, -1) {
				if t, ok := e.codeTarget(code, m[1], c.Cwds); ok {
					return "floor-rm-root", fmt.Sprintf("%s deleting the tree %s", c.Name, t)
				}
			}
		}
	}
	if hit("floor-fork-bomb") && codeForkBomb().MatchString(code) {
		return "floor-fork-bomb", c.Name + " forking in a loop"
	}
	if hit("floor-dd-device") && codeDisk().MatchString(code) {
		return "floor-dd-device", c.Name + " opening a disk device"
	}
	if c.Depth >= shell.MaxDepth {
		return "", ""
	}
	var lines []string
	for _, m := range codeExec().FindAllStringIndex(code, -1) {
		l, ok := codeCommand(code, m[1])
		if !ok {
			if runsShell(strings.TrimSpace(code[m[0]:m[1]])) && !codeCallEmpty(code, m[1]) && hit("floor-unknown-command") {
				return "floor-unknown-command", fmt.Sprintf("%s runs a command not known before it runs (%s)", c.Name, strings.TrimSpace(code[m[0]:m[1]]))
			}
			continue
		}
		if codeArgv0Call().MatchString(code[m[0]:m[1]]) {
			// The path, then argv: argv[0] is not an argument.
			if f := strings.SplitN(l, " ", 3); len(f) >= 2 {
				l = strings.Join(append(f[:1], f[2:]...), " ")
			}
		}
		lines = append(lines, l)
	}
	var fedLines []string // commands that run what the program prints into them
	if c.Name != "" && shell.Interpreter(c.Name) == "perl" {
		for _, m := range codePerlOpen().FindAllStringIndex(code, -1) {
			mode, ok := codeString(code, m[1])
			if !ok {
				continue
			}
			switch t := strings.TrimSpace(mode); {
			case t == "|-" || t == "-|":
				k := skipCodeSpace(code, codeStringEnd(code, m[1]))
				if k < len(code) && code[k] == ',' {
					if l, ok := codeCommand(code, k+1); ok {
						lines = append(lines, l)
					}
				}
			case strings.HasPrefix(t, "|"):
				fedLines = append(fedLines, t[1:])
			case strings.HasSuffix(t, "|"):
				lines = append(lines, strings.TrimSuffix(t, "|"))
			}
		}
	}
	if shell.Interpreter(c.Name) == "awk" {
		for _, m := range codeAwkPipeOut().FindAllStringSubmatch(code, -1) {
			fedLines = append(fedLines, shell.UnescapeDouble(m[1]))
		}
		for _, m := range codeAwkPipeIn().FindAllStringSubmatch(code, -1) {
			lines = append(lines, shell.UnescapeDouble(m[1]))
		}
	}
	for _, l := range fedLines {
		if readsProgram(shell.ParseAt(l, readEnv(e.ws.home, ""), c.Cwds, c.Depth+1)) && hit("floor-unknown-command") {
			return "floor-unknown-command", fmt.Sprintf("%s prints into %q, which runs what it reads: commands not known before it runs", c.Name, l)
		}
		lines = append(lines, l)
	}
	for _, m := range codeBackticks().FindAllStringSubmatch(code, -1) {
		// Ruby's #{x} and the like are not known before it runs.
		lines = append(lines, codeInterpolation().ReplaceAllString(m[1]+m[2]+m[3], "$$unknown"))
	}
	for _, l := range lines {
		sl := shell.ParseAt(l, readEnv(e.ws.home, ""), c.Cwds, c.Depth+1)
		if id, why := e.floorLine(sl, l); id != "" {
			return id, why + " (run by " + c.Name + ")"
		}
	}
	return "", ""
}

// readsProgram reports whether a line runs a shell or an interpreter that
// reads its program from its standard input.
func readsProgram(sl *shell.Line) bool {
	for _, c := range sl.Cmds {
		if len(c.Argv) == 0 {
			continue
		}
		if shell.IsShell(c.Name) {
			if script, file, reads := shell.ScriptArgs(c.Argv[1:]); script == nil && (reads || file != nil && (file.Val == "-" || file.Val == "/dev/stdin")) {
				return true
			}
		}
		if f := shell.Interpreter(c.Name); f != "" {
			if _, reads := shell.InterpreterCode(f, c.Argv[1:]); reads {
				return true
			}
		}
	}
	return false
}

// codeTarget judges the first argument of a tree deletion at code[k:]: a
// string literal is judged as a path, anything else cannot be known and
// counts as dangerous.
func (e *Engine) codeTarget(code string, k int, cwds []string) (string, bool) {
	v, ok := codeString(code, k)
	if !ok || codeContinues(code, codeStringEnd(code, k)) {
		return "a path not known before it runs", true
	}
	return e.dangerous(shell.Word{Src: v, Val: v, Glob: -1}, cwds)
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
	for skip := 0; skip < 2; skip++ {
		// os.spawnlp(os.P_WAIT, "rm", ...): a leading argument that is
		// no string and no list is not part of the command.
		if _, ok := codeString(code, k); ok || k >= len(code) || code[k] == '[' {
			break
		}
		j := k
		for j < len(code) && strings.IndexByte(",)[\"'\n;", code[j]) < 0 {
			j++
		}
		if j >= len(code) || code[j] != ',' {
			break
		}
		k = skipCodeSpace(code, j+1)
	}
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
const codeUnknown = shell.Unknown

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
			if strings.Contains(v, shell.Unknown) || q != '\'' && (strings.Contains(v, "$") || strings.Contains(v, "#{")) || fstring && strings.Contains(v, "{") {
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
	d := shell.ExpandHome(args[0], e.ws.home)
	if strings.HasPrefix(d, "$") || d == "-" || strings.Contains(d, shell.Unknown) || cwd == shell.CwdUnknown {
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
func (e *Engine) dangerous(w shell.Word, cwds []string) (string, bool) {
	if !w.Static() {
		return w.Src + " (not known before it runs)", true
	}
	arg := w.Src
	if strings.ContainsAny(arg, "$`") {
		arg += " = " + w.Val // $(echo /), $X set in the line
	}
	t := w.Val
	if w.Glob >= 0 {
		t = t[:w.Glob]
		if j := strings.LastIndexByte(t, '/'); j >= 0 {
			t = t[:j+1]
		} else {
			t = "."
		}
	}
	t = shell.ExpandHome(t, e.ws.home)
	if t == "" {
		return "", false
	}
	var abs []string
	if len(cwds) == 0 {
		cwds = []string{""}
	}
	for _, cwd := range cwds {
		p := t
		if !filepath.IsAbs(t) {
			switch cwd {
			case "": // no workspace: a relative path cannot be placed
				continue
			case shell.CwdUnknown:
				return arg + " (in a directory not known before it runs)", true
			}
			p = cwd + "/" + t
		}
		// As the kernel walks it: /proc/self/cwd is cwd, /proc/self/root is /.
		r, ok := shell.ProcPath(p, cwd)
		if !ok {
			return arg + " (through a directory not known before it runs)", true
		}
		if r != filepath.Clean(p) {
			arg += " = " + r
		}
		abs = append(abs, r)
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
func (e *Engine) rmTarget(args []shell.Word, cwds []string) (string, bool) {
	recursive := false
	var targets []shell.Word
	opts := true
	for _, w := range args {
		a := w.Val
		switch {
		case !w.Static():
			recursive = recursive || w.Split
			targets = append(targets, w)
		case opts && a == "--":
			opts = false
		case opts && strings.HasPrefix(a, "--"):
			recursive = recursive || hasLongOpt(a, rmLongOpts, "recursive")
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
func (e *Engine) findDelete(args []shell.Word, cwds []string) (string, bool) {
	deletes := false
	for i, w := range args {
		a := w.Val
		switch {
		case a == "-delete":
			deletes = true
		case a == "-exec" || a == "-execdir" || a == "-ok" || a == "-okdir":
			if argv, _ := shell.StripWrappers(args[i+1:]); len(argv) > 0 && (path.Base(argv[0].Val) == "rm" || !argv[0].Static()) {
				deletes = true
			}
		case shell.IsNameFilter(a):
			return "", false // a targeted clean-up (find . -name '*.o' -delete), not a wipe
		}
	}
	if !deletes {
		return "", false
	}
	roots, _ := shell.FindRoots(args)
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
func (e *Engine) mvSource(args []shell.Word, cwds []string) (string, bool) {
	var pos []shell.Word
	target := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch v := a.Val; {
		case !a.Static():
			pos = append(pos, a)
		case v == "--":
			pos = append(pos, args[i+1:]...)
			i = len(args)
		case v == "-t" || v == "-S":
			target = target || v == "-t"
			i++
		case strings.HasPrefix(v, "--") && (hasLongOpt(v, mvLongOpts, "target-directory") || hasLongOpt(v, mvLongOpts, "suffix")):
			target = target || hasLongOpt(v, mvLongOpts, "target-directory")
			if !strings.Contains(v, "=") {
				i++
			}
		case strings.HasPrefix(v, "-t") && !strings.HasPrefix(v, "--"):
			target = true
		case strings.HasPrefix(v, "-") && len(v) > 1:
		default:
			pos = append(pos, a)
		}
	}
	if !target && len(pos) > 0 {
		pos = pos[:len(pos)-1]
	}
	for _, w := range pos {
		if !w.Static() {
			continue
		}
		why, ok := e.dangerous(w, cwds)
		if !ok {
			continue
		}
		if w.Glob >= 0 {
			prefix := w.Val[:w.Glob]
			dir := shell.ExpandHome(prefix[:strings.LastIndexByte(prefix, '/')+1], e.ws.home)
			if d := filepath.Clean(dir); !filepath.IsAbs(dir) || d != "/" && !isAncestorOrSelf(d, e.ws.home) {
				continue
			}
		}
		return why, true
	}
	return "", false
}

// chmodTarget returns a dangerous target of a recursive chmod/chown/chgrp.
func (e *Engine) chmodTarget(args []shell.Word, cwds []string) (string, bool) {
	recursive := false
	var rest []shell.Word
	for _, w := range args {
		a := w.Val
		switch {
		case !w.Static():
			rest = append(rest, w)
		case strings.HasPrefix(a, "--"):
			recursive = recursive || hasLongOpt(a, chmodLongOpts, "recursive")
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
