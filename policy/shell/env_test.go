package shell

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestNoPolicyKnowledge checks that the reader imports nothing of tai's
// but its internal helpers: what a caller judges is asked through Env.
func TestNoPolicyKnowledge(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		af, err := parser.ParseFile(token.NewFileSet(), f, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range af.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if rest, ok := strings.CutPrefix(p, "github.com/tai-dev/tai/"); ok && !strings.HasPrefix(rest, "internal/") {
				t.Errorf("%s imports %s", f, p)
			}
		}
	}
}

// TestEnvQuestions checks that the caller's two questions decide what
// they are asked about, and that without them the reader still reads.
func TestEnvQuestions(t *testing.T) {
	fetchExec := `curl -s x | python3 -c 'exec(sys.stdin.read())'`
	runsAll := func(string) bool { return true }
	for _, tt := range []struct {
		name      string
		line      string
		env       Env
		pipeShell bool // some command runs the download
	}{
		{"no RunsInput", fetchExec, Env{}, false},
		{"RunsInput says yes", fetchExec, Env{RunsInput: runsAll}, true},
		{"RunsInput says no", fetchExec, Env{RunsInput: func(string) bool { return false }}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sl := Parse(tt.line, tt.env)
			pipe := false
			for _, c := range sl.Cmds {
				pipe = pipe || c.PipeShell
			}
			if pipe != tt.pipeShell {
				t.Errorf("PipeShell = %v, want %v", pipe, tt.pipeShell)
			}
		})
	}
}

// TestEnvWatched checks that a line that does not parse keeps every
// watched command, and fewer of the others than with all watched: past
// its first words, a piece's words start only watched commands.
func TestEnvWatched(t *testing.T) {
	var b strings.Builder
	b.WriteString("(( ")
	for i := range 40 {
		b.WriteString("p" + strconv.Itoa(i) + " ")
	}
	b.WriteString("rm -rf /")
	line := b.String()
	read := func(env Env) (n int, rm bool) {
		sl := Parse(line, env)
		if sl.OK {
			t.Fatalf("%q parsed", line)
		}
		for _, c := range sl.Cmds {
			rm = rm || c.Name == "rm"
		}
		return len(sl.Cmds), rm
	}
	all, rmAll := read(Env{})
	some, rmSome := read(Env{Watched: func(n string) bool { return n == "rm" }})
	if !rmAll || !rmSome {
		t.Errorf("rm -rf / not read: all watched %v, rm watched %v", rmAll, rmSome)
	}
	if some >= all {
		t.Errorf("%d commands read with rm watched, %d with all: want fewer", some, all)
	}
}
