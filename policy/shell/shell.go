package shell

import (
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"
	"unicode"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// This file reads a shell command line with a real parser (mvdan.cc/sh)
// and lists every simple command it would run: the commands of lists,
// pipelines and compound commands, of functions, of $(...), `...`, <(...)
// and >(...), the scripts given to sh -c, eval, su -c, env -S and watch,
// the scripts fed to a shell through a pipe, a here-string or a heredoc,
// and the commands xargs and find -exec run. Wrappers such as sudo, env,
// nice or timeout are looked through.
//
// It never runs anything. A word whose value depends on the run (a
// variable, a substitution) is kept as unknown, so that the floor can read
// it at its most dangerous. A line that does not parse is read word by
// word, with every word a possible command (see guess).

// MaxDepth bounds the recursion into nested scripts (sh -c, eval).
const MaxDepth = 4

// MaxCommands bounds the commands read from one line.
const MaxCommands = 2048

// maxExpandedWords bounds the words of a command xargs or find -exec
// runs, once its items are put in.
const maxExpandedWords = 4096

// Unknown stands in a word's value for a part that cannot be known
// before the command runs.
const Unknown = "\x00"

// CwdUnknown is a working directory a cd went to that cannot be known.
const CwdUnknown = "\x00cwd"

// Env is what the reader knows of the place a line runs in.
type Env struct {
	Home string // expands ~ and $HOME
	Cwd  string // absolute; "" when no workspace is known

	// Watched reports whether the reader's caller looks at a program of
	// this name: a line that does not parse keeps every such command, and
	// only a bounded number of others. nil: every program is watched.
	Watched func(name string) bool
	// RunsInput reports whether an interpreter's program runs code it
	// reads: fed a download, it runs the download. nil: none does.
	RunsInput func(code string) bool
}

// Word is one word of a command after quote removal.
type Word struct {
	Src    string // as written
	script string // for a word that is not static: its script text (see scriptText)
	Val    string // its value; unknown parts are Unknown
	Glob   int    // index in val of the first unquoted glob character; -1 none
	Split  bool   // an unquoted unknown part: it may split into several words, options too
}

func (w Word) Static() bool { return !strings.Contains(w.Val, Unknown) }

// Text is the word for rule matching: its value when known, else as written.
func (w Word) Text() string {
	if w.Static() {
		return w.Val
	}
	return w.Src
}

func Lit(s string) Word { return Word{Src: s, Val: s, Glob: -1} }

// stream is what a command reads on its standard input, as far as known.
type stream struct {
	fetched bool   // it comes from a download (curl, wget, ...)
	text    string // its text, when hasText
	hasText bool   // echo/printf of static words, a here-string, a heredoc
	items   []Word // the paths find prints; nil when not from find
}

// Cmd is one simple command a line would run.
type Cmd struct {
	Text    string   // as written, white space collapsed
	Norm    string   // argv as text: wrappers stripped, quotes removed
	Argv    []Word   // the program and its arguments, wrappers stripped
	Name    string   // base name of argv[0]; "" when not known
	Depth   int      // nesting of scripts (sh -c, eval)
	Wrapper bool     // it runs a script whose commands follow: allow rules look at those
	Cwds    []string // the directories it may run in
	Guess   bool     // read from a line that does not parse
	At      int      // offset of its first word in its script; -1 when it has none there

	PipeShell bool     // it runs, as a program, what a download wrote on its input
	FetchSub  bool     // a substitution in its words runs a download
	DevRedir  string   // it redirects onto this disk device
	Code      []string // the programs it gives an interpreter (python3 -c CODE)
	// UnknownRun says what it runs that cannot be known before it runs
	// (sed's e command, awk printing into sh, a root shell reading the
	// terminal): the floor reads that at its most dangerous.
	UnknownRun string
	// Env is what the line puts in its environment (FOO=1 cmd, Env FOO=1
	// cmd, export FOO=1): values, unknown parts Unknown. Only names
	// that change what a program the floor reads does are kept (gitEnvKey).
	Env map[string]string
}

// Line is what was read from one command line.
type Line struct {
	OK    bool // parsed whole; false: some of it was guessed at
	Cmds  []*Cmd
	Bombs []string // functions that fork copies of themselves
}

// Parse reads line.
func Parse(line string, env Env) *Line {
	return ParseAt(line, env, []string{env.Cwd}, 0)
}

// ParseAt reads a script run in one of cwds, depth scripts deep.
func ParseAt(line string, env Env, cwds []string, depth int) *Line {
	sl := &Line{OK: true}
	r := &reader{env: env, line: sl}
	r.script(line, cwds, stream{}, depth)
	if r.overflow {
		// Too many commands to follow: the whole line is read as one that
		// does not parse.
		sl.Cmds = nil
		r.guess(line, cwds, depth)
	}
	return sl
}

type reader struct {
	env      Env
	line     *Line
	overflow bool     // more than MaxCommands
	funcs    []string // the functions whose bodies are being read
	vars     map[string]*Word
	exports  map[string]string // exported in the line, for gitEnvKey names
}

// script reads src, a script of its own (a line, an sh -c script).
func (r *reader) script(src string, cwds []string, in stream, depth int) {
	if r.overflow {
		return
	}
	if depth > MaxDepth {
		r.guess(src, cwds, depth)
		return
	}
	f, err := parseBash(src)
	if err != nil || !commentsAgree(f, src) {
		r.guess(src, cwds, depth)
		return
	}
	p := &part{r: r, src: src, depth: depth}
	p.stmts(f.Stmts, cwds, in)
}

// parseBash parses src as bash. A panic in the parser is a parse error.
func parseBash(src string) (f *syntax.File, err error) {
	defer func() {
		if v := recover(); v != nil {
			f, err = nil, fmt.Errorf("shell parser: %v", v)
		}
	}()
	return syntax.NewParser(syntax.Variant(syntax.LangBash), syntax.KeepComments(true)).Parse(strings.NewReader(src), "")
}

// commentsAgree reports whether every comment the parser found starts where
// bash starts one: at the beginning of a word. Where it does not (the
// parser took text bash runs for a comment), the parse is not trusted.
func commentsAgree(f *syntax.File, src string) bool {
	agree := true
	syntax.Walk(f, func(n syntax.Node) bool {
		if c, ok := n.(*syntax.Comment); ok {
			if i := int(c.Hash.Offset()); i > 0 && i <= len(src) && strings.IndexByte(" \t\n;&|()<>", src[i-1]) < 0 {
				agree = false
			}
		}
		return agree
	})
	return agree
}

// part is one parsed script: positions are offsets into src.
type part struct {
	r     *reader
	src   string
	depth int
	here  []string // the directories the command being read runs in
}

// stmtText is a statement as written, without its ; or &.
func (p *part) stmtText(s *syntax.Stmt) string {
	a, b := int(s.Pos().Offset()), 0
	if s.Cmd != nil {
		b = int(s.Cmd.End().Offset())
	}
	for _, r := range s.Redirs {
		b = max(b, int(r.End().Offset()))
	}
	if a < 0 || b > len(p.src) || a > b {
		return ""
	}
	return Collapse(p.src[a:b])
}

func (p *part) slice(n syntax.Node) string {
	a, b := int(n.Pos().Offset()), int(n.End().Offset())
	if a < 0 || b > len(p.src) || a > b {
		return ""
	}
	return p.src[a:b]
}

// stmts reads a list run one after the other; it returns the directories
// the list may end in.
func (p *part) stmts(list []*syntax.Stmt, cwds []string, in stream) []string {
	for _, s := range list {
		ok, fail, _ := p.stmt(s, cwds, in, false)
		cwds = union(ok, fail)
	}
	return cwds
}

// stmt reads one statement. It returns the directories it may leave the
// shell in when it succeeds and when it fails, and its simple command when
// it is one.
func (p *part) stmt(s *syntax.Stmt, cwds []string, in stream, forking bool) (ok, fail []string, main *Cmd) {
	if s == nil || p.r.overflow {
		return cwds, cwds, nil
	}
	if len(p.r.line.Cmds) >= MaxCommands {
		p.r.overflow = true
		return cwds, cwds, nil
	}
	forking = forking || s.Background || s.Coprocess || s.Disown
	p.here = cwds
	var redir redirs
	for _, rd := range s.Redirs {
		p.redirect(rd, cwds, &redir)
	}
	if redir.stdin.hasText || redir.stdin.fetched {
		in = redir.stdin
	}
	switch c := s.Cmd.(type) {
	case nil: // > file: only redirections
		p.add(&Cmd{Text: p.stmtText(s), Depth: p.depth, Cwds: cwds, DevRedir: redir.device})
	case *syntax.CallExpr:
		return p.call(s, c, cwds, in, forking, redir)
	case *syntax.BinaryCmd:
		switch c.Op {
		case syntax.AndStmt:
			ok1, fail1, _ := p.stmt(c.X, cwds, in, forking)
			ok2, fail2, _ := p.stmt(c.Y, ok1, in, forking)
			return ok2, union(fail1, fail2), nil
		case syntax.OrStmt:
			ok1, fail1, _ := p.stmt(c.X, cwds, in, forking)
			ok2, fail2, _ := p.stmt(c.Y, fail1, in, forking)
			return union(ok1, ok2), fail2, nil
		default: // a pipeline: every stage runs in a subshell of its own
			stages := pipeline(c)
			cur := in
			for _, st := range stages {
				_, _, m := p.stmt(st, cwds, cur, true)
				cur = output(m, cur)
			}
			return cwds, cwds, nil
		}
	case *syntax.Subshell:
		p.stmts(c.Stmts, cwds, in)
		return cwds, cwds, nil
	case *syntax.Block:
		end := p.stmts(c.Stmts, cwds, in)
		return end, end, nil
	case *syntax.IfClause:
		end := p.ifClause(c, cwds, in)
		return end, end, nil
	case *syntax.WhileClause:
		c1 := p.stmts(c.Cond, cwds, in)
		d := p.stmts(c.Do, c1, in)
		end := union(cwds, union(c1, d))
		return end, end, nil
	case *syntax.ForClause:
		switch l := c.Loop.(type) {
		case *syntax.WordIter:
			for _, w := range l.Items {
				p.substs(w, cwds)
			}
			if l.Name != nil {
				p.r.setVar(l.Name.Value, nil)
			}
		default:
			p.substs(c.Loop, cwds)
		}
		d := p.stmts(c.Do, cwds, in)
		end := union(cwds, d)
		return end, end, nil
	case *syntax.CaseClause:
		p.substs(c.Word, cwds)
		end := cwds
		for _, it := range c.Items {
			for _, w := range it.Patterns {
				p.substs(w, cwds)
			}
			end = union(end, p.stmts(it.Stmts, cwds, in))
		}
		return end, end, nil
	case *syntax.FuncDecl:
		p.r.funcs = append(p.r.funcs, funcNames(c)...)
		p.stmt(c.Body, cwds, in, false)
		p.r.funcs = p.r.funcs[:len(p.r.funcs)-len(funcNames(c))]
		return cwds, cwds, nil
	case *syntax.TimeClause:
		return p.stmt(c.Stmt, cwds, in, forking)
	case *syntax.CoprocClause:
		p.stmt(c.Stmt, cwds, in, true)
		return cwds, cwds, nil
	case *syntax.DeclClause:
		var words []Word
		if c.Variant != nil {
			words = append(words, Lit(c.Variant.Value))
		}
		for _, a := range c.Args {
			p.assign(a, cwds)
			if c.Variant != nil && c.Variant.Value == "export" && a.Name != nil && gitEnvKey(a.Name.Value) {
				if p.r.exports == nil {
					p.r.exports = map[string]string{}
				}
				v := Unknown // export NAME: a value from outside the line
				if a.Value != nil {
					v = p.word(a.Value).Val
				}
				p.r.exports[a.Name.Value] = v
			}
			if a.Naked && a.Name == nil && a.Value != nil {
				words = append(words, p.word(a.Value))
			}
		}
		dc := &Cmd{Text: p.stmtText(s), Argv: words, Norm: wordsText(words), Depth: p.depth, Cwds: cwds, DevRedir: redir.device}
		if c.Variant != nil {
			dc.Name = c.Variant.Value
		}
		p.add(dc)
		return cwds, cwds, nil
	default: // [[ ]], (( )), let and the like: only their substitutions run
		p.substs(c, cwds)
	}
	return cwds, cwds, nil
}

func funcNames(f *syntax.FuncDecl) []string {
	var out []string
	if f.Name != nil {
		out = append(out, f.Name.Value)
	}
	for _, n := range f.Names {
		out = append(out, n.Value)
	}
	return out
}

func (p *part) ifClause(c *syntax.IfClause, cwds []string, in stream) []string {
	cond := p.stmts(c.Cond, cwds, in)
	then := p.stmts(c.Then, cond, in)
	if c.Else == nil {
		return union(then, cond)
	}
	return union(then, p.ifClause(c.Else, cond, in))
}

// pipeline flattens a | b | c into its stages.
func pipeline(c *syntax.BinaryCmd) []*syntax.Stmt {
	var out []*syntax.Stmt
	if x, ok := c.X.Cmd.(*syntax.BinaryCmd); ok && (x.Op == syntax.Pipe || x.Op == syntax.PipeAll) && len(c.X.Redirs) == 0 && !c.X.Negated {
		out = pipeline(x)
	} else {
		out = append(out, c.X)
	}
	return append(out, c.Y)
}

// redirs is what a statement's redirections do.
type redirs struct {
	stdin  stream
	device string // a disk device written to
}

func (p *part) redirect(rd *syntax.Redirect, cwds []string, out *redirs) {
	if rd.Word != nil {
		p.substs(rd.Word, cwds)
	}
	switch rd.Op {
	case syntax.WordHdoc:
		out.stdin = stream{text: p.scriptText(rd.Word), hasText: true}
		if p.fetches(rd.Word) {
			out.stdin = stream{fetched: true}
		}
	case syntax.Hdoc, syntax.DashHdoc:
		if rd.Hdoc != nil {
			p.substs(rd.Hdoc, cwds)
			out.stdin = stream{text: p.rawText(rd.Hdoc), hasText: true}
		}
	case syntax.RdrIn:
		if p.fetches(rd.Word) { // < <(curl ...)
			out.stdin = stream{fetched: true}
		}
	case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.AppClob, syntax.RdrAll, syntax.AppAll,
		syntax.RdrAllClob, syntax.AppAllClob, syntax.RdrInOut, syntax.DplOut:
		if rd.Word != nil {
			if d := DiskPath(p.word(rd.Word).Val); d != "" {
				out.device = d
			}
		}
	}
}

// call reads a simple command.
func (p *part) call(s *syntax.Stmt, c *syntax.CallExpr, cwds []string, in stream, forking bool, redir redirs) (ok, fail []string, main *Cmd) {
	for _, a := range c.Assigns {
		p.assign(a, cwds)
	}
	words := make([]Word, 0, len(c.Args))
	for _, w := range c.Args {
		if f, ok := p.fields(w); ok {
			// $x, with x set to "rm -rf /": the words it splits into.
			for _, v := range f {
				words = append(words, Lit(v))
			}
			continue
		}
		words = append(words, p.braces(w)...)
	}
	cmd := &Cmd{Text: p.stmtText(s), Depth: p.depth, Cwds: cwds, DevRedir: redir.device, At: -1}
	for _, a := range c.Assigns {
		if a.Name != nil && gitEnvKey(a.Name.Value) {
			v := "" // HOME= git ...
			if a.Value != nil {
				v = p.word(a.Value).Val
			}
			cmd.setEnv(a.Name.Value, v)
		}
	}
	if len(c.Args) > 0 {
		cmd.At = int(c.Args[0].Pos().Offset())
	}
	for _, w := range c.Args {
		if p.fetches(w) {
			cmd.FetchSub = true
		}
	}
	for _, rd := range s.Redirs {
		if rd.Word != nil && rd.Op != syntax.RdrIn && p.fetches(rd.Word) {
			cmd.FetchSub = true
		}
	}
	if len(words) > 0 {
		if n := words[0]; n.Static() && slices.Contains(p.r.funcs, n.Val) && forking {
			p.r.line.Bombs = append(p.r.line.Bombs, n.Val)
		}
	}
	ok, fail = p.run(cmd, words, cwds, in)
	for _, w := range c.Args {
		p.substs(w, cwds)
	}
	return ok, fail, cmd
}

// run fills in cmd for the words it runs, adds it, and adds the commands it
// runs in turn. It returns the directories a cd leaves.
func (p *part) run(cmd *Cmd, words []Word, cwds []string, in stream) (ok, fail []string) {
	argv, wi := StripWrappers(words)
	if wi.cwd != nil {
		cwds = p.r.cd(cwds, []Word{*wi.cwd})
		cmd.Cwds = cwds
	}
	cmd.Argv = argv
	cmd.Norm = wordsText(argv)
	if len(argv) > 0 && argv[0].Static() {
		cmd.Name = path.Base(argv[0].Val)
	}
	for k, v := range p.r.exports {
		if _, set := cmd.Env[k]; !set {
			cmd.setEnv(k, v)
		}
	}
	for _, a := range words[:len(words)-len(argv)] {
		if k, v, ok := strings.Cut(a.Val, "="); ok && isAssignment(a.Val) && gitEnvKey(k) {
			cmd.setEnv(k, v) // env FOO=1 cmd, sudo FOO=1 cmd
		}
	}
	p.add(cmd)
	if wi.script != nil {
		cmd.Wrapper = len(argv) == 0
		p.nested(p.scriptOf(*wi.script), cwds, in)
	}
	if len(argv) == 0 {
		return cwds, cwds
	}
	args := argv[1:]
	switch name := cmd.Name; {
	case name == "cd" || name == "pushd":
		return p.r.cd(cwds, args), cwds
	case name == "popd":
		return []string{CwdUnknown}, cwds
	case IsShell(name):
		script, file, reads := ScriptArgs(args)
		switch {
		case script != nil:
			cmd.Wrapper = true
			p.nested(p.scriptOf(*script), cwds, stream{})
		case reads && in.fetched:
			cmd.PipeShell = true
		case reads && in.hasText:
			p.nested(in.text, cwds, stream{})
		case file != nil && file.Static() && (file.Val == "/dev/stdin" || file.Val == "-") && in.fetched:
			cmd.PipeShell = true
		case reads && wi.root:
			cmd.UnknownRun = "a shell run as another user (" + words[0].Text() + ") reading commands the floor cannot see"
		}
	case name == "tmux" || name == "screen":
		p.detached(cmd, name, args, cwds)
	case name == "sed" || name == "gsed":
		p.sed(cmd, args, cwds, in)
	case name == "eval":
		parts := make([]string, len(args))
		for i, a := range args {
			parts[i] = p.scriptOf(a)
		}
		cmd.Wrapper = true
		p.nested(strings.Join(parts, " "), cwds, stream{})
	case name == "trap":
		if len(args) > 1 && args[0].Static() && !strings.HasPrefix(args[0].Val, "-") {
			cmd.Wrapper = true
			p.nested(p.scriptOf(args[0]), cwds, stream{})
		}
	case name == "git":
		// git -c alias.x='!cmd', -c core.pager=cmd and the like run cmd.
		for i := 0; i+1 < len(args) && args[i].Static() && strings.HasPrefix(args[i].Val, "-"); i++ {
			if args[i].Val != "-c" {
				continue
			}
			key, val, _ := strings.Cut(args[i+1].Val, "=")
			key = strings.ToLower(key)
			if script, ok := strings.CutPrefix(val, "!"); ok && strings.HasPrefix(key, "alias.") {
				p.nested(script, cwds, stream{})
			} else if isGitCommandKey(key) {
				p.nested(val, cwds, stream{})
			}
			i++
		}
	case name == "parallel":
		// parallel CMD ::: ARGS runs CMD once per argument.
		for i, a := range args {
			if a.Val == ":::" || a.Val == "::::" {
				items := args[i+1:]
				if len(items) > 256 || a.Val == "::::" { // :::: names files of arguments
					items = []Word{{Src: "(parallel arguments)", Val: Unknown, Glob: -1}}
				}
				for _, it := range items {
					sub := &Cmd{Text: wordsText(args[:i]), Depth: p.depth, Cwds: cwds}
					p.run(sub, append(append([]Word(nil), args[:i]...), it), cwds, stream{})
				}
				break
			}
		}
	case name == "source" || name == ".":
		if len(args) > 0 && args[0].Static() && (args[0].Val == "/dev/stdin" || args[0].Val == "-") && in.fetched {
			cmd.PipeShell = true
		}
	case name == "xargs":
		inner, repl := xargsArgs(args)
		items := in.items
		if items == nil {
			if in.hasText && !in.fetched {
				for _, f := range strings.Fields(in.text) {
					items = append(items, Lit(f))
				}
			} else {
				// Each item is one argument: it may be any path, but is
				// not taken for options.
				items = []Word{{Src: "(xargs input)", Val: Unknown, Glob: -1}}
			}
		}
		if len(inner) == 0 {
			inner = []Word{Lit("echo")}
		}
		if len(items)*len(inner) > maxExpandedWords {
			// Too many to list: one item that may be any of them.
			items = []Word{{Src: "(xargs input)", Val: Unknown, Glob: -1}}
		}
		var run []Word
		if repl != "" {
			for _, w := range inner {
				if strings.Contains(w.Val, repl) {
					for _, it := range items {
						run = append(run, Word{Src: w.Src, Val: strings.ReplaceAll(w.Val, repl, it.Val), Glob: -1})
					}
					continue
				}
				run = append(run, w)
			}
		} else {
			run = append(append(run, inner...), items...)
		}
		sub := &Cmd{Text: wordsText(inner), Depth: p.depth, Cwds: cwds}
		p.run(sub, run, cwds, stream{})
		if in.fetched && RunsProgram(sub.Name) {
			sub.PipeShell = true // curl x | xargs sh -c: the download is the script
		}
	case name == "find":
		for _, ex := range findExecs(args) {
			sub := &Cmd{Text: wordsText(ex.written), Depth: p.depth, Cwds: cwds}
			p.run(sub, ex.run, cwds, stream{})
		}
	case Interpreter(name) != "":
		code, reads := InterpreterCode(Interpreter(name), args)
		for _, c := range code {
			cmd.Code = append(cmd.Code, c.Val)
		}
		switch {
		case reads && in.fetched:
			cmd.PipeShell = true
		case reads && in.hasText:
			cmd.Code = append(cmd.Code, in.text)
		case in.fetched && p.r.env.RunsInput != nil && slices.ContainsFunc(cmd.Code, p.r.env.RunsInput):
			// curl ... | python3 -c 'exec(sys.stdin.read())': the program
			// runs what it reads.
			cmd.PipeShell = true
		}
	}
	return cwds, cwds
}

func (c *Cmd) setEnv(k, v string) {
	if c.Env == nil {
		c.Env = map[string]string{}
	}
	c.Env[k] = v
}

// gitEnvKey reports whether an environment variable changes the config
// git reads (GIT_CONFIG_COUNT/KEY_n/VALUE_n, GIT_CONFIG_PARAMETERS, the
// files it reads) or the repository it works on.
func gitEnvKey(k string) bool {
	switch k {
	case "HOME", "XDG_CONFIG_HOME", "GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_CONFIG", "GIT_CONFIG_GLOBAL",
		"GIT_CONFIG_SYSTEM", "GIT_CONFIG_NOSYSTEM", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT":
		return true
	}
	return strings.HasPrefix(k, "GIT_CONFIG_KEY_") || strings.HasPrefix(k, "GIT_CONFIG_VALUE_")
}

// maxDetachedWords bounds the words of a tmux or screen command followed.
const maxDetachedWords = 64

// detached reads tmux and screen, which start a command in a session of
// their own (detached with -d, and left running after the line ends) or
// type keys into one (tmux send-keys, screen -X stuff). Their options
// differ by subcommand and version: rather than parse them, every suffix of
// the arguments is read as the command (tmux runs it with sh -c, screen
// execs it), which covers the real one whatever the options were.
func (p *part) detached(cmd *Cmd, name string, args []Word, cwds []string) {
	if len(args) > maxDetachedWords {
		cmd.UnknownRun = name + " with more arguments than the floor follows"
		return
	}
	cmd.Wrapper = true
	for i := range args {
		if name == "screen" && args[i].Static() && strings.HasPrefix(args[i].Val, "-") {
			if args[i].Val == "-X" && i+1 < len(args) {
				p.nested(p.scriptOf(Lit(wordsText(args[i+2:]))), cwds, stream{}) // -X stuff KEYS: typed into a shell
			}
			continue
		}
		if name == "screen" {
			sub := &Cmd{Text: wordsText(args[i:]), Depth: p.depth, Cwds: cwds}
			p.run(sub, slices.Clone(args[i:]), cwds, stream{})
			continue
		}
		parts := make([]string, 0, len(args)-i)
		for _, a := range args[i:] {
			parts = append(parts, p.scriptOf(a))
		}
		p.nested(strings.Join(parts, " "), cwds, stream{})
	}
}

// sed reads GNU sed's script for the commands it runs: e COMMAND runs
// COMMAND; e alone, and s///e, run text made from the input, which cannot
// be known.
func (p *part) sed(cmd *Cmd, args []Word, cwds []string, in stream) {
	var scripts []string
	explicit := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		v := a.Val
		switch {
		case v == "-e" || v == "--expression":
			if i+1 < len(args) {
				scripts = append(scripts, p.scriptOf(args[i+1]))
				i++
			}
			explicit = true
		case strings.HasPrefix(v, "--expression="):
			scripts = append(scripts, strings.TrimPrefix(v, "--expression="))
			explicit = true
		case v == "-f" || v == "--file" || strings.HasPrefix(v, "--file="):
			explicit = true // a script file the floor cannot read
			if v == "-f" || v == "--file" {
				i++
			}
		case strings.HasPrefix(v, "-") && len(v) > 1 && !strings.HasPrefix(v, "--"):
			if k := strings.IndexAny(v, "ef"); k > 0 {
				explicit = true
				rest := v[k+1:]
				switch {
				case v[k] == 'f':
					if rest == "" {
						i++
					}
				case rest != "":
					scripts = append(scripts, rest)
				case i+1 < len(args):
					scripts = append(scripts, p.scriptOf(args[i+1]))
					i++
				}
			}
		case strings.HasPrefix(v, "--"):
		default:
			if !explicit {
				scripts = append(scripts, p.scriptOf(a))
				explicit = true
			}
		}
	}
	for _, sc := range scripts {
		for _, run := range sedRuns(sc) {
			if run == "" {
				cmd.UnknownRun = "sed runs text made from its input as a command (its e command or s///e)"
				continue
			}
			cmd.Wrapper = true
			p.nested(run, cwds, stream{})
		}
	}
}

