// Package conventions checks the e2e tests' rule that every non-default
// setting is explained: the suite must test what users run, so each place a
// test departs from the defaults says why.
//
// A use is a string literal in a _test.go file under e2e/ that holds:
//   - "--sandbox" followed by the literal "off" in the same argument list, or
//     "--sandbox=off" / "--sandbox off" inside a string (check word: sandbox);
//   - the flags --dir, --approve, --yolo, --policy, --allow, --deny, --ask or
//     --mode, alone or inside a command string (check word: the flag's name;
//     --allow-denials and other longer flags do not count);
//   - in inline plan/policy text, a line starting with "policy:" or
//     "approve:", or "check_sandbox: off" (check words: policy/approve, and
//     sandbox);
//   - in inline TOML policy or config text, a line starting with "mode =",
//     "approve =", "write_roots =" or "[[rule]]" (check words: policy, or the
//     key: mode, approve, write_roots, rule).
//
// A use is explained when its check word (or, for the policy flags, "polic")
// appears, case-insensitively, in any of:
//   - a Go comment on the same line or within the 4 lines above;
//   - a '#' comment inside the same string literal, same line or up to 4 above;
//   - the doc comment of the enclosing top-level declaration (a helper that
//     every test of a file uses may carry the reason once);
//   - the name of the enclosing top-level function (a test whose subject is
//     the setting, e.g. TestSandboxOffSaysSo, is explained by its name).
//
// Requiring the word keeps an unrelated comment nearby from passing for an
// explanation.
package conventions

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// window is how many lines above a use an explaining comment may sit.
const window = 4

// Finding is one unexplained use of a non-default setting.
type Finding struct {
	Pos     token.Position
	Setting string // e.g. "--sandbox off", "--approve", "policy:"
}

func (f Finding) String() string {
	return fmt.Sprintf("%s:%d: %s without a comment saying why", f.Pos.Filename, f.Pos.Line, f.Setting)
}

// setting is one kind of non-default use and the words that explain it.
type setting struct {
	name  string
	words []string
}

var (
	flagRe = regexp.MustCompile(`(?:^|[\s"'])--(dir|approve|yolo|policy|allow|deny|ask|mode)(?:[=\s"']|$)`)
	offRe  = regexp.MustCompile(`(?:^|[\s"'])--sandbox[=\s]+off\b`)
	keyRe  = regexp.MustCompile(`(?m)^[\t ]*(?:-[\t ]+)?(policy|approve):`)
	ckRe   = regexp.MustCompile(`check_sandbox:\s*off\b`)
	tomlRe = regexp.MustCompile(`(?m)^[\t ]*(?:(mode|approve|write_roots)[\t ]*=|(\[\[rule\]\]))`)
	hashRe = regexp.MustCompile(`(?:^|\s)#\s`)
)

// flagWords gives the words that explain a flag; the policy flags all share
// "polic" too.
func flagWords(flag string) []string {
	switch flag {
	case "dir":
		return []string{"dir"}
	case "yolo":
		return []string{"yolo", "approve"}
	case "mode":
		return []string{"mode"}
	}
	return []string{flag, "polic"}
}

// Check parses every _test.go file under root and returns the unexplained
// uses, sorted by file and line. skip names files (slash paths relative to
// root) not to check, e.g. the checker's own test with its patterns.
func Check(root string, skip ...string) ([]Finding, error) {
	var out []Finding
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return fmt.Errorf("conventions: %w", err)
		}
		for _, s := range skip {
			if filepath.ToSlash(rel) == s {
				return nil
			}
		}
		fs, err := CheckFile(path, nil)
		// Name files as the repository does, for the failure list.
		if err != nil {
			return err
		}
		for _, f := range fs {
			f.Pos.Filename = "e2e/" + filepath.ToSlash(rel)
			out = append(out, f)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Pos.Filename != out[j].Pos.Filename {
			return out[i].Pos.Filename < out[j].Pos.Filename
		}
		return out[i].Pos.Line < out[j].Pos.Line
	})
	return out, nil
}

// CheckFile checks one file; src, when not nil, is its content.
func CheckFile(filename string, src any) ([]Finding, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, filename, src, parser.ParseComments)
	if err != nil {
		return nil, fmt.Errorf("conventions: %w", err)
	}
	// comments maps each line to the lowercased text of comments on it.
	comments := map[int]string{}
	for _, g := range f.Comments {
		for _, c := range g.List {
			start, end := fset.Position(c.Pos()).Line, fset.Position(c.End()).Line
			lines := strings.Split(strings.ToLower(c.Text), "\n")
			for l := start; l <= end; l++ {
				comments[l] += " " + lines[min(l-start, len(lines)-1)]
			}
		}
	}
	var out []Finding
	for _, decl := range f.Decls {
		doc, name := declContext(decl)
		ast.Inspect(decl, func(n ast.Node) bool {
			for _, u := range uses(n) {
				line := fset.Position(u.lit.Pos()).Line
				if explained(u, line, comments, doc, name) {
					continue
				}
				pos := fset.Position(u.lit.Pos())
				pos.Line += u.offset
				out = append(out, Finding{Pos: pos, Setting: u.s.name})
			}
			return true
		})
	}
	return out, nil
}

