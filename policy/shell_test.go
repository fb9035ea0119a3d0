package policy

import (
	"reflect"
	"strings"
	"testing"
)

func TestSplitCommands(t *testing.T) {
	tests := []struct {
		line string
		want []string // segment texts; "|" suffix marks a pipe; ">" prefixes per depth
	}{
		{"go test ./...", []string{"go test ./..."}},
		{"cd x && rm -rf / ; ls || true", []string{"cd x", "rm -rf /", "ls", "true"}},
		{"a | b |& c", []string{"a|", "b|", "c"}},
		{"make 2>&1 | tee log &> out & wait", []string{"make 2>&1|", "tee log &> out", "wait"}},
		{`git commit -m "a && b; c | d" && git push`, []string{`git commit -m "a && b; c | d"`, "git push"}},
		{`echo 'x;y' ; echo "$(whoami; id)"`, []string{`echo 'x;y'`, `echo "$(whoami; id)"`, ">whoami", ">id"}},
		{"echo `date`", []string{"echo `date`", ">date"}},
		{"diff <(ls a) <(ls b)", []string{"diff <(ls a) <(ls b)", ">ls a", ">ls b"}},
		{`bash -lc "cd /; rm -rf *"`, []string{`bash -lc "cd /; rm -rf *"`, ">cd /", ">rm -rf *"}},
		{`sh -c 'sh -c "rm -rf /"'`, []string{`sh -c 'sh -c "rm -rf /"'`, `>sh -c "rm -rf /"`, ">>rm -rf /"}},
		{"(cd sub && make)\nmake install", []string{"cd sub", "make", "make install"}},
		{`echo a\;b`, []string{`echo a\;b`}},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			var got []string
			for _, s := range splitCommands(tt.line) {
				x := strings.Repeat(">", s.depth) + s.text
				if s.pipe {
					x += "|"
				}
				got = append(got, x)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestNormalizeWords(t *testing.T) {
	tests := map[string]string{
		"sudo -u root FOO=1 rm -rf /":           "rm -rf /",
		"env -i A=1 B=2 nohup nice -n 5 make":   "make",
		"timeout 10s xargs -n1 rm -f":           "rm -f",
		"if true":                               "true",
		`"rm" '-rf' ~`:                          "rm -rf ~",
		"command -v go":                         "go", // command's -v: harmless over-normalizing
		"git -C x push":                         "git -C x push",
		"X=1":                                   "",
		"exec -a name bash -c 'rm -rf /'":       "bash -c rm -rf /",
		"doas -u me chown -R me /":              "chown -R me /",
		"stdbuf -o0 curl -s https://x":          "curl -s https://x",
		"ionice -c3 -n7 find / -delete":         "find / -delete",
		"busybox rm -rf /":                      "rm -rf /",
		"chroot /mnt rm -rf /":                  "rm -rf /",
		"nohup -- rm -rf /":                     "rm -rf /",
		"strace -f -o /tmp/t bash -c 'echo hi'": "bash -c echo hi",
	}
	for in, want := range tests {
		if got := strings.Join(normalizeWords(shellWords(in)), " "); got != want {
			t.Errorf("normalize(%q) = %q, want %q", in, got, want)
		}
	}
}

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
		if got := hasOutputRedirect(in); got != want {
			t.Errorf("hasOutputRedirect(%q) = %v, want %v", in, got, want)
		}
	}
}