// sedRuns returns the commands a sed script runs: the command of e CMD,
// or "" for one made at run time (e alone, the e flag of s).
func sedRuns(sc string) []string {
	var out []string
	for i := 0; i < len(sc); {
		// Skip separators and an address (a number, $, /re/, \cREc, ranges, !).
		for i < len(sc) && strings.IndexByte(" \t\n;{}!,0123456789$~+", sc[i]) >= 0 {
			i++
		}
		if i < len(sc) && (sc[i] == '/' || sc[i] == '\\') {
			d := sc[i]
			if d == '\\' && i+1 < len(sc) {
				i++
				d = sc[i]
			}
			i = sedDelim(sc, i+1, d)
			for i < len(sc) && (sc[i] == 'I' || sc[i] == 'M') {
				i++
			}
			continue
		}
		if i >= len(sc) {
			break
		}
		c := sc[i]
		i++
		switch c {
		case 'e':
			end := strings.IndexByte(sc[i:], '\n')
			if end < 0 {
				end = len(sc) - i
			}
			out = append(out, strings.TrimSpace(sc[i:i+end]))
			i += end
		case 's', 'y':
			if i >= len(sc) {
				return out
			}
			d := sc[i]
			i = sedDelim(sc, i+1, d)
			i = sedDelim(sc, i, d)
			flags := i
			for i < len(sc) && strings.IndexByte(" \t\n;}", sc[i]) < 0 {
				if sc[i] == 'w' { // w FILE takes the rest of the line
					i = len(sc)
					break
				}
				i++
			}
			if c == 's' && strings.Contains(sc[flags:i], "e") {
				out = append(out, "")
			}
		case 'a', 'i', 'c', 'r', 'R', 'w', 'W', '#':
			// Text or a label to the end of the line.
			end := strings.IndexByte(sc[i:], '\n')
			if end < 0 {
				return out
			}
			i += end
		}
	}
	return out
}

