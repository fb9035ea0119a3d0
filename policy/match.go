package policy

import (
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/internal/lazyre"
	"github.com/tai-dev/tai/policy/shell"
)

// ---- patterns ----

// pathPattern is a path glob: relative ones match workspace-relative paths
// inside the workspace, absolute ones (and ~/...) match absolute paths
// anywhere. "**" matches any number of directories; a pattern without a "/"
// matches the base name at any depth, like .gitignore.
type pathPattern struct {
	src  string
	abs  bool
	segs []string
}

func compilePathPattern(s, home string) (pathPattern, error) {
	p := pathPattern{src: s}
	s = strings.TrimSpace(s)
	if s == "" {
		return p, fmt.Errorf("empty path pattern")
	}
	if strings.Contains(s, `\`) {
		s = filepath.ToSlash(s)
	}
	switch {
	case s == "~" || strings.HasPrefix(s, "~/"):
		if home == "" {
			return p, fmt.Errorf("path pattern %q: no home directory to expand ~ with", p.src)
		}
		s = filepath.ToSlash(home) + s[1:]
		p.abs = true
	case strings.HasPrefix(s, "/"):
		p.abs = true
	default:
		s = strings.TrimPrefix(s, "./")
		if strings.HasPrefix(s, "../") || s == ".." {
			return p, fmt.Errorf("path pattern %q leaves the workspace: use an absolute pattern or outside_workspace", p.src)
		}
		trimmed := strings.TrimSuffix(s, "/")
		anchored := strings.Contains(trimmed, "/")
		if trimmed != s {
			s = trimmed + "/**" // a directory: everything below it
		}
		if !anchored && !strings.HasPrefix(s, "**") {
			s = "**/" + s
		}
	}
	if p.abs && strings.HasSuffix(s, "/") && s != "/" {
		s += "**"
	}
	for _, seg := range strings.Split(strings.Trim(s, "/"), "/") {
		if seg == "" || seg == "." {
			continue
		}
		if _, err := path.Match(seg, ""); err != nil {
			return p, fmt.Errorf("path pattern %q: bad glob %q", p.src, seg)
		}
		p.segs = append(p.segs, seg)
	}
	return p, nil
}

// match matches one path of a request.
func (p pathPattern) match(f pathFact) bool {
	if p.abs {
		return f.abs != "" && matchSegs(p.segs, splitSlash(f.abs))
	}
	return f.inside && matchSegs(p.segs, splitSlash(f.rel))
}

func splitSlash(p string) []string {
	p = strings.Trim(filepath.ToSlash(p), "/")
	if p == "" || p == "." {
		return nil
	}
	return strings.Split(p, "/")
}

// matchSegs matches path segments against glob segments; "**" stands for
// zero or more segments.
func matchSegs(p, n []string) bool {
	for len(p) > 0 {
		if p[0] == "**" {
			for len(p) > 0 && p[0] == "**" {
				p = p[1:]
			}
			if len(p) == 0 {
				return true
			}
			for i := 0; i <= len(n); i++ {
				if matchSegs(p, n[i:]) {
					return true
				}
			}
			return false
		}
		if len(n) == 0 {
			return false
		}
		if ok, _ := path.Match(p[0], n[0]); !ok {
			return false
		}
		p, n = p[1:], n[1:]
	}
	return len(n) == 0
}

// textPattern matches commands, tool names, URLs and mode ids: a glob whose
// "*" matches anything (spaces and slashes too) and "?" one character, or,
// with the prefix "re:", a Go regular expression (unanchored; use ^ and $).
// A glob ending in " *" also matches the text without its arguments, so
// "go test *" matches "go test".
type textPattern struct {
	src  string
	re   *regexp.Regexp
	glob string
	fold bool
}

func compileTextPattern(s string, fold bool) (textPattern, error) {
	p := textPattern{src: s, fold: fold}
	if rest, ok := strings.CutPrefix(s, "re:"); ok {
		if fold {
			rest = "(?i)" + rest
		}
		re, err := regexp.Compile(rest)
		if err != nil {
			return p, fmt.Errorf("bad regular expression %q: %v", s, err)
		}
		p.re = re
		return p, nil
	}
	p.glob = shell.Collapse(s)
	if p.glob == "" {
		return p, fmt.Errorf("empty pattern")
	}
	if fold {
		p.glob = strings.ToLower(p.glob)
	}
	return p, nil
}

func (p textPattern) match(s string) bool {
	if p.re != nil {
		return p.re.MatchString(s)
	}
	s = shell.Collapse(s)
	if p.fold {
		s = strings.ToLower(s)
	}
	if wildMatch(p.glob, s) {
		return true
	}
	if base, ok := strings.CutSuffix(p.glob, " *"); ok {
		return wildMatch(base, s)
	}
	return false
}

// wildMatch matches s against a glob where "*" is any run of characters,
// "?" one character and a backslash quotes the next one.
func wildMatch(p, s string) bool {
	// Iterative with one backtrack point, as in classic wildcard matchers.
	starP, starS := -1, 0
	i, j := 0, 0
	for j < len(s) {
		if i < len(p) {
			switch c := p[i]; {
			case c == '*':
				starP, starS = i, j
				i++
				continue
			case c == '?':
				i, j = i+1, j+1
				continue
			case c == '\\' && i+1 < len(p):
				if p[i+1] == s[j] {
					i, j = i+2, j+1
					continue
				}
			case c == s[j]:
				i, j = i+1, j+1
				continue
			}
		}
		if starP < 0 {
			return false
		}
		starS++
		i, j = starP+1, starS
	}
	for i < len(p) && p[i] == '*' {
		i++
	}
	return i == len(p)
}

// ---- request facts ----

// facts is what rules look at, extracted once per request.
type facts struct {
	kind     string
	tool     string // the tool's name, else its title
	paths    []pathFact
	writes   bool          // it changes files: an edit, delete or move kind, or a diff
	command  string        // the command line, from raw_input (else the title)
	lines    []string      // every command line worth checking for a deny: command and the title's
	cwd      string        // the command's working directory, absolute; "" unknown
	shell    []*shell.Line // lines, as read by the shell parser
	allowSeg []string      // the simple commands an allow rule must all match
	denySeg  []string      // every simple command, as written and normalized
	url      string
	mode     string // switch_mode: the mode the session would move to
	target   string // switch_mode: the mode raw_input asks for
	planExit bool   // switch_mode: leaving plan mode
	// selfApproving: switch_mode to a mode in which the agent approves its
	// own requests (SelfApproving).
	selfApproving bool
	synthetic     bool // a request tai made up (CheckModeChange)
}

// pathFact is one path a request touches.
type pathFact struct {
	raw     string
	abs     string // cleaned absolute path; "" when relative and no workspace is known
	rel     string // slash-separated, relative to the workspace; valid when inside
	inside  bool   // inside the workspace (after symlinks)
	outside bool   // known to be outside the workspace
}

// knownKinds are the tool kinds rules may name.
var knownKinds = []string{
	kindRead, kindEdit, kindDelete, kindMove, kindSearch, kindExecute,
	kindThink, kindFetch, kindSwitchMode, kindOther,
}

// isWriteKind reports whether tool calls of kind s change files.
func isWriteKind(s string) bool {
	switch s {
	case kindEdit, kindDelete, kindMove:
		return true
	}
	return false
}

func normKind(k string) string {
	k = strings.ToLower(strings.TrimSpace(k))
	if slices.Contains(knownKinds, k) {
		return k
	}
	return kindOther
}

// rawFields decodes raw_input when it is a JSON object.
func rawFields(raw json.RawMessage) map[string]any {
	if len(raw) == 0 {
		return nil
	}
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	return m
}

func str(m map[string]any, keys ...string) string {
	for _, k := range keys {
		if s, ok := m[k].(string); ok && strings.TrimSpace(s) != "" {
			return s
		}
	}
	return ""
}

func strs(v any) ([]string, bool) {
	a, ok := v.([]any)
	if !ok {
		return nil, false
	}
	out := make([]string, 0, len(a))
	for _, x := range a {
		s, ok := x.(string)
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

// Command returns the command line a tool call runs: raw_input's command or
// cmd (a string, or an argv array; "sh -c SCRIPT" is unwrapped to SCRIPT,
// and an args array is appended); else, for an execute call, the text
// between backticks in the title, or the title. It returns "" when there is
// none.
func Command(tc driver.ToolCall) string {
	if c := rawCommand(rawFields(tc.RawInput)); c != "" {
		return c
	}
	return titleCommand(tc)
}

func rawCommand(m map[string]any) string {
	for _, k := range []string{"command", "cmd"} {
		switch v := m[k].(type) {
		case string:
			if strings.TrimSpace(v) == "" {
				continue
			}
			if args := driver.ArgStrings(m["args"]); len(args) > 0 {
				return joinArgv(append([]string{v}, args...))
			}
			if args, ok := m["args"].(string); ok && strings.TrimSpace(args) != "" {
				return v + " " + args // a line's second half: read as written
			}
			return v
		case []any:
			argv := driver.ArgStrings(v)
			if len(argv) == 0 {
				continue
			}
			if script, ok := argvScript(argv); ok {
				return script
			}
			return joinArgv(argv)
		}
	}
	return ""
}

// argvScript returns the script of an argv that is "sh -c SCRIPT" (any
// flag cluster holding c, like -lc). Arguments after SCRIPT are its $0, $1,
// ...: the script reads them as words it cannot know.
func argvScript(argv []string) (string, bool) {
	if !shell.IsShell(path.Base(argv[0])) {
		return "", false
	}
	words := make([]shell.Word, len(argv)-1)
	for i, a := range argv[1:] {
		words[i] = shell.Lit(a)
	}
	script, _, _ := shell.ScriptArgs(words)
	if script == nil {
		return "", false
	}
	return script.Val, true
}

// titleCommand is the command an execute call's title shows. Other kinds'
// titles hold paths and names between backticks, not commands.
func titleCommand(tc driver.ToolCall) string {
	if normKind(string(tc.Kind)) != kindExecute {
		return ""
	}
	t := strings.TrimSpace(tc.Title)
	if i, j := strings.IndexByte(t, '`'), strings.LastIndexByte(t, '`'); i >= 0 && j > i+1 {
		return strings.TrimSpace(t[i+1 : j])
	}
	for _, p := range []string{"Run ", "Running ", "Execute ", "$ "} {
		t = strings.TrimPrefix(t, p)
	}
	return t
}

// joinArgv renders argv as a shell command line.
func joinArgv(argv []string) string {
	parts := make([]string, len(argv))
	for i, a := range argv {
		if a == "" || strings.ContainsAny(a, " \t\n\"'\\$;&|<>*?()`#~{}[]!") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		parts[i] = a
	}
	return strings.Join(parts, " ")
}

