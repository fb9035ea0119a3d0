package shell

import (
	"path"
	"testing"
)

// FuzzPaths checks the path and sed readers: no panic; ProcPath gives a
// clean absolute path.
func FuzzPaths(f *testing.F) {
	for _, s := range []string{"/proc/self/cwd/../x", "//dev/sda", "/proc/1/root/proc/self/cwd", "s/a/b/e", "1e ls", `s/\/e/x/`, "a\\", "/x/,/y/!e"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sedRuns(s)
		if p, ok := ProcPath("/"+s, "/w"); ok && (path.Clean(p) != p || !path.IsAbs(p)) {
			t.Fatalf("ProcPath(%q) = %q", "/"+s, p)
		}
	})
}