// sedDelim returns the index past the next unescaped d in sc[i:].
func sedDelim(sc string, i int, d byte) int {
	for ; i < len(sc); i++ {
		switch sc[i] {
		case '\\':
			i++
		case d:
			return i + 1
		}
	}
	return len(sc)
}

func (p *part) add(c *Cmd) {
	p.r.line.Cmds = append(p.r.line.Cmds, c)
}

// nested reads a script a command runs.
func (p *part) nested(src string, cwds []string, in stream) {
	p.r.script(src, cwds, in, p.depth+1)
}

// substs reads the command and process substitutions inside node.
func (p *part) substs(node syntax.Node, cwds []string) {
	if node == nil {
		return
	}
	syntax.Walk(node, func(n syntax.Node) bool {
		switch x := n.(type) {
		case *syntax.CmdSubst:
			p.stmts(x.Stmts, cwds, stream{})
			return false
		case *syntax.ProcSubst:
			p.stmts(x.Stmts, cwds, stream{})
			return false
		}
		return true
	})
}

// fetches reports whether a substitution in node runs a download.
func (p *part) fetches(node syntax.Node) bool {
	if node == nil {
		return false
	}
	found := false
	syntax.Walk(node, func(n syntax.Node) bool {
		if found {
			return false
		}
		switch x := n.(type) {
		case *syntax.CmdSubst, *syntax.ProcSubst:
			syntax.Walk(x, func(m syntax.Node) bool {
				if ce, ok := m.(*syntax.CallExpr); ok && len(ce.Args) > 0 {
					words := make([]Word, len(ce.Args))
					for i, w := range ce.Args {
						words[i] = p.word(w)
					}
					argv, _ := StripWrappers(words)
					if len(argv) > 0 && isFetcher(path.Base(argv[0].Val)) {
						found = true
					}
				}
				return !found
			})
			return false
		}
		return true
	})
	return found
}

