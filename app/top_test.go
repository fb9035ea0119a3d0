package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tai-dev/tai/exitcode"
)

// --feed and --token-file: the address as tai run --listen prints it (or
// bare), the token alone in its file; anything else is a usage error that
// says what is wanted.
func TestTopSource(t *testing.T) {
	dir := t.TempDir()
	tok := filepath.Join(dir, "tok")
	if err := os.WriteFile(tok, []byte("abc123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty, two := filepath.Join(dir, "empty"), filepath.Join(dir, "two")
	_ = os.WriteFile(empty, []byte("\n"), 0o600)
	_ = os.WriteFile(two, []byte("Bearer abc123\n"), 0o600)
	for _, tc := range []struct {
		name        string
		f           TopFlags
		addr, token string
		err         string
	}{
		{"printed", TopFlags{Feed: "http://127.0.0.1:7777", TokenFile: tok}, "127.0.0.1:7777", "abc123", ""},
		{"bare", TopFlags{Feed: "127.0.0.1:7777/", TokenFile: tok}, "127.0.0.1:7777", "abc123", ""},
		{"no token file", TopFlags{Feed: "http://127.0.0.1:7777"}, "", "", "--feed needs --token-file"},
		{"token file alone", TopFlags{TokenFile: tok}, "", "", "--token-file goes with --feed"},
		{"https", TopFlags{Feed: "https://h:1", TokenFile: tok}, "", "", "--feed wants the address tai run --listen printed"},
		{"no port", TopFlags{Feed: "http://h", TokenFile: tok}, "", "", "--feed wants the address"},
		{"a path", TopFlags{Feed: "http://h:1/state", TokenFile: tok}, "", "", "--feed wants the address"},
		{"missing file", TopFlags{Feed: "h:1", TokenFile: filepath.Join(dir, "none")}, "", "", "--token-file: open"},
		{"empty file", TopFlags{Feed: "h:1", TokenFile: empty}, "", "", "want the one token"},
		{"not a token", TopFlags{Feed: "h:1", TokenFile: two}, "", "", "want the one token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, err := topSource(tc.f)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || exitcode.Of(err) != exitcode.Usage {
					t.Fatalf("err %v (exit %v), want a usage error with %q", err, exitcode.Of(err), tc.err)
				}
				return
			}
			if err != nil || src.Addr != tc.addr || src.Token != tc.token {
				t.Fatalf("%+v, %v", src, err)
			}
		})
	}
}
