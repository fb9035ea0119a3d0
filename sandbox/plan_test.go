package sandbox

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// tree makes files (a trailing / is a directory) under a temp root.
func tree(t *testing.T, paths ...string) string {
	t.Helper()
	root := t.TempDir()
	for _, p := range paths {
		full := filepath.Join(root, p)
		if strings.HasSuffix(p, "/") {
			if err := os.MkdirAll(full, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestPlan(t *testing.T) {
	files := []string{"a/", "b/x", "b/y/", "home/.ssh/id_rsa", "home/.bashrc", "home/src/", "home/.config/tai/policy.toml", "home/.config/other/"}
	tests := []struct {
		name   string
		grants func(r string) []Grant
		want   func(r string) []string // "path access" lines, sorted
	}{
		{"one grant, no exception",
			func(r string) []Grant { return []Grant{{r, Read}} },
			func(r string) []string { return []string{r + " read"} }},
		{"a secret splits every level on the way",
			func(r string) []Grant { return []Grant{{r, Read}, {r + "/home/.ssh", None}} },
			func(r string) []string {
				return []string{r + " list", r + "/a read", r + "/b read", r + "/home list", r + "/home/.bashrc read", r + "/home/.config read", r + "/home/src read"}
			}},
		{"a protected file in a write root: read on the way, write beside",
			func(r string) []Grant {
				return []Grant{{r + "/home", Write}, {r + "/home/.config/tai/policy.toml", Read}}
			},
			func(r string) []string {
				return []string{r + "/home read", r + "/home/.bashrc write", r + "/home/.config read", r + "/home/.config/other write",
					r + "/home/.config/tai read", r + "/home/.config/tai/policy.toml read", r + "/home/.ssh write", r + "/home/src write"}
			}},
		{"a deeper grant that gives more is a rule of its own",
			func(r string) []Grant { return []Grant{{r, Read}, {r + "/home/src", Write}} },
			func(r string) []string { return []string{r + " read", r + "/home/src write"} }},
		{"a missing exception keeps its parent from gaining entries (it cannot be created)",
			func(r string) []Grant { return []Grant{{r + "/b", Write}, {r + "/b/missing", None}} },
			func(r string) []string { return []string{r + "/b list", r + "/b/x write", r + "/b/y write"} }},
		{"the last grant for a path wins",
			func(r string) []Grant { return []Grant{{r + "/a", Write}, {r + "/a", Read}} },
			func(r string) []string { return []string{r + "/a read"} }},
		{"relative paths are ignored",
			func(r string) []Grant { return []Grant{{"a", Write}, {r + "/a", Read}} },
			func(r string) []string { return []string{r + "/a read"} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tree(t, files...)
			rules, err := Plan(tt.grants(r))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, rl := range rules {
				got = append(got, rl.Path+" "+rl.Access.String())
			}
			slices.Sort(got)
			want := tt.want(r)
			slices.Sort(want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("rules\n got %q\nwant %q", got, want)
			}
		})
	}
}

func TestPlanSkipsSymlinks(t *testing.T) {
	r := tree(t, "home/.ssh/id_rsa", "home/src/")
	if err := os.Symlink(filepath.Join(r, "home", ".ssh"), filepath.Join(r, "home", "keys")); err != nil {
		t.Fatal(err)
	}
	rules, _ := Plan([]Grant{{r, Read}, {r + "/home/.ssh", None}})
	for _, rl := range rules {
		if strings.HasSuffix(rl.Path, "keys") {
			t.Fatalf("a symlink to the secret got a rule: %+v", rl)
		}
	}
}

// A protected path that does not exist yet protects its nearest existing
// parent inside the write root, so it cannot be planted.
func TestGrantsProtectMissing(t *testing.T) {
	r := tree(t, "home/.config/")
	gs := Grants([]string{r + "/home"}, nil, []string{r + "/home/.config/tai/policy.toml", r + "/home/.local/state/tai"}, "")
	var prot []string
	for _, g := range gs {
		if g.Access == Read && g.Path != "/" {
			prot = append(prot, g.Path)
		}
	}
	want := []string{r + "/home/.config", r + "/home/.local"}
	if !reflect.DeepEqual(prot, want) {
		t.Fatalf("protected %q, want %q", prot, want)
	}
}

// The agent sees the last of duplicate variables, as with exec.Cmd.
func TestDedupEnv(t *testing.T) {
	got := dedupEnv([]string{"A=1", "B=2", "A=3", "C", "B=4"})
	if want := []string{"A=3", "C", "B=4"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("dedupEnv = %q, want %q", got, want)
	}
}

func TestPorts(t *testing.T) {
	got, err := ports([]string{"api.example.com:443,127.0.0.1:8080", " [::1]:9000 "})
	if err != nil || !reflect.DeepEqual(got, []uint16{443, 8080, 9000}) {
		t.Fatalf("ports = %v, %v", got, err)
	}
	for _, bad := range []string{"example.com", "x:0", "x:70000", "x:http"} {
		if _, err := ports([]string{bad}); err == nil {
			t.Errorf("ports(%q): no error", bad)
		}
	}
}
