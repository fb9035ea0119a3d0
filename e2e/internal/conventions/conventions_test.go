package conventions

import (
	"strconv"
	"strings"
	"testing"
)

// TestE2ESettingsSayWhy is the rule itself: every e2e use of a non-default
// setting carries its reason (see the package doc for what counts).
func TestE2ESettingsSayWhy(t *testing.T) {
	found, err := Check("../..", "internal/conventions/conventions_test.go")
	if err != nil {
		t.Fatal(err)
	}
	if len(found) > 0 {
		var b strings.Builder
		for _, f := range found {
			b.WriteString("\n\t" + f.String())
		}
		t.Errorf("%d uses of a non-default setting in e2e tests without a comment saying why "+
			"(same line, up to %d lines above, or the enclosing function's doc comment; name the setting):%s",
			len(found), window, b.String())
	}
}

func TestCheckFile(t *testing.T) {
	for _, c := range []struct {
		name string
		src  string
		want []string // "line setting"
	}{
		{"bare sandbox off", `
func TestX(t *testing.T) {
	run("run", "--sandbox", "off", "go")
}`, []string{"4 --sandbox off"}},
		{"sandbox off in a command string", `
func TestX(t *testing.T) {
	sh("tai run --sandbox=off go")
	sh("tai run --sandbox off go")
}`, []string{"4 --sandbox off", "5 --sandbox off"}},
		{"sandbox auto is the default", `
func TestX(t *testing.T) {
	run("run", "--sandbox", "auto", "go")
}`, nil},
		{"comment above says why", `
func TestX(t *testing.T) {
	// --sandbox off: the agent writes a report outside the worktree.
	x := 1
	run("run", "--sandbox", "off", "go")
}`, nil},
		{"comment too far above", `
func TestX(t *testing.T) {
	// --sandbox off: the agent writes a report outside the worktree.
	x := 1
	y := 2
	z := 3
	w := 4
	run("run", "--sandbox", "off", "go")
}`, []string{"9 --sandbox off"}},
		{"unrelated comment does not explain", `
func TestX(t *testing.T) {
	// the agent writes a file.
	run("run", "--approve", "all", "go")
}`, []string{"5 --approve"}},
		{"same-line comment", `
func TestX(t *testing.T) {
	run("run", "--dir", d, "go") // --dir: the test reads the worktree back
}`, nil},
		{"doc comment of the helper", `
// tai runs tai with --approve all: the tests are about the files, not the questions.
func tai(args ...string) { run(append([]string{"--approve", "all"}, args...)...) }`, nil},
		{"test named for the setting", `
func TestModeAcceptEdits(t *testing.T) { run("--mode", "acceptEdits") }`, nil},
		{"longer flags are not the setting", `
func TestX(t *testing.T) { run("--allow-denials", "--permission-mode", "plan", "--dirty") }`, nil},
		{"plan policy in an interpreted string", `
func TestX(t *testing.T) {
	write("plan.yaml", "name: q\npolicy: {approve: all}\ntasks: []\n")
}`, []string{"4 policy:"}},
		{"plan policy in a raw string, yaml comment", "\nfunc TestX(t *testing.T) {\n\twrite(`name: q\n# approve all: the test is about merging\npolicy: {approve: all}\n`)\n}",
			nil},
		{"raw string reported at its line", "\nfunc TestX(t *testing.T) {\n\twrite(`name: q\ngoal: g\npolicy: {approve: all}\n`)\n}",
			[]string{"6 policy:"}},
		{"check_sandbox off", `
func TestX(t *testing.T) { write("check: make\ncheck_sandbox: off\n") }`, []string{"3 check_sandbox: off"}},
		{"toml policy text", `
func TestX(t *testing.T) {
	write("mode = \"yolo\"\n")
	write("[[rule]]\neffect = \"deny\"\n")
	write("write_roots = [\"/x\"]\n")
	write("[defaults]\nagent = \"qwen\"\n")
}`, []string{"4 mode =", "5 [[rule]]", "6 write_roots ="}},
		{"package-level var with a doc", `
// plan approves all: the merge is the subject.
var plan = "policy: {approve: all}\n"`, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			found, err := CheckFile("x_test.go", "package x\n"+c.src)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range found {
				got = append(got, strings.Join([]string{itoa(f.Pos.Line), f.Setting}, " "))
			}
			if strings.Join(got, "|") != strings.Join(c.want, "|") {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestCheckFileBadInput(t *testing.T) {
	if _, err := CheckFile("bad_test.go", "package x\nfunc {"); err == nil {
		t.Fatal("no error for a file that does not parse")
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