var urlInText = lazyre.New(`https?://[^\s"'<>` + "`" + `]+`)

// rawPathKeys are raw_input fields holding the paths a file tool touches.
var rawPathKeys = []string{"path", "file_path", "filePath", "notebook_path", "old_path", "new_path", "source", "destination", "dest"}

// facts extracts what rules match on.
func (e *Engine) facts(req driver.PermissionRequest) *facts {
	tc := req.ToolCall
	raw := rawFields(tc.RawInput)
	f := &facts{kind: normKind(string(tc.Kind)), tool: tc.Name}
	if f.tool == "" {
		f.tool = tc.Title
	}

	// Paths: locations, diffs, and for file tools raw_input's path fields.
	seen := map[string]bool{}
	add := func(p string) {
		p = strings.TrimSpace(p)
		if p == "" || seen[p] || len(p) > 4096 || strings.ContainsAny(p, "\n\x00") {
			return
		}
		seen[p] = true
		f.paths = append(f.paths, e.ws.fact(p, ""))
	}
	for _, l := range tc.Locations {
		add(l.Path)
	}
	for _, c := range tc.Content {
		if c.Type == "diff" {
			add(c.Path)
			f.writes = true
		}
	}
	if f.kind != kindExecute && f.kind != kindFetch && f.kind != kindSwitchMode {
		for _, k := range rawPathKeys {
			if s, ok := raw[k].(string); ok {
				add(s)
			}
		}
		if ps, ok := strs(raw["paths"]); ok {
			for _, p := range ps {
				add(p)
			}
		}
	}
	f.writes = f.writes || isWriteKind(f.kind)

	// Commands.
	if cwd := str(raw, "cwd", "workdir", "working_directory", "workingDirectory", "dir", "directory"); cwd != "" {
		if !filepath.IsAbs(cwd) && e.ws.root != "" {
			cwd = filepath.Join(e.ws.root, cwd)
		}
		if filepath.IsAbs(cwd) {
			f.cwd = filepath.Clean(cwd)
		}
	}
	if f.cwd == "" {
		f.cwd = e.ws.root
	}
	f.command = rawCommand(raw)
	tcmd := titleCommand(tc)
	if f.command == "" {
		f.command = tcmd
	}
	if f.command != "" {
		f.lines = append(f.lines, f.command)
	}
	if tcmd != "" && tcmd != f.command {
		f.lines = append(f.lines, tcmd)
	}
	env := readEnv(e.ws.home, f.cwd)
	for _, l := range f.lines {
		sl := shell.Parse(l, env)
		f.shell = append(f.shell, sl)
		f.denySeg = append(f.denySeg, shell.Collapse(l))
		for _, c := range sl.Cmds {
			if c.Text != "" {
				f.denySeg = append(f.denySeg, c.Text)
			}
			if c.Norm != "" && c.Norm != c.Text {
				f.denySeg = append(f.denySeg, c.Norm)
			}
		}
	}
	if f.command != "" {
		f.allowSeg = allowSegments(f.shell[0])
	}

	// URL.
	f.url = str(raw, "url", "uri", "href")
	if f.url == "" {
		f.url = urlInText().FindString(tc.Title)
	}

	if f.kind == kindSwitchMode {
		e.switchFacts(req, raw, f)
	}
	return f
}