// assign records a variable assignment and reads its substitutions.
func (p *part) assign(a *syntax.Assign, cwds []string) {
	if a.Value != nil {
		p.substs(a.Value, cwds)
	}
	if a.Array != nil {
		p.substs(a.Array, cwds)
	}
	if a.Index != nil { // a[$(cmd)]=x
		p.substs(a.Index, cwds)
	}
	if a.Name == nil {
		return
	}
	if a.Value == nil || a.Append || a.Index != nil || a.Array != nil {
		p.r.setVar(a.Name.Value, nil)
		return
	}
	w := p.word(a.Value)
	p.r.setVar(a.Name.Value, &w)
}

// setVar records a variable's value; nil, or a second assignment, makes it
// unknown (the reader does not follow control flow).
func (r *reader) setVar(name string, w *Word) {
	if r.vars == nil {
		r.vars = map[string]*Word{}
	}
	if _, seen := r.vars[name]; seen || w == nil || !w.Static() {
		r.vars[name] = nil
		return
	}
	r.vars[name] = w
}

// cd follows a cd: the directories the shell may be in after it succeeds.
func (r *reader) cd(cwds []string, args []Word) []string {
	for len(args) > 0 && args[0].Static() && strings.HasPrefix(args[0].Val, "-") && len(args[0].Val) > 1 {
		stop := args[0].Val == "--"
		args = args[1:]
		if stop {
			break
		}
	}
	if len(args) == 0 {
		if r.env.Home == "" {
			return []string{CwdUnknown}
		}
		return []string{r.env.Home}
	}
	a := args[0]
	if !a.Static() || a.Glob >= 0 || a.Val == "-" {
		return []string{CwdUnknown}
	}
	d := ExpandHome(a.Val, r.env.Home)
	if strings.HasPrefix(d, "~") {
		return []string{CwdUnknown}
	}
	if path.IsAbs(d) {
		return []string{path.Clean(d)}
	}
	var out []string
	for _, c := range cwds {
		switch c {
		case "", CwdUnknown:
			out = append(out, CwdUnknown)
		default:
			out = append(out, path.Join(c, d))
		}
	}
	return union(out, nil)
}

