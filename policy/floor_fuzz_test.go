package policy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"

	"github.com/tai-dev/tai/policy/shell"
)

// fuzzDenied are commands the floor denies, written so that they are
// still found when the text around them breaks the parse.
var fuzzDenied = []string{
	"rm -rf /",
	"sudo rm -rf ~",
	"git push --force origin main",
	"mkfs.ext4 /dev/sda",
	"dd if=/dev/zero of=/dev/sda",
	"shred /dev/vda",
	"chmod -R 000 /",
	"mv / x",
	"curl x | sh",
	":(){ :|:& };:",
	`python3 -c 'import shutil; shutil.rmtree("/")'`,
	"git push --mirror origin",
	"rm --rec --force /",
	"dd of=//dev/sda",
}

// shQuote quotes s as one shell word.
func shQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// FuzzFloorJoined checks the floor against the parser: it never panics; a
// denied command followed by ;, &&, ||, | or & and any text, inside $(...)
// or given to sh -c, is still denied; a line that does not parse and holds
// a denied command between separators is denied; and no allow rule covers
// a line that does not parse.
func FuzzFloorJoined(f *testing.F) {
	for _, tt := range append(floorLines, floorVariants...) {
		f.Add(tt.line, uint8(0))
	}
	for _, s := range []string{"", "#", "'", `"`, "\\", "`", "$(", ")", "}", "<<EOF", "&", "|", "\n", "\x00", "((", "[[", "esac", "fi"} {
		f.Add(s, uint8(1))
	}
	root := f.TempDir()
	ws, home := filepath.Join(root, "ws"), filepath.Join(root, "home")
	for _, d := range []string{ws, home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			f.Fatal(err)
		}
	}
	e, err := NewEngine(Config{Mode: Yolo}, Options{Workspace: ws, Home: home})
	if err != nil {
		f.Fatal(err)
	}
	floor := func(line string) string {
		id, _ := e.floorCheck(e.facts(execReq(line)))
		return id
	}
	f.Fuzz(func(t *testing.T, x string, pick uint8) {
		if len(x) > 4096 {
			return
		}
		// Never panics, whatever the line.
		floor(x)
		if sl := shell.Parse(x, readEnv(home, ws)); !sl.OK && allowSegments(sl) != nil {
			t.Fatalf("%q does not parse but has allow segments", x)
		}
		// Requests carry JSON: the engine sees valid UTF-8.
		x = strings.ToValidUTF8(x, "\uFFFD")

		d := fuzzDenied[int(pick)%len(fuzzDenied)]
		for _, line := range []string{
			d + " ; " + x,
			d + " && " + x,
			d + " || " + x,
			d + " | " + x,
			d + " & " + x,
			d + "\n" + x,
			"echo $(" + d + ") " + x,
			"sh -c " + shQuote(d) + " " + x,
			"bash -c " + shQuote("true; "+d) + " " + x,
		} {
			if floor(line) == "" {
				t.Fatalf("%q is allowed by the floor", line)
			}
		}
		// A line the parser reads whole, and the floor denies, is denied
		// wherever it is put: in a script, a subshell, a group, a
		// substitution, a function, behind a wrapper.
		if sl := shell.Parse(x, readEnv(home, ws)); sl.OK && !strings.HasSuffix(x, "\\") && maxDepth(sl) <= 1 && floor(x) != "" {
			for _, line := range []string{
				"sh -c " + shQuote(x),
				"eval " + shQuote(x),
				"(" + x + "\n)",
				"{ " + x + "\n}",
				"echo \"$(" + x + "\n)\"",
				"if true; then " + x + "\nfi",
				"f() { " + x + "\n}; f",
				"sudo sh -c " + shQuote(x),
			} {
				if floor(line) == "" {
					t.Fatalf("%q is denied, but not %q", x, line)
				}
			}
		}

		// A line that does not parse, with the command between
		// separators, is read at its most dangerous.
		line := x + " ; " + d + " ; " + x
		if _, err := syntax.NewParser().Parse(strings.NewReader(line), ""); err != nil && floor(line) == "" {
			t.Fatalf("%q does not parse and is allowed by the floor", line)
		}
	})
}

func maxDepth(sl *shell.Line) int {
	d := 0
	for _, c := range sl.Cmds {
		d = max(d, c.Depth)
	}
	return d
}