// allowSegments are the commands an allow rule must cover: every simple
// command, with shell wrappers (sh -c, eval) replaced by their scripts, so
// that an allow for "go test *" never lets "go test ./... && rm -rf x"
// through. A line that does not parse has none: no allow covers it.
func allowSegments(sl *shell.Line) []string {
	if !sl.OK {
		return nil
	}
	var out []string
	for _, c := range sl.Cmds {
		if c.Wrapper || c.Text == "" {
			continue
		}
		out = append(out, c.Text)
	}
	return out
}

// ---- the workspace ----

// workspace locates paths relative to the workspace root.
type workspace struct {
	root  string   // absolute and clean; "" when unknown
	real  string   // root with symlinks resolved
	extra []string // write roots: writes there are not "outside"
	roots []string // more workspace roots (--add-dir): inside, like root
	home  string
}

func newWorkspace(root, home string, extra []string) (workspace, error) {
	w := workspace{home: home}
	if root != "" {
		abs, err := filepath.Abs(root)
		if err != nil {
			return w, fmt.Errorf("workspace: %w", err)
		}
		w.root = filepath.Clean(abs)
		w.real = resolveExisting(w.root)
	}
	for _, x := range extra {
		x = shell.ExpandHome(x, home)
		if !filepath.IsAbs(x) {
			if w.root == "" {
				return w, fmt.Errorf("write root %q is relative and no workspace is known", x)
			}
			x = filepath.Join(w.root, x)
		}
		x = filepath.Clean(x)
		w.extra = append(w.extra, x)
		if r := resolveExisting(x); r != x {
			w.extra = append(w.extra, r)
		}
	}
	return w, nil
}