// union merges two sets of directories.
func union(a, b []string) []string {
	out := make([]string, 0, len(a)+len(b))
	for _, s := range append(append([]string(nil), a...), b...) {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	if len(out) > 16 { // too many to follow: any of them, or anywhere
		out = append(out[:15], CwdUnknown)
	}
	return out
}

// output is what a pipeline stage writes for the next one.
func output(c *Cmd, in stream) stream {
	out := stream{fetched: in.fetched}
	if c == nil {
		return out
	}
	if isFetcher(c.Name) || c.FetchSub {
		out.fetched = true
	}
	args := c.Argv
	if len(args) > 0 {
		args = args[1:]
	}
	switch c.Name {
	case "echo", "printf":
		for len(args) > 0 && c.Name == "echo" && args[0].Static() && strings.HasPrefix(args[0].Val, "-") {
			args = args[1:]
		}
		vals := make([]string, 0, len(args))
		for _, a := range args {
			if !a.Static() {
				return out
			}
			vals = append(vals, a.Val)
		}
		out.text = strings.ReplaceAll(strings.Join(vals, " "), `\n`, "\n")
		out.hasText = true
	case "cat", "tee":
		if c.Name == "cat" && len(args) > 0 {
			return out
		}
		out.text, out.hasText, out.items = in.text, in.hasText, in.items
	case "find":
		roots, filtered := FindRoots(args)
		for _, r := range roots {
			if filtered {
				r = Word{Src: r.Src, Val: strings.TrimSuffix(r.Val, "/") + "/{}", Glob: -1, Split: r.Split}
			}
			out.items = append(out.items, r)
		}
		if out.items == nil {
			out.items = []Word{}
		}
	}
	return out
}

// ---- words ----

// word evaluates a word as far as it can be known without running anything.
func (p *part) word(w *syntax.Word) Word {
	if w == nil {
		return Word{Glob: -1}
	}
	out := Word{Src: p.slice(w), Glob: -1}
	var b strings.Builder
	for i, part := range w.Parts {
		switch x := part.(type) {
		case *syntax.Lit:
			v := x.Value
			if i == 0 && strings.HasPrefix(v, "~") {
				// ~ and ~/x are expanded later; ~user cannot be known.
				if rest := v[1:]; rest != "" && !strings.HasPrefix(rest, "/") {
					b.WriteString(Unknown)
					out.Split = false
					continue
				}
			}
			for j := 0; j < len(v); j++ {
				c := v[j]
				switch {
				case c == '\\' && j+1 < len(v):
					j++
					if v[j] != '\n' {
						b.WriteByte(v[j])
					}
				case c == '*' || c == '?' || c == '[':
					if out.Glob < 0 {
						out.Glob = b.Len()
					}
					b.WriteByte(c)
				default:
					b.WriteByte(c)
				}
			}
		case *syntax.SglQuoted:
			if x.Dollar {
				v, ok := ansiC(x.Value)
				if !ok {
					b.WriteString(Unknown)
					continue
				}
				b.WriteString(v)
				continue
			}
			b.WriteString(x.Value)
		case *syntax.DblQuoted:
			for _, q := range x.Parts {
				switch y := q.(type) {
				case *syntax.Lit:
					b.WriteString(UnescapeDouble(y.Value))
				case *syntax.ParamExp:
					b.WriteString(p.param(y, false, &out))
				case *syntax.CmdSubst:
					v, _ := p.substValue(y)
					b.WriteString(v)
				default:
					b.WriteString(Unknown)
				}
			}
		case *syntax.ParamExp:
			b.WriteString(p.param(x, true, &out))
		case *syntax.ProcSubst:
			b.WriteString("/dev/fd/63")
		case *syntax.ExtGlob:
			if out.Glob < 0 {
				out.Glob = b.Len()
			}
			b.WriteString(p.slice(x))
		case *syntax.CmdSubst:
			v, known := p.substValue(x)
			b.WriteString(v)
			out.Split = out.Split || !known
		default: // $((...)), brace expansions
			b.WriteString(Unknown)
			out.Split = true
		}
	}
	out.Val = b.String()
	if !out.Static() {
		out.script = p.scriptText(w)
	}
	return out
}

// maxBraceWords bounds the words one brace expansion is followed into.
const maxBraceWords = 256

// braces evaluates a word after brace expansion: {rm,-rf,/} is three words.
func (p *part) braces(w *syntax.Word) []Word {
	src := p.slice(w)
	if !strings.Contains(src, "{") {
		return []Word{p.word(w)}
	}
	cp := &syntax.Word{Parts: slices.Clone(w.Parts)}
	if !syntax.SplitBraces(cp) {
		return []Word{p.word(w)}
	}
	var out []Word
	for ew, err := range expand.BracesSeq(nil, cp) {
		if err != nil || len(out) == maxBraceWords {
			return []Word{{Src: src, Val: Unknown, Glob: -1, Split: true}}
		}
		x := p.word(ew)
		x.Src = src
		out = append(out, x)
	}
	return out
}

// substValue is what a command substitution prints, when it can be told:
// $(pwd), $(echo WORD), and $(find ROOT ...), which prints paths under ROOT
// (ROOT itself unless it selects by name). Else it is unknown.
func (p *part) substValue(cs *syntax.CmdSubst) (string, bool) {
	if len(cs.Stmts) != 1 || len(cs.Stmts[0].Redirs) > 0 {
		return Unknown, false
	}
	ce, ok := cs.Stmts[0].Cmd.(*syntax.CallExpr)
	if !ok || len(ce.Assigns) > 0 {
		return Unknown, false
	}
	words := make([]Word, len(ce.Args))
	for i, w := range ce.Args {
		words[i] = p.word(w)
	}
	argv, info := StripWrappers(words)
	if len(argv) == 0 || !argv[0].Static() || info.cwd != nil || info.script != nil || !allStatic(argv) {
		return Unknown, false
	}
	args := argv[1:]
	switch path.Base(argv[0].Val) {
	case "pwd":
		if len(p.here) == 1 && path.IsAbs(p.here[0]) {
			return p.here[0], true
		}
	case "echo":
		if len(args) == 1 && !strings.HasPrefix(args[0].Val, "-") && !strings.ContainsAny(args[0].Val, " \t\n*?[") {
			return args[0].Val, true
		}
	case "find":
		roots, filtered := FindRoots(args)
		if r := roots[0].Val; len(roots) == 1 && !strings.HasPrefix(r, "-") && roots[0].Glob < 0 && !strings.ContainsAny(r, " \t\n") {
			if filtered {
				return strings.TrimSuffix(r, "/") + "/{}", true
			}
			return r, true
		}
	}
	return Unknown, false
}

// param is the value of a parameter expansion: $HOME and variables set once
// in the line to a known value; else unknown.
func (p *part) param(x *syntax.ParamExp, unquoted bool, w *Word) string {
	if plainParam(x) {
		name := x.Param.Value
		if v, ok := p.r.vars[name]; ok && v != nil && !(unquoted && strings.ContainsAny(v.Val, " \t\n*?[")) {
			return v.Val
		}
		if _, set := p.r.vars[name]; !set && name == "HOME" && p.r.env.Home != "" {
			return p.r.env.Home
		}
		if _, set := p.r.vars[name]; !set && name == "PWD" && len(p.here) == 1 && path.IsAbs(p.here[0]) {
			return p.here[0]
		}
	}
	if unquoted || multiWord(x) {
		// "$@" and "${a[@]}" are as many words as they hold, quoted or
		// not: options, a command and its arguments.
		w.Split = true
	}
	return Unknown
}

// multiWord reports whether a parameter expansion makes several words
// even when quoted: $@, ${a[@]}, ${!prefix@}.
func multiWord(x *syntax.ParamExp) bool {
	if x.Param != nil && x.Param.Value == "@" {
		return true
	}
	if x.Index != nil {
		if w, ok := x.Index.(*syntax.Word); ok && len(w.Parts) == 1 {
			if l, ok := w.Parts[0].(*syntax.Lit); ok && l.Value == "@" {
				return true
			}
		}
	}
	return x.Names == syntax.NamesPrefixWords
}

// fields returns the words an unquoted $x splits into, when x was set in
// the line to a known value.
func (p *part) fields(w *syntax.Word) ([]string, bool) {
	if len(w.Parts) != 1 {
		return nil, false
	}
	x, ok := w.Parts[0].(*syntax.ParamExp)
	if !ok || !plainParam(x) {
		return nil, false
	}
	v := p.r.vars[x.Param.Value]
	if v == nil || strings.ContainsAny(v.Val, "*?[") {
		return nil, false
	}
	return strings.Fields(v.Val), true
}

func plainParam(x *syntax.ParamExp) bool {
	return x.Param != nil && !x.Excl && !x.Length && !x.Width && x.Index == nil && x.Slice == nil &&
		x.Repl == nil && x.Exp == nil && x.NestedParam == nil && len(x.Modifiers) == 0 && x.Names == 0
}

func UnescapeDouble(v string) string {
	if !strings.Contains(v, `\`) {
		return v
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] == '\\' && i+1 < len(v) && strings.IndexByte("$`\"\\\n", v[i+1]) >= 0 {
			i++
			if v[i] != '\n' {
				b.WriteByte(v[i])
			}
			continue
		}
		b.WriteByte(v[i])
	}
	return b.String()
}

// ansiC decodes the common escapes of $'...'.
func ansiC(v string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c != '\\' || i+1 >= len(v) {
			b.WriteByte(c)
			continue
		}
		i++
		switch e := v[i]; e {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case '\\', '\'', '"', '?':
			b.WriteByte(e)
		case 'x':
			n, k := 0, 0
			for k < 2 && i+1 < len(v) && isHex(v[i+1]) {
				i++
				n = n*16 + hexVal(v[i])
				k++
			}
			if k == 0 {
				return "", false
			}
			b.WriteByte(byte(n))
		case '0', '1', '2', '3', '4', '5', '6', '7':
			n := int(e - '0')
			for k := 0; k < 2 && i+1 < len(v) && v[i+1] >= '0' && v[i+1] <= '7'; k++ {
				i++
				n = n*8 + int(v[i]-'0')
			}
			b.WriteByte(byte(n))
		default:
			return "", false
		}
	}
	return b.String(), true
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func hexVal(c byte) int {
	switch {
	case c >= 'a':
		return int(c-'a') + 10
	case c >= 'A':
		return int(c-'A') + 10
	}
	return int(c - '0')
}

