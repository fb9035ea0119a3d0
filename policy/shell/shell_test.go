package shell

import (
	"strings"
	"testing"
)

func TestHasOutputRedirect(t *testing.T) {
	for in, want := range map[string]bool{
		"go test ./...":                false,
		"go test 2>&1":                 false,
		"go test >/dev/null 2>&1":      false,
		"go test &> /dev/null":         false,
		"go test > out.txt":            true,
		"go test >> out.txt":           true,
		"go test 2> err.txt":           true,
		"echo '>' x":                   false,
		`echo ">" x`:                   false,
		"tee >(cat)":                   false,
		"cat > /etc/passwd":            true,
		"go test >| out":               true,
		"go test 1>&2 > /dev/null":     false,
		"go test > /dev/null > real":   true,
		`printf 'a\>b' > /dev/null`:    false,
		"go test >/dev/nullx":          true,
		"cmd 3>&-":                     false,
		"cmd <input.txt":               false,
		"cmd < in > /dev/null 2>&1 &&": false,
	} {
		if got := HasOutputRedirect(in); got != want {
			t.Errorf("hasOutputRedirect(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestProcPath(t *testing.T) {
	for _, tt := range []struct {
		in, cwd, want string
		ok            bool
	}{
		{"//dev/sda", "", "/dev/sda", true},
		{"/proc/self/root/dev/sda", "", "/dev/sda", true},
		{"/proc/self/cwd/", "/w", "/w", true},
		{"/proc/self/cwd/a/..", "/w/x", "/w/x", true},
		{"/proc/self/cwd/..", "/w/x", "/w", true},
		{"/proc/thread-self/cwd", "/w", "/w", true},
		{"/proc/self/task/12/cwd/a", "/w", "/w/a", true},
		{"/proc/1/root/proc/self/cwd", "/w", "/w", true},
		{"/proc/1/cwd", "/w", "", false},
		{"/proc/self/cwd", CwdUnknown, "", false},
		{"/proc/self/fd/3", "/w", "/proc/self/fd/3", true},
		{"/a/./b/../c", "", "/a/c", true},
		{"/..", "", "/", true},
	} {
		got, ok := ProcPath(tt.in, tt.cwd)
		if ok != tt.ok || ok && got != tt.want {
			t.Errorf("ProcPath(%q, %q) = %q, %v; want %q, %v", tt.in, tt.cwd, got, ok, tt.want, tt.ok)
		}
	}
}

func TestSedRuns(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"e", ""},
		{"1e rm -rf /", "rm -rf /"},
		{"s/a/b/e", ""},
		{"s/a/b/g", "-"},
		{"s|e|x|g", "-"},
		{"/e/d", "-"},
		{"a e text", "-"},
		{"$e ls\np", "ls"},
		{`s/x\/e/y/`, "-"},
	} {
		got := sedRuns(tt.in)
		g := "-"
		if len(got) > 0 {
			g = got[0]
		}
		if g != tt.want {
			t.Errorf("sedRuns(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestParseShell(t *testing.T) {
	tests := []struct {
		line string
		want []string // the commands' text, "*" marking a wrapper
	}{
		{"go test ./...", []string{"go test ./..."}},
		{"cd x && rm -rf / ; ls || true", []string{"cd x", "rm -rf /", "ls", "true"}},
		{"a | b |& c", []string{"a", "b", "c"}},
		{`git commit -m "a && b; c | d" && git push`, []string{`git commit -m "a && b; c | d"`, "git push"}},
		{`echo "$(whoami; id)"`, []string{`echo "$(whoami; id)"`, "whoami", "id"}},
		{"echo `date`", []string{"echo `date`", "date"}},
		{"diff <(ls a) <(ls b)", []string{"diff <(ls a) <(ls b)", "ls a", "ls b"}},
		{`bash -lc "cd /; rm -rf *"`, []string{`*bash -lc "cd /; rm -rf *"`, "cd /", "rm -rf *"}},
		{`sh -c 'sh -c "rm -rf /"'`, []string{`*sh -c 'sh -c "rm -rf /"'`, `*sh -c "rm -rf /"`, "rm -rf /"}},
		{"(cd sub && make)\nmake install", []string{"cd sub", "make", "make install"}},
		{"ls | xargs -n1 rm -f", []string{"ls", "xargs -n1 rm -f", "rm -f"}},
		{`find . -exec grep -l x {} +`, []string{"find . -exec grep -l x {} +", "grep -l x {}"}},
		{`eval "a; b"`, []string{`*eval "a; b"`, "a", "b"}},
		{"if a; then b; elif c; then d; else e; fi", []string{"a", "b", "c", "d", "e"}},
		{"f() { g; }", []string{"g"}},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			sl := Parse(tt.line, Env{})
			if !sl.OK {
				t.Fatal("did not parse")
			}
			var got []string
			for _, c := range sl.Cmds {
				x := c.Text
				if c.Wrapper {
					x = "*" + x
				}
				got = append(got, x)
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Fatalf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestStripWrappers(t *testing.T) {
	tests := map[string]string{
		"sudo -u root FOO=1 rm -rf /":           "rm -rf /",
		"env -i A=1 B=2 nohup nice -n 5 make":   "make",
		"timeout 10s nice make":                 "make",
		"command -v go":                         "go", // command's -v: harmless over-normalizing
		"git -C x push":                         "git -C x push",
		"X=1":                                   "",
		"exec -a name bash -c x":                "bash -c x",
		"doas -u me chown -R me /":              "chown -R me /",
		"stdbuf -o0 curl -s https://x":          "curl -s https://x",
		"ionice -c3 -n7 find / -delete":         "find / -delete",
		"busybox rm -rf /":                      "rm -rf /",
		"chroot /mnt rm -rf /":                  "rm -rf /",
		"nohup -- rm -rf /":                     "rm -rf /",
		"strace -f -o /tmp/t bash -c 'echo hi'": "bash -c echo hi",
		"sudo --user=root --chdir /tmp ls":      "ls",
		"flock -w 5 /tmp/lock make":             "make",
	}
	for in, want := range tests {
		sl := Parse(in, Env{})
		if len(sl.Cmds) == 0 {
			t.Errorf("%q: no command", in)
			continue
		}
		if got := sl.Cmds[0].Norm; got != want {
			t.Errorf("StripWrappers(%q) = %q, want %q", in, got, want)
		}
	}
}
