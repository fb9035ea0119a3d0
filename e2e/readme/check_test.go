package readme_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// readme marks a command line copied from the README, exactly as it is
// there (before its # comment). TestREADMECommandsCovered finds every call
// in this package's and e2e/realagents' sources (by parsing them, so the
// argument must be a string literal) and fails for a README command that no
// call names.
func readme(line string) string { return line }

// notRunnable are README command lines no test runs as written, each with
// the reason. An entry that no longer matches a README line fails the
// check, so the table cannot rot.
var notRunnable = map[string]string{
	`./scripts/test.sh`: "it is the whole suite, this package included",
	`eval "$(scripts/install-agents.sh | sed 's/^/export /')"`: "it downloads the agents from npm (the network); " +
		"CI runs it before the suite, and e2e/realagents runs with what it exported",
	`go test ./e2e/realagents -v`: "it is the real-agent suite itself",
	`tai top`: "the interactive terminal UI: e2e/top drives it in tmux; the frame it draws is what `tai top --once` " +
		"prints (TestTopOnce)",
	`tai top --feed http://127.0.0.1:7777 --token-file tok`: "the interactive terminal UI, as `tai top`; e2e/top's " +
		"TestTopWatchesATCPFeed runs it with --once on a `tai run --listen` feed, its token in a file, and a wrong token",
}

// pending are README command lines that should run and have no case yet,
// each with what it needs. Unlike notRunnable these are defects (issue 31
// §1), listed so that the check holds every other line to account; the
// check fails for an entry that no longer matches a README line, or whose
// line has a case now.
var pending = map[string]string{}

// sourcesWithCases are the directories whose tests run README lines,
// relative to this package.
var sourcesWithCases = []string{".", "../realagents", "../web"}

// TestREADMECommandsCovered: every command line of the README's ```sh
// blocks (and any `tai …` line of its other fenced blocks) is run by a
// test, marked readme(`…`), or listed in notRunnable with the reason. A
// marker or an exception that no longer matches the README fails too.
func TestREADMECommandsCovered(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	md := string(b)
	lines := commandLines(md)
	if len(lines) < 10 {
		t.Fatalf("found only %d command lines in README.md: is the extraction broken?", len(lines))
	}
	covered := map[string]string{} // line → where
	for _, dir := range sourcesWithCases {
		for line, where := range markers(t, dir) {
			covered[line] = where
		}
	}
	var readmeSet = map[string]bool{}
	for _, l := range lines {
		readmeSet[l.text] = true
		_, run := covered[l.text]
		_, excepted := notRunnable[l.text]
		if _, ok := pending[l.text]; ok {
			if run {
				t.Errorf("README.md:%d: %q is run by a test (%s) and listed in pending: drop it from pending", l.n, l.text, covered[l.text])
			}
			continue
		}
		switch {
		case run && excepted:
			t.Errorf("README.md:%d: %q is run by a test (%s) and listed in notRunnable: drop the exception", l.n, l.text, covered[l.text])
		case !run && !excepted:
			t.Errorf("README.md:%d: no test runs %q as written: add a case marked readme(`…`) (e2e/readme, e2e/realagents for a real agent, e2e/web for tai serve), or an entry with the reason in notRunnable", l.n, l.text)
		}
	}
	for line := range notRunnable {
		if !readmeSet[line] {
			t.Errorf("notRunnable lists %q, which is no longer a README command line: remove it", line)
		}
	}
	for line := range pending {
		if !readmeSet[line] {
			t.Errorf("pending lists %q, which is no longer a README command line: remove it", line)
		}
	}
	for line, where := range covered {
		// A case may also run a command the README shows inline (`tai
		// doctor`); a marker in neither place is stale.
		if !readmeSet[line] && !strings.Contains(md, "`"+line+"`") {
			t.Errorf("%s: readme(%q) is no longer a README command (a ```sh line or an inline `…`): update the case", where, line)
		}
	}
}

type mdLine struct {
	n    int // 1-based line number in README.md
	text string
}

// commandLines are the command lines a reader would type: every non-empty
// line of a ```sh block, and the lines starting with "tai " of the other
// fenced blocks, without their trailing # comment.
func commandLines(md string) []mdLine {
	var out []mdLine
	lang, in := "", false
	for i, raw := range strings.Split(md, "\n") {
		trimmed := strings.TrimSpace(raw)
		if strings.HasPrefix(trimmed, "```") {
			if in {
				in = false
			} else {
				in, lang = true, strings.TrimPrefix(trimmed, "```")
			}
			continue
		}
		if !in {
			continue
		}
		text := stripComment(trimmed)
		if text == "" || (lang != "sh" && !strings.HasPrefix(text, "tai ")) {
			continue
		}
		out = append(out, mdLine{i + 1, text})
	}
	return out
}

// stripComment cuts a shell line at its comment: a # that starts a word,
// outside quotes.
func stripComment(s string) string {
	var quote rune
	prev := ' '
	for i, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case r == '#' && (prev == ' ' || prev == '\t'):
			return strings.TrimSpace(s[:i])
		}
		prev = r
	}
	return strings.TrimSpace(s)
}

// markers are the lines named by readme(...) calls in dir's Go files,
// with where each is.
func markers(t *testing.T, dir string) map[string]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(files)
	fset := token.NewFileSet()
	out := map[string]string{}
	for _, f := range files {
		file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			if id, ok := call.Fun.(*ast.Ident); !ok || id.Name != "readme" || len(call.Args) != 1 {
				return true
			}
			lit, ok := call.Args[0].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				// The declaration's own parameter, or a computed
				// argument, which the check could not match.
				if _, isIdent := call.Args[0].(*ast.Ident); !isIdent {
					t.Errorf("%s: readme() needs a string literal", fset.Position(call.Pos()))
				}
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				t.Fatalf("%s: %v", fset.Position(lit.Pos()), err)
			}
			out[s] = fset.Position(lit.Pos()).String()
			return true
		})
	}
	return out
}