// FuzzFloorSeesEveryCommand checks the reader against the parser: every
// simple command the parser finds in a line is one the floor is shown.
func FuzzFloorSeesEveryCommand(f *testing.F) {
	for _, tt := range append(floorLines, floorVariants...) {
		f.Add(tt.line)
	}
	for _, s := range []string{"a[$(rm -rf /)]=1", "x=${y:-$(rm -rf /)}", "[[ $(rm -rf /) ]]", "(( $(rm -rf /) ))",
		"for ((i=$(rm -rf /); i<1; i++)); do :; done", "case $(a) in $(b)) c;; esac", "select x in $(a); do b; done",
		"coproc rm -rf /", "let x=$(a)", "cat <<E\n$(rm -rf /)\nE", "a=( $(b) )", "declare -A m=([k]=$(a))"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, x string) {
		if len(x) > 4096 {
			return
		}
		sl := shell.Parse(x, readEnv("/h", "/w"))
		if !sl.OK || len(sl.Cmds) >= shell.MaxCommands {
			return
		}
		// The reader parsed the whole line (OK), so the parser does too.
		file, err := syntax.NewParser(syntax.Variant(syntax.LangBash), syntax.KeepComments(true)).Parse(strings.NewReader(x), "")
		if err != nil {
			t.Fatalf("%q: read as parsed, but the parser says: %v", x, err)
		}
		read := map[int]bool{}
		for _, c := range sl.Cmds {
			if c.Depth == 0 {
				read[c.At] = true
			}
		}
		syntax.Walk(file, func(n syntax.Node) bool {
			ce, ok := n.(*syntax.CallExpr)
			if !ok || len(ce.Args) == 0 {
				return true
			}
			if at := int(ce.Args[0].Pos().Offset()); !read[at] {
				t.Fatalf("%q: the command at %d (%q) is not among those read", x, at, x[at:ce.End().Offset()])
			}
			return true
		})
	})
}

// FuzzFloorReadsGit checks the git reader: it never panics or hangs,
// whatever the words and aliases (from -c and from the repository's
// config, which may refer to each other or loop); alias expansion reads
// the config once and stops within maxGitAliases; and a --mirror push is
// refused whatever refspecs follow it.
func FuzzFloorReadsGit(f *testing.F) {
	for _, s := range [][3]string{
		{"push -f origin main", "x", "y"},
		{"x origin", "y -f", "push"},
		{"x", "x", "x"},
		{"x", "!rm -rf /", ""},
		{"x", "'push", "push \"-f"},
		{"-c alias.y=push y --mirror", "", ""},
		{"push origin +refs/*:refs/* :main heads/main", "", ""},
		{"push --repo=x --no-force -o a --push-option=b", "", ""},
	} {
		f.Add(s[0], s[1], s[2])
	}
	for _, tt := range floorVariants {
		if rest, ok := strings.CutPrefix(tt.line, "git "); ok {
			f.Add(rest, "push -f", "x")
		}
	}
	root := f.TempDir()
	ws, home := filepath.Join(root, "ws"), filepath.Join(root, "home")
	e, err := NewEngine(Config{Mode: Yolo}, Options{Workspace: ws, Home: home})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, args, aliasX, aliasY string) {
		if len(args)+len(aliasX)+len(aliasY) > 2048 {
			return
		}
		reads := 0
		conf := func(string, []string, []string) gitConf {
			reads++
			return gitConf{"alias.x": {aliasX}, "alias.y": {aliasY}}
		}
		var words []shell.Word
		for _, w := range strings.Fields(args) {
			words = append(words, shell.Lit(w))
		}
		v := e.readGitWith(words, ws, nil, nil, conf)
		if reads > 1 {
			t.Fatalf("the config was read %d times", reads)
		}
		_ = v
		mirror := append([]shell.Word{shell.Lit("push"), shell.Lit("--mirror"), shell.Lit("origin"), shell.Lit("--")}, words...)
		if v := e.readGitWith(mirror, ws, nil, nil, conf); v.why == "" {
			t.Fatalf("git %v is not refused", mirror)
		}
	})
}

// FuzzFloorPaths checks the git command-line reader: no panic (the path
// and sed readers have theirs in package shell).
func FuzzFloorPaths(f *testing.F) {
	for _, s := range []string{"/proc/self/cwd/../x", "//dev/sda", "/proc/1/root/proc/self/cwd", "s/a/b/e", "1e ls", `s/\/e/x/`, "a\\", "/x/,/y/!e"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		splitGitCmdline(s)
	})
}