// declContext returns the doc comment and function name of a top-level
// declaration, lowercased.
func declContext(decl ast.Decl) (doc, name string) {
	switch d := decl.(type) {
	case *ast.FuncDecl:
		return strings.ToLower(d.Doc.Text()), strings.ToLower(d.Name.Name)
	case *ast.GenDecl:
		doc = d.Doc.Text()
		for _, s := range d.Specs {
			if v, ok := s.(*ast.ValueSpec); ok {
				doc += v.Doc.Text()
			}
		}
		return strings.ToLower(doc), ""
	}
	return "", ""
}

// use is one setting found in a string literal, offset lines into it.
type use struct {
	lit    *ast.BasicLit
	offset int
	text   string // the literal's value
	s      setting
}

// uses returns the settings a node holds: a string literal's own, and
// "--sandbox", "off" pairs in argument or element lists.
func uses(n ast.Node) []use {
	switch n := n.(type) {
	case *ast.CallExpr:
		return sandboxOff(n.Args)
	case *ast.CompositeLit:
		return sandboxOff(n.Elts)
	case *ast.BasicLit:
		return litUses(n)
	}
	return nil
}

func sandboxOff(list []ast.Expr) []use {
	var out []use
	for i := 0; i+1 < len(list); i++ {
		if str(list[i]) == "--sandbox" && str(list[i+1]) == "off" {
			lit := list[i].(*ast.BasicLit)
			out = append(out, use{lit: lit, s: setting{"--sandbox off", []string{"sandbox"}}})
		}
	}
	return out
}

// str returns a string literal's value, or "" for anything else.
func str(e ast.Expr) string {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return ""
	}
	v, err := strconv.Unquote(lit.Value)
	if err != nil {
		return ""
	}
	return v
}

func litUses(lit *ast.BasicLit) []use {
	v := str(lit)
	if v == "" {
		return nil
	}
	// A raw string's lines are the file's lines; an interpreted one's \n
	// stays on one source line.
	lineOf := func(i int) int {
		if strings.HasPrefix(lit.Value, "`") {
			return strings.Count(v[:i], "\n")
		}
		return 0
	}
	var out []use
	add := func(i int, s setting) {
		out = append(out, use{lit: lit, offset: lineOf(i), text: v, s: s})
	}
	for _, m := range flagRe.FindAllStringSubmatchIndex(v, -1) {
		flag := v[m[2]:m[3]]
		add(m[2], setting{"--" + flag, flagWords(flag)})
	}
	for _, m := range offRe.FindAllStringIndex(v, -1) {
		add(m[0], setting{"--sandbox off", []string{"sandbox"}})
	}
	for _, m := range keyRe.FindAllStringSubmatchIndex(v, -1) {
		add(m[2], setting{v[m[2]:m[3]] + ":", []string{"polic", "approve"}})
	}
	for _, m := range tomlRe.FindAllStringSubmatchIndex(v, -1) {
		if m[2] >= 0 {
			add(m[2], setting{v[m[2]:m[3]] + " =", []string{"polic", v[m[2]:m[3]]}})
		} else {
			add(m[4], setting{"[[rule]]", []string{"polic", "rule"}})
		}
	}
	for _, m := range ckRe.FindAllStringIndex(v, -1) {
		add(m[0], setting{"check_sandbox: off", []string{"sandbox"}})
	}
	return out
}

// explained reports whether a use at line (of its literal's start) has its
// reason in a comment nearby, the literal's own '#' comments, or the
// enclosing declaration's doc comment or name.
func explained(u use, line int, comments map[int]string, doc, name string) bool {
	var texts []string
	texts = append(texts, doc, name)
	for l := line + u.offset - window; l <= line+u.offset; l++ {
		texts = append(texts, comments[l])
	}
	if u.offset > 0 {
		for l := line - window; l < line; l++ {
			texts = append(texts, comments[l])
		}
	}
	lines := strings.Split(u.text, "\n")
	for l := max(0, u.offset-window); l <= u.offset && l < len(lines); l++ {
		if loc := hashRe.FindStringIndex(lines[l]); loc != nil {
			texts = append(texts, strings.ToLower(lines[l][loc[0]:]))
		}
	}
	for _, t := range texts {
		for _, w := range u.s.words {
			if strings.Contains(t, w) {
				return true
			}
		}
	}
	return false
}