// scriptText is the script a word hands to a shell (sh -c WORD, eval
// WORD): its value, with the parts that cannot be known kept as written so
// that the nested reading sees them as unknown too.
func (p *part) scriptText(w *syntax.Word) string {
	if w == nil {
		return ""
	}
	var b strings.Builder
	for _, part := range w.Parts {
		switch x := part.(type) {
		case *syntax.Lit:
			b.WriteString(unescapeUnquoted(x.Value))
		case *syntax.SglQuoted:
			if v, ok := ansiC(x.Value); x.Dollar && ok {
				b.WriteString(v)
			} else {
				b.WriteString(x.Value)
			}
		case *syntax.DblQuoted:
			for _, q := range x.Parts {
				if l, ok := q.(*syntax.Lit); ok {
					b.WriteString(UnescapeDouble(l.Value))
				} else {
					b.WriteString(p.paramScript(q))
				}
			}
		default:
			b.WriteString(p.paramScript(part))
		}
	}
	return b.String()
}

// paramScript is a word part in a script: a variable set in the line to a
// known value is that value, anything else stays as written.
func (p *part) paramScript(part syntax.WordPart) string {
	if x, ok := part.(*syntax.ParamExp); ok && plainParam(x) {
		if v := p.r.vars[x.Param.Value]; v != nil {
			return v.Val
		}
	}
	return p.slice(part)
}

// scriptOf is the script of a word already evaluated.
func (p *part) scriptOf(w Word) string {
	if w.Static() {
		return w.Val
	}
	if w.script != "" {
		return w.script
	}
	// A word the reader made (what xargs reads, put in for {}): its
	// unknown parts are a variable of the script, not text as written.
	return strings.ReplaceAll(w.Val, Unknown, "${__tai_unknown}")
}

// rawText is a heredoc's body as written.
func (p *part) rawText(w *syntax.Word) string {
	var b strings.Builder
	for _, part := range w.Parts {
		if l, ok := part.(*syntax.Lit); ok {
			b.WriteString(l.Value)
		} else {
			b.WriteString(p.slice(part))
		}
	}
	return b.String()
}