// fact places p, relative to cwd (else the workspace root).
func (w workspace) fact(p, cwd string) pathFact {
	f := pathFact{raw: p}
	p = filepath.FromSlash(p)
	if !filepath.IsAbs(p) {
		if cwd == "" {
			cwd = w.root
		}
		if cwd == "" {
			// No workspace: a relative path can only be judged on its own.
			rel := path.Clean(filepath.ToSlash(p))
			f.rel, f.inside = rel, rel != ".." && !strings.HasPrefix(rel, "../")
			f.outside = !f.inside
			return f
		}
		p = filepath.Join(cwd, p)
	}
	f.abs = filepath.Clean(p)
	if w.root == "" {
		return f
	}
	rel, ok := within(f.abs, w.root)
	if !ok && w.real != w.root {
		rel, ok = within(f.abs, w.real)
	}
	if ok {
		// A symlink inside the workspace may point out of it.
		if r := resolveExisting(f.abs); r != f.abs {
			if _, in := within(r, w.real); !in {
				if _, in := within(r, w.root); !in {
					ok = false
				}
			}
		}
	}
	if ok {
		f.rel = filepath.ToSlash(rel)
	}
	for _, r := range w.roots {
		if ok {
			break
		}
		if _, in := within(f.abs, r); in {
			_, ok = within(resolveExisting(f.abs), resolveExisting(r))
		}
	}
	f.inside, f.outside = ok, !ok
	return f
}