func unescapeUnquoted(v string) string {
	if !strings.Contains(v, `\`) {
		return v
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] == '\\' && i+1 < len(v) {
			i++
			if v[i] != '\n' {
				b.WriteByte(v[i])
			}
			continue
		}
		b.WriteByte(v[i])
	}
	return b.String()
}

func wordsText(ws []Word) string {
	parts := make([]string, len(ws))
	for i, w := range ws {
		parts[i] = w.Text()
	}
	return Collapse(strings.Join(parts, " "))
}

// Collapse trims s and turns every run of white space into one space.
func Collapse(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// ---- wrappers ----

// wrapperSpec says how a wrapper's own options and arguments are laid out.
type wrapperSpec struct {
	argOpts  string   // short options that take an argument
	longArgs []string // long options that take an argument (without "=")
	skip     int      // positional arguments before the command (timeout's duration)
	long     []string // all its long options (without "--"), for abbreviations as getopt_long reads them
}

// wrapperSpecs are the programs that run the command following them, by
// name. Built on first use: most starts of the tai binary (tai, its
// launcher, the built-in agent) analyse no command.
var wrapperSpecs = sync.OnceValue(func() map[string]wrapperSpec {
	return map[string]wrapperSpec{
		"sudo": {argOpts: "ugCDhpRrTt", longArgs: []string{"--user", "--group", "--chdir", "--close-from", "--host", "--prompt", "--role", "--type", "--other-user", "--command-timeout"},
			long: []string{"askpass", "background", "bell", "close-from", "chdir", "preserve-env", "edit", "group", "set-home", "help", "host", "login",
				"remove-timestamp", "reset-timestamp", "list", "non-interactive", "preserve-groups", "prompt", "chroot", "role", "stdin", "shell", "type",
				"command-timeout", "other-user", "user", "version", "validate"}},
		"doas": {argOpts: "uC"},
		"env": {argOpts: "uCPS", longArgs: []string{"--unset", "--chdir", "--split-string"},
			long: []string{"ignore-environment", "null", "unset", "chdir", "split-string", "block-signal", "default-signal", "ignore-signal",
				"list-signal-handling", "debug", "help", "version"}},
		"nohup":   {},
		"time":    {argOpts: "fo", longArgs: []string{"--format", "--output"}},
		"exec":    {argOpts: "a"},
		"command": {},
		"builtin": {},
		"nice":    {argOpts: "n", longArgs: []string{"--adjustment"}, long: []string{"adjustment", "help", "version"}},
		"ionice":  {argOpts: "cnpP", longArgs: []string{"--class", "--classdata", "--pid", "--pgid", "--uid"}},
		"stdbuf":  {argOpts: "ioe", longArgs: []string{"--input", "--output", "--error"}, long: []string{"input", "output", "error", "help", "version"}},
		"timeout": {argOpts: "sk", longArgs: []string{"--signal", "--kill-after"}, skip: 1,
			long: []string{"preserve-status", "foreground", "kill-after", "signal", "verbose", "help", "version"}},
		"chroot":      {longArgs: []string{"--userspec", "--groups"}, skip: 1},
		"setsid":      {long: []string{"ctty", "fork", "wait", "help", "version"}},
		"caffeinate":  {argOpts: "tw"},
		"busybox":     {},
		"toybox":      {},
		"unbuffer":    {},
		"strace":      {argOpts: "eoOpsSuUaXPIbE"},
		"ltrace":      {argOpts: "eonpsSuaAD"},
		"torsocks":    {argOpts: "uapP"},
		"proxychains": {argOpts: "f"},
		"nocorrect":   {},
		"noglob":      {},
		"flock": {argOpts: "wEc", longArgs: []string{"--timeout", "--conflict-exit-code", "--command"}, skip: 1,
			long: []string{"shared", "exclusive", "unlock", "nonblock", "nb", "timeout", "wait", "conflict-exit-code", "close", "command", "no-fork", "fcntl", "verbose", "help", "version"}},
		"taskset": {skip: 1},
		"chrt":    {argOpts: "T", skip: 1},
		"unshare": {argOpts: "SGRw", longArgs: []string{"--setuid", "--setgid", "--root", "--wd"}},
		"runuser": {argOpts: "ugc", longArgs: []string{"--user", "--group", "--command"}},
		"su": {argOpts: "cgGsw", longArgs: []string{"--command", "--group", "--supp-group", "--shell", "--session-command", "--whitelist-environment"},
			long: []string{"command", "session-command", "fast", "group", "supp-group", "login", "preserve-environment", "pty", "shell", "whitelist-environment", "help", "version"}},
		"watch": {argOpts: "nqd", longArgs: []string{"--interval", "--differences"},
			long: []string{"beep", "color", "no-color", "differences", "errexit", "chgexit", "equexit", "interval", "precise", "no-title", "no-wrap", "exec", "help", "version"}},
		"script": {argOpts: "cEIOTBm", longArgs: []string{"--command", "--log-in", "--log-out", "--log-timing", "--echo", "--log-io", "--logging-format", "--output-limit"},
			long: []string{"append", "command", "echo", "log-in", "log-out", "log-io", "log-timing", "logging-format", "output-limit", "return", "flush", "force", "quiet", "timing", "help", "version"}},
	}
})

// wrapInfo is what the wrappers stripped from a command said.
type wrapInfo struct {
	cwd    *Word // env -C DIR, sudo -D DIR
	script *Word // env -S, su -c, flock -c, runuser -c, script -c, watch's command
	root   bool  // it runs its command as another user (sudo, su, doas): a shell it starts reading the terminal runs what the floor cannot see
}

// StripWrappers returns the command words without variable assignments and
// wrappers (sudo -u root FOO=1 rm -rf / is rm -rf /).
func StripWrappers(w []Word) ([]Word, wrapInfo) {
	var info wrapInfo
	for len(w) > 0 {
		first := w[0]
		if !first.Static() {
			return w, info
		}
		if isAssignment(first.Val) {
			w = w[1:]
			continue
		}
		name := path.Base(first.Val)
		spec, ok := wrapperSpecs()[name]
		if !ok {
			return w, info
		}
		w = w[1:]
		info.root = info.root || name == "sudo" || name == "doas" || name == "su" || name == "runuser"
		shellFlag := false // sudo -s, sudo -i, doas -s: a shell, not a command
		for len(w) > 0 && w[0].Static() && strings.HasPrefix(w[0].Val, "-") && w[0].Val != "-" {
			opt := w[0].Val
			w = w[1:]
			if opt == "--" {
				break
			}
			var arg *Word
			if strings.HasPrefix(opt, "--") {
				key, val, hasVal := strings.Cut(opt, "=")
				// An abbreviation, read as getopt_long does (sudo --sh).
				if full := LongOpts(key[2:], spec.long); len(full) == 1 {
					key = "--" + full[0]
				}
				shellFlag = shellFlag || name == "sudo" && (key == "--shell" || key == "--login")
				if hasVal {
					a := Lit(val)
					arg = &a
				} else if slices.Contains(spec.longArgs, key) && len(w) > 0 {
					a := w[0]
					arg, w = &a, w[1:]
				}
				opt = key
			} else if len(opt) >= 2 {
				// A cluster: the first option taking an argument ends it.
				for i := 1; i < len(opt); i++ {
					if strings.IndexByte(spec.argOpts, opt[i]) < 0 {
						shellFlag = shellFlag || (name == "sudo" && (opt[i] == 's' || opt[i] == 'i')) || (name == "doas" && opt[i] == 's')
						continue
					}
					if i+1 < len(opt) {
						a := Lit(opt[i+1:])
						arg = &a
					} else if len(w) > 0 {
						a := w[0]
						arg, w = &a, w[1:]
					}
					opt = opt[:i+1]
					break
				}
			}
			if arg == nil {
				continue
			}
			last := opt[len(opt)-1]
			switch {
			case (name == "env" && (last == 'C' || opt == "--chdir")) || (name == "sudo" && (last == 'D' || opt == "--chdir")) ||
				(name == "unshare" && (last == 'w' || opt == "--wd")):
				info.cwd = arg
			case name == "env" && (last == 'S' || opt == "--split-string"),
				(name == "su" || name == "runuser" || name == "flock" || name == "script") && (last == 'c' || opt == "--command"):
				info.script = arg
			}
		}
		if name == "env" {
			for len(w) > 0 && w[0].Static() && isAssignment(w[0].Val) {
				w = w[1:]
			}
		}
		for i := 0; i < spec.skip && len(w) > 0; i++ {
			w = w[1:]
		}
		if shellFlag && len(w) == 0 {
			// sudo -s alone starts the user's shell, reading its input.
			return []Word{Lit("sh")}, info
		}
		if name == "su" || name == "flock" {
			// su [user] -c CMD, flock FILE -c CMD: the command is a script;
			// su without one starts a shell that reads the terminal.
			for i := 0; i+1 < len(w); i++ {
				if v := w[i].Val; v == "-c" || v == "--command" {
					s := w[i+1]
					info.script = &s
				}
			}
			if info.script != nil {
				return nil, info
			}
			if name == "su" {
				return []Word{Lit("sh")}, info // a shell, reading its input
			}
		}
		if info.script != nil && (name == "su" || name == "runuser" || name == "script") {
			return nil, info
		}
		if name == "watch" && len(w) > 0 {
			// watch runs its arguments through sh -c.
			s := Lit(wordsText(w))
			if !allStatic(w) {
				s.Val = wordsText(w) + Unknown
			}
			info.script = &s
			return nil, info
		}
	}
	return w, info
}

func allStatic(ws []Word) bool {
	for _, w := range ws {
		if !w.Static() {
			return false
		}
	}
	return true
}

func isAssignment(w string) bool {
	eq := strings.IndexByte(w, '=')
	if eq <= 0 {
		return false
	}
	for i := 0; i < eq; i++ {
		c := w[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// isGitCommandKey reports whether s is a git setting whose value is a
// command git runs.
func isGitCommandKey(s string) bool {
	switch s {
	case "core.pager", "core.editor", "core.sshcommand", "core.fsmonitor", "sequence.editor",
		"diff.external", "gpg.program", "credential.helper":
		return true
	}
	return false
}

// IsShell reports whether s is a shell: a program whose -c argument is a
// command line, and which runs what is piped into it.
func IsShell(s string) bool {
	switch s {
	case "sh", "bash", "zsh", "dash", "ksh", "fish", "ash", "mksh", "csh", "tcsh", "yash", "posh", "rbash":
		return true
	}
	return false
}

// ScriptArgs reads a shell's arguments: the script of -c (any flag cluster
// holding c, like -lc), else the script file, else whether it reads its
// script from standard input.
func ScriptArgs(args []Word) (script, file *Word, readsStdin bool) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !a.Static() {
			return nil, &a, false
		}
		v := a.Val
		switch {
		case v == "--" || v == "-":
			if i+1 < len(args) && v == "--" {
				f := args[i+1]
				return nil, &f, false
			}
			return nil, nil, true
		case v == "-o" || v == "+o" || v == "-O" || v == "+O" || v == "--rcfile" || v == "--init-file":
			i++
		case strings.HasPrefix(v, "--"):
		case strings.HasPrefix(v, "-") || strings.HasPrefix(v, "+"):
			if strings.Contains(v[1:], "c") {
				j := i + 1
				if j < len(args) && args[j].Val == "--" {
					j++ // bash -c -- SCRIPT
				}
				if j < len(args) {
					s := args[j]
					return &s, nil, false
				}
				return nil, nil, false
			}
			if strings.Contains(v[1:], "s") {
				return nil, nil, true
			}
		default:
			return nil, &a, false
		}
	}
	return nil, nil, true
}

// xargsArgs returns the command xargs runs and its replace string (-I).
func xargsArgs(args []Word) (inner []Word, repl string) {
	for len(args) > 0 && args[0].Static() && strings.HasPrefix(args[0].Val, "-") && args[0].Val != "-" {
		a := args[0].Val
		args = args[1:]
		switch {
		case a == "--":
			return args, repl
		case a == "-i" || a == "--replace":
			repl = "{}"
		case strings.HasPrefix(a, "-i"):
			repl = a[2:]
		case strings.HasPrefix(a, "--replace="):
			repl = strings.TrimPrefix(a, "--replace=")
		case a == "-I" && len(args) > 0:
			repl, args = args[0].Val, args[1:]
		case strings.HasPrefix(a, "-I"):
			repl = a[2:]
		case strings.HasPrefix(a, "--"):
			if !strings.Contains(a, "=") && slices.Contains([]string{"--arg-file", "--delimiter", "--eof", "--max-lines", "--max-args", "--max-procs", "--max-chars", "--process-slot-var"}, a) && len(args) > 0 {
				args = args[1:]
			}
		case len(a) == 2 && strings.IndexByte("adEeLlnPs", a[1]) >= 0 && len(args) > 0:
			args = args[1:]
		}
	}
	return args, repl
}

// findExec is a command find runs: as written, and with {} standing for
// the paths find walks.
type findExec struct{ written, run []Word }

// findExecs returns the commands of find's -exec, -execdir, -ok and
// -okdir.
func findExecs(args []Word) []findExec {
	roots, filtered := FindRoots(args)
	if len(roots)*len(args) > maxExpandedWords {
		roots = []Word{{Src: "(find roots)", Val: Unknown, Glob: -1}}
	}
	var out []findExec
	for i := 0; i < len(args); i++ {
		switch args[i].Val {
		case "-exec", "-execdir", "-ok", "-okdir":
		default:
			continue
		}
		var cmd []Word
		j := i + 1
		for ; j < len(args); j++ {
			if v := args[j].Val; v == ";" || v == "+" && j > i+1 && args[j-1].Val == "{}" {
				break
			}
			if args[j].Val == "{}" {
				for _, r := range roots {
					if filtered {
						r = Word{Src: r.Src, Val: strings.TrimSuffix(r.Val, "/") + "/{}", Glob: -1, Split: r.Split}
					}
					cmd = append(cmd, r)
				}
				continue
			}
			cmd = append(cmd, args[j])
		}
		if len(cmd) > 0 {
			out = append(out, findExec{written: args[i+1 : j], run: cmd})
		}
		i = j
	}
	return out
}

// IsNameFilter reports whether s is a find predicate that selects files
// by name or path.
func IsNameFilter(s string) bool {
	switch s {
	case "-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename", "-regex", "-iregex":
		return true
	}
	return false
}

// FindRoots returns the paths find starts from, and whether its predicates
// select by name (so that it does not act on the roots themselves).
func FindRoots(args []Word) (roots []Word, filtered bool) {
	i := 0
	for ; i < len(args); i++ {
		a := args[i].Val
		if a == "-H" || a == "-L" || a == "-P" || strings.HasPrefix(a, "-O") || strings.HasPrefix(a, "-D") {
			continue
		}
		if strings.HasPrefix(a, "-") || a == "(" || a == "!" || a == "," {
			break
		}
		roots = append(roots, args[i])
	}
	for ; i < len(args); i++ {
		if IsNameFilter(args[i].Val) || args[i].Val == "-mindepth" {
			filtered = true
		}
		if v := args[i].Val; v == "-exec" || v == "-execdir" || v == "-ok" || v == "-okdir" {
			break // the rest is the command
		}
	}
	if len(roots) == 0 {
		roots = []Word{Lit(".")}
	}
	return roots, filtered
}

// isFetcher reports whether s downloads from the network, or decodes a
// blob: what it writes is a program nobody has read.
func isFetcher(s string) bool {
	switch s {
	case "base64", "base32", "basenc", "xxd", "uudecode", "openssl", "zcat", "gunzip", "bzcat", "xzcat",
		"zstdcat", "curl", "wget", "fetch", "aria2c", "http", "https", "xh", "xhs", "lwp-request", "GET",
		"lynx", "w3m", "nc", "ncat", "netcat", "socat", "curlie", "httpie", "wcurl":
		return true
	}
	return false
}

// ---- interpreters ----

// Interpreter returns the family of an Interpreter's name ("python",
// "perl", ...), or "".
func Interpreter(name string) string {
	switch {
	case strings.HasPrefix(name, "python"), strings.HasPrefix(name, "pypy"):
		return "python"
	case strings.HasPrefix(name, "perl"):
		return "perl"
	case name == "ruby" || name == "jruby" || name == "truffleruby":
		return "ruby"
	case name == "node" || name == "nodejs" || name == "bun" || name == "deno" || name == "tsx" || name == "ts-node":
		return "node"
	case strings.HasPrefix(name, "php"):
		return "php"
	case strings.HasPrefix(name, "lua"):
		return "lua"
	case name == "awk" || name == "gawk" || name == "mawk" || name == "nawk":
		return "awk"
	case name == "Rscript" || name == "tclsh" || name == "wish" || name == "osascript" || name == "pwsh" || name == "powershell" || name == "elixir" || name == "julia":
		return "other"
	}
	return ""
}

// InterpreterCode returns the program text an interpreter is given on its
// command line, and whether it reads its program from standard input.
func InterpreterCode(family string, args []Word) (code []Word, readsStdin bool) {
	codeOpts := map[string]string{"python": "c", "perl": "eE", "ruby": "e", "node": "ep", "php": "rR", "lua": "e", "other": "ec"}[family]
	argOpts := map[string]string{"python": "mWXQ", "perl": "IMm", "ruby": "IrCEFxKT", "node": "r", "php": "cdzfFtb", "lua": "l", "awk": "vFf", "other": ""}[family]
	script := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !a.Static() {
			if family == "awk" && !script {
				return append(code, a), false
			}
			script = true
			continue
		}
		v := a.Val
		switch {
		case family == "node" && (v == "--eval" || v == "--print" || v == "eval") && i+1 < len(args):
			code = append(code, args[i+1])
			i++
		case family == "node" && (strings.HasPrefix(v, "--eval=") || strings.HasPrefix(v, "--print=")):
			_, c, _ := strings.Cut(v, "=")
			code = append(code, Lit(c))
		case v == "-":
			return code, len(code) == 0
		case v == "--":
			if i+1 < len(args) {
				script = true
			}
			i = len(args)
		case strings.HasPrefix(v, "--"):
		case strings.HasPrefix(v, "-") && len(v) > 1:
			for k := 1; k < len(v); k++ {
				if strings.IndexByte(codeOpts, v[k]) >= 0 {
					if k+1 < len(v) {
						code = append(code, Lit(v[k+1:]))
					} else if i+1 < len(args) {
						code = append(code, args[i+1])
						i++
					}
					break
				}
				if strings.IndexByte(argOpts, v[k]) >= 0 {
					if k+1 == len(v) {
						i++
					}
					break
				}
			}
		default:
			if family == "awk" && len(code) == 0 {
				return append(code, a), false
			}
			script = true
			i = len(args)
		}
		if family == "python" && len(code) > 0 {
			break // python's -c ends its options
		}
	}
	return code, len(code) == 0 && !script
}

// ---- lines that do not parse ----

// guess reads src, which did not parse (or is nested too deep), at its most
// dangerous: quotes are dropped, every operator splits, and every word may
// start a command.
func (r *reader) guess(src string, cwds []string, depth int) {
	r.line.OK = false
	if strings.Contains(src, "cd") || strings.Contains(src, "pushd") {
		// A cd may have gone anywhere.
		cwds = union(cwds, []string{CwdUnknown})
	}
	// Two readings: a substitution's text as commands of their own, and
	// the substitution as an unknown word of the command around it.
	var pieces []string
	for _, repl := range guessReadings {
		pieces = append(pieces, strings.FieldsFunc(repl.Replace(src), func(c rune) bool { return strings.ContainsRune(";&|()<>\n{}", c) })...)
	}
	codeSeen := false
	for _, piece := range pieces {
		var words []Word
		// Commas split too: {rm,-rf,/} may be a brace expansion.
		for _, f := range strings.FieldsFunc(piece, func(c rune) bool { return c == ',' || unicode.IsSpace(c) }) {
			if f == "--" {
				continue // so that no option is read as a path
			}
			w := Lit(f)
			w.Glob = strings.IndexAny(f, "*?[")
			if strings.Contains(f, "$") {
				w.Val, w.Split = Unknown, true
			}
			words = append(words, w)
		}
		seen := map[string]bool{}
		others := 0
		for i := range words {
			argv, info := StripWrappers(words[i:])
			c := &Cmd{Argv: argv, Depth: depth, Cwds: cwds, Guess: true}
			if len(argv) > 0 && argv[0].Static() {
				c.Name = path.Base(argv[0].Val)
			}
			if i < guessTexts {
				// Rules look at the piece and at the commands its first
				// words may start.
				c.Norm = wordsText(argv)
				c.Text = c.Norm
				if i == 0 {
					c.Text = Collapse(piece)
				}
			} else {
				// Further on, only what the floor looks at: the first
				// rm, mv or chmod of a piece reads all that follows it
				// (a later one reads less), others up to a bound.
				switch {
				case info.script == nil && len(argv) > 0 && argv[0].Static() && r.env.Watched != nil && !r.env.Watched(c.Name):
					continue
				case isSupersetName(c.Name):
					if seen[c.Name] {
						continue
					}
					seen[c.Name] = true
				default:
					if others++; others > guessTexts {
						continue
					}
				}
			}
			if Interpreter(c.Name) != "" && !codeSeen {
				// Its program cannot be told apart from the rest: all
				// of the text, quotes kept, is read as its program.
				c.Code = append(c.Code, src)
				codeSeen = true
			}
			if info.script != nil {
				c.Code = append(c.Code, info.script.Val)
			}
			r.line.Cmds = append(r.line.Cmds, c)
			if c.Name == "xargs" && len(argv) > 1 {
				// What xargs reads is one more argument, not known.
				inner, _ := xargsArgs(argv[1:])
				inner = append(slices.Clone(inner), Word{Src: "(xargs input)", Val: Unknown, Glob: -1})
				x := &Cmd{Argv: inner, Depth: depth, Cwds: cwds, Guess: true}
				if inner[0].Static() {
					x.Name = path.Base(inner[0].Val)
				}
				r.line.Cmds = append(r.line.Cmds, x)
			}
		}
	}
}

var guessReadings = []*strings.Replacer{
	strings.NewReplacer("'", " ", "\"", " ", "\\", "", "`", ";", "$(", ";", "<(", ";", ">(", ";"),
	strings.NewReplacer("'", " ", "\"", " ", "\\", "", "`", " $ ", "$(", " $ ", "<(", " $ ", ">(", " $ ", "(", " ", ")", " "),
}

// guessTexts bounds the commands read per piece of a line that does not
// parse, beyond those the floor must see.
const guessTexts = 32

// isSupersetName reports whether s is one of the floor's commands whose
// first occurrence in a piece, read with all that follows it, covers every
// later one.
func isSupersetName(s string) bool {
	switch s {
	case "rm", "mv", "chmod", "chown", "chgrp":
		return true
	}
	return false
}

// HasOutputRedirect reports whether a simple command writes to a file with
// >, >> or &> outside quotes. Redirections to /dev/null and between file
// descriptors (2>&1) do not count.
func HasOutputRedirect(s string) bool {
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
			continue
		case c == '\\':
			i++
			continue
		case c == '\'' || c == '"':
			quote = c
			continue
		case c != '>':
			continue
		}
		if i+1 < len(s) && s[i+1] == '(' { // >(...) is a substitution
			continue
		}
		j := i + 1
		for j < len(s) && (s[j] == '>' || s[j] == '|') {
			j++
		}
		if j < len(s) && s[j] == '&' { // >&2
			j++
			k := j
			for k < len(s) && (s[k] >= '0' && s[k] <= '9' || s[k] == '-') {
				k++
			}
			if k > j {
				i = k - 1
				continue
			}
		}
		for j < len(s) && s[j] == ' ' {
			j++
		}
		if end := j + len("/dev/null"); strings.HasPrefix(s[j:], "/dev/null") && (end == len(s) || strings.IndexByte(" \t;&|)", s[end]) >= 0) {
			i = end - 1
			continue
		}
		return true
	}
	return false
}