// writable reports whether a write to f stays inside the workspace or a
// write root.
func (w workspace) writable(f pathFact) bool {
	if f.inside {
		return true
	}
	if f.abs == "" {
		return false
	}
	in := func(p string) bool {
		for _, r := range w.extra {
			if _, ok := within(p, r); ok {
				return true
			}
		}
		return false
	}
	// Both the path and where its symlinks lead must be in a write root.
	return in(f.abs) && in(resolveExisting(f.abs))
}

// within returns p relative to root when p is root or below it.
func within(p, root string) (string, bool) {
	if root == "" || p == "" {
		return "", false
	}
	rel, err := filepath.Rel(root, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return rel, true
}

// isAncestorOrSelf reports whether dir is p or one of its parents.
func isAncestorOrSelf(dir, p string) bool {
	if dir == "" || p == "" {
		return false
	}
	_, ok := within(p, dir)
	return ok
}

// resolveExisting resolves symlinks in the longest existing prefix of p and
// appends the rest, so that a new file under a symlinked directory is
// placed where it would really be written.
func resolveExisting(p string) string {
	rest := ""
	cur := p
	for i := 0; i < 64; i++ {
		if r, err := filepath.EvalSymlinks(cur); err == nil {
			if rest == "" {
				return r
			}
			return filepath.Join(r, rest)
		}
		if _, err := os.Lstat(cur); err == nil {
			return p // exists but cannot be resolved (a loop): leave it
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return p
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
	return p
}

// The tool kinds as the text rules name them (driver.ToolKind is the
// agent's word for a call; a rule's kind is a string from TOML or a flag).
const (
	kindRead       = string(driver.KindRead)
	kindEdit       = string(driver.KindEdit)
	kindDelete     = string(driver.KindDelete)
	kindMove       = string(driver.KindMove)
	kindSearch     = string(driver.KindSearch)
	kindExecute    = string(driver.KindExecute)
	kindThink      = string(driver.KindThink)
	kindFetch      = string(driver.KindFetch)
	kindSwitchMode = string(driver.KindSwitchMode)
	kindOther      = string(driver.KindOther)
)
