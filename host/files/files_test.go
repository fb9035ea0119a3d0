package files

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fixture builds:
//
//	base/ws/               workspace root
//	base/ws/a.txt          "hello\n"
//	base/ws/sub/b.txt
//	base/ws/in-link  -> sub           (dir symlink inside -> inside)
//	base/ws/b-link   -> sub/b.txt     (file symlink inside -> inside)
//	base/ws/out-dir  -> base/outside  (dir symlink inside -> outside)
//	base/ws/out-file -> base/outside/secret.txt
//	base/ws/dangling -> base/outside/new.txt (does not exist)
//	base/ws/rel-out  -> ../outside    (relative escape)
//	base/ws2/          prefix sibling
//	base/outside/secret.txt
type fixture struct {
	base, ws, ws2, outside string
	svc                    *Service
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	// EvalSymlinks: t.TempDir may itself live under a symlink (macOS /tmp).
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := fixture{
		base:    base,
		ws:      filepath.Join(base, "ws"),
		ws2:     filepath.Join(base, "ws2"),
		outside: filepath.Join(base, "outside"),
	}
	for _, d := range []string{f.ws, f.ws2, f.outside, filepath.Join(f.ws, "sub")} {
		must(t, os.MkdirAll(d, 0o755))
	}
	must(t, os.WriteFile(filepath.Join(f.ws, "a.txt"), []byte("hello\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(f.ws, "sub", "b.txt"), []byte("bee\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(f.ws2, "c.txt"), []byte("sibling\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(f.outside, "secret.txt"), []byte("secret\n"), 0o644))
	must(t, os.Symlink("sub", filepath.Join(f.ws, "in-link")))
	must(t, os.Symlink("sub/b.txt", filepath.Join(f.ws, "b-link")))
	must(t, os.Symlink(f.outside, filepath.Join(f.ws, "out-dir")))
	must(t, os.Symlink(filepath.Join(f.outside, "secret.txt"), filepath.Join(f.ws, "out-file")))
	must(t, os.Symlink(filepath.Join(f.outside, "new.txt"), filepath.Join(f.ws, "dangling")))
	must(t, os.Symlink("../outside", filepath.Join(f.ws, "rel-out")))
	svc, err := New(f.ws)
	if err != nil {
		t.Fatal(err)
	}
	f.svc = svc
	return f
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestConfinement(t *testing.T) {
	f := newFixture(t)
	const (
		ok = iota
		notAbs
		lexical
		viaSymlink
	)
	tests := []struct {
		name string
		path string
		want int
		real string // expected real path when ok
	}{
		{"relative", "a.txt", notAbs, ""},
		{"empty", "", notAbs, ""},
		{"dot relative", "./ws/a.txt", notAbs, ""},
		{"plain file", f.ws + "/a.txt", ok, f.ws + "/a.txt"},
		{"root itself", f.ws, ok, f.ws},
		{"missing file", f.ws + "/nope.txt", ok, f.ws + "/nope.txt"},
		{"missing parents", f.ws + "/x/y/z.txt", ok, f.ws + "/x/y/z.txt"},
		{"dotdot inside", f.ws + "/sub/../a.txt", ok, f.ws + "/a.txt"},
		{"dotdot escape", f.ws + "/../outside/secret.txt", lexical, ""},
		{"dotdot to parent", f.ws + "/..", lexical, ""},
		{"absolute outside", "/etc/passwd", lexical, ""},
		{"prefix sibling", f.ws2 + "/c.txt", lexical, ""},
		{"prefix sibling dir", f.ws2, lexical, ""},
		{"symlink dir inside", f.ws + "/in-link/b.txt", ok, f.ws + "/sub/b.txt"},
		{"symlink file inside", f.ws + "/b-link", ok, f.ws + "/sub/b.txt"},
		{"symlink dir escape", f.ws + "/out-dir/secret.txt", viaSymlink, ""},
		{"symlink dir escape itself", f.ws + "/out-dir", viaSymlink, ""},
		{"symlink dir escape new file", f.ws + "/out-dir/new/deep.txt", viaSymlink, ""},
		{"symlink file escape", f.ws + "/out-file", viaSymlink, ""},
		{"dangling symlink escape", f.ws + "/dangling", viaSymlink, ""},
		{"relative symlink escape", f.ws + "/rel-out/secret.txt", viaSymlink, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := f.svc.Resolve(tt.path)
			var oe *OutsideError
			switch tt.want {
			case ok:
				if err != nil {
					t.Fatalf("Resolve(%q) = %v, want ok", tt.path, err)
				}
				if got != tt.real {
					t.Fatalf("Resolve(%q) = %q, want %q", tt.path, got, tt.real)
				}
			case notAbs:
				if !errors.Is(err, ErrNotAbsolute) {
					t.Fatalf("Resolve(%q) err = %v, want ErrNotAbsolute", tt.path, err)
				}
			case lexical, viaSymlink:
				if !errors.As(err, &oe) {
					t.Fatalf("Resolve(%q) err = %v, want *OutsideError", tt.path, err)
				}
				if isSym := strings.Contains(oe.Reason, "symlink"); isSym != (tt.want == viaSymlink) {
					t.Fatalf("Resolve(%q) reason %q, want symlink=%v", tt.path, oe.Reason, tt.want == viaSymlink)
				}
			}
			// Read and Write must agree with Resolve (and not touch anything outside).
			if tt.want != ok {
				if _, err := f.svc.Read(context.Background(), tt.path, 0, 0); err == nil {
					t.Errorf("Read(%q) succeeded", tt.path)
				}
				if _, err := f.svc.Write(context.Background(), tt.path, []byte("pwned")); err == nil {
					t.Errorf("Write(%q) succeeded", tt.path)
				}
			}
		})
	}
	// Nothing outside was modified or created.
	if b, _ := os.ReadFile(filepath.Join(f.outside, "secret.txt")); string(b) != "secret\n" {
		t.Errorf("outside file changed: %q", b)
	}
	for _, p := range []string{"new.txt", "new"} {
		if _, err := os.Lstat(filepath.Join(f.outside, p)); err == nil {
			t.Errorf("outside %s created", p)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(f.ws2, "c.txt")); string(b) != "sibling\n" {
		t.Errorf("sibling file changed: %q", b)
	}
}

func TestOutsideErrorMessage(t *testing.T) {
	f := newFixture(t)
	_, err := f.svc.Resolve("/etc/passwd")
	want := `path "/etc/passwd" is outside the workspace (` + f.ws + `)`
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
	_, err = f.svc.Resolve(f.ws + "/out-dir")
	want = `path "` + f.ws + `/out-dir" resolves through a symlink to "` + f.outside + `" outside the workspace (` + f.ws + `)`
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
}

func TestNew(t *testing.T) {
	f := newFixture(t)
	if _, err := New(); err == nil {
		t.Error("New() with no roots succeeded")
	}
	if _, err := New("rel"); !errors.Is(err, ErrNotAbsolute) {
		t.Errorf("New(rel) = %v", err)
	}
	if _, err := New(f.ws + "/a.txt"); err == nil {
		t.Error("New(file) succeeded")
	}
	if _, err := New(f.ws + "/missing"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("New(missing) = %v", err)
	}
	// A root given through a symlink is stored resolved, and paths spelled
	// through either form are accepted.
	link := filepath.Join(f.base, "ws-link")
	must(t, os.Symlink(f.ws, link))
	svc, err := New(link)
	if err != nil {
		t.Fatal(err)
	}
	if got := svc.Roots(); len(got) != 1 || got[0] != f.ws {
		t.Errorf("Roots() = %v, want [%s]", got, f.ws)
	}
	for _, p := range []string{link + "/a.txt", f.ws + "/a.txt"} {
		if got, err := svc.Resolve(p); err != nil || got != f.ws+"/a.txt" {
			t.Errorf("Resolve(%q) = %q, %v", p, got, err)
		}
	}
	// Contains applies the same rules without a Service.
	if _, err := Contains([]string{f.ws}, f.ws+"/out-dir/x"); !errors.As(err, new(*OutsideError)) {
		t.Errorf("Contains escape = %v", err)
	}
	if got, err := Contains([]string{f.ws, f.ws2}, f.ws2+"/c.txt"); err != nil || got != f.ws2+"/c.txt" {
		t.Errorf("Contains second root = %q, %v", got, err)
	}
}

func TestRead(t *testing.T) {
	f := newFixture(t)
	const content = "one\ntwo\r\nthree\n\nfive"
	p := filepath.Join(f.ws, "lines.txt")
	must(t, os.WriteFile(p, []byte(content), 0o644))
	must(t, os.WriteFile(filepath.Join(f.ws, "empty.txt"), nil, 0o644))
	tests := []struct {
		name        string
		path        string
		line, limit int
		want        string
	}{
		{"all", p, 0, 0, content},
		{"line 1 all", p, 1, 0, content},
		{"line 2 all", p, 2, 0, "two\r\nthree\n\nfive"},
		{"first line", p, 1, 1, "one\n"},
		{"limit only", p, 0, 2, "one\ntwo\r\n"},
		{"crlf kept", p, 2, 1, "two\r\n"},
		{"empty line", p, 4, 1, "\n"},
		{"last line no newline", p, 5, 1, "five"},
		{"limit past eof", p, 4, 10, "\nfive"},
		{"line past eof", p, 6, 0, ""},
		{"line far past eof", p, 100, 3, ""},
		{"empty file", filepath.Join(f.ws, "empty.txt"), 1, 1, ""},
		{"through inside symlink", filepath.Join(f.ws, "b-link"), 0, 0, "bee\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := f.svc.Read(context.Background(), tt.path, tt.line, tt.limit)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("Read(line=%d, limit=%d) = %q, want %q", tt.line, tt.limit, got, tt.want)
			}
		})
	}
}

func TestReadLongLines(t *testing.T) {
	f := newFixture(t)
	// Lines longer than the bufio buffer exercise the ErrBufferFull paths.
	long := strings.Repeat("x", 200<<10)
	content := long + "\n" + "short\n" + long + "y\n" + "end"
	p := filepath.Join(f.ws, "long.txt")
	must(t, os.WriteFile(p, []byte(content), 0o644))
	for _, tt := range []struct {
		line, limit int
		want        string
	}{
		{1, 1, long + "\n"},
		{2, 1, "short\n"},
		{3, 1, long + "y\n"},
		{3, 0, long + "y\nend"},
		{4, 1, "end"},
	} {
		got, err := f.svc.Read(context.Background(), p, tt.line, tt.limit)
		if err != nil {
			t.Fatal(err)
		}
		if got != tt.want {
			t.Errorf("Read(line=%d, limit=%d): got %d bytes, want %d", tt.line, tt.limit, len(got), len(tt.want))
		}
	}
}

func TestReadErrors(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for _, p := range []string{f.ws + "/missing.txt", f.ws + "/no/such/dir/file"} {
		if _, err := f.svc.Read(ctx, p, 0, 0); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Read(%q) = %v, want fs.ErrNotExist", p, err)
		}
	}
	if _, err := f.svc.Read(ctx, f.ws+"/sub", 0, 0); err == nil {
		t.Error("Read(dir) succeeded")
	}
	if _, err := f.svc.Read(ctx, f.ws+"/a.txt", -1, 0); err == nil {
		t.Error("Read(line=-1) succeeded")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := f.svc.Read(cctx, f.ws+"/a.txt", 0, 0); !errors.Is(err, context.Canceled) {
		t.Errorf("Read(canceled) = %v", err)
	}
}

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(sum[:])
}

func TestWrite(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	tests := []struct {
		name     string
		path     string // relative to ws
		setup    func(t *testing.T, p string)
		content  string
		realPath string // relative to ws; defaults to path
		created  bool
		before   string // previous content
		mode     fs.FileMode
	}{
		{name: "create", path: "new.txt", content: "new\n", created: true, mode: 0o644},
		{name: "create parents", path: "x/y/z/new.txt", content: "deep", created: true, mode: 0o644},
		{name: "overwrite", path: "a.txt", content: "bye\n", before: "hello\n", mode: 0o644},
		{name: "empty content", path: "empty.txt", content: "", created: true, mode: 0o644},
		{
			name: "keeps 0600", path: "private.txt", content: "p2", before: "p1", mode: 0o600,
			setup: func(t *testing.T, p string) { must(t, os.WriteFile(p, []byte("p1"), 0o600)) },
		},
		{
			name: "keeps 0755", path: "script.sh", content: "#!/bin/sh\n", before: "old", mode: 0o755,
			setup: func(t *testing.T, p string) {
				must(t, os.WriteFile(p, []byte("old"), 0o600))
				must(t, os.Chmod(p, 0o755))
			},
		},
		{name: "through inside file symlink", path: "b-link", realPath: "sub/b.txt", content: "B\n", before: "bee\n", mode: 0o644},
		{name: "through inside dir symlink", path: "in-link/c.txt", realPath: "sub/c.txt", content: "C", created: true, mode: 0o644},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(f.ws, tt.path)
			if tt.setup != nil {
				tt.setup(t, p)
			}
			real := p
			if tt.realPath != "" {
				real = filepath.Join(f.ws, tt.realPath)
			}
			res, err := f.svc.Write(ctx, p, []byte(tt.content))
			if err != nil {
				t.Fatal(err)
			}
			want := WriteResult{Path: real, Size: int64(len(tt.content)), Created: tt.created, HashAfter: sha(tt.content)}
			if !tt.created {
				want.HashBefore = sha(tt.before)
			}
			if res != want {
				t.Errorf("result = %+v\nwant     %+v", res, want)
			}
			got, err := os.ReadFile(real)
			if err != nil || string(got) != tt.content {
				t.Errorf("content = %q, %v; want %q", got, err, tt.content)
			}
			fi, err := os.Stat(real)
			if err != nil {
				t.Fatal(err)
			}
			if tt.created {
				// New files get 0644 minus the umask; never more.
				if fi.Mode().Perm()&^0o644 != 0 {
					t.Errorf("mode = %v, want within 0644", fi.Mode())
				}
			} else if fi.Mode().Perm() != tt.mode {
				t.Errorf("mode = %v, want %v", fi.Mode().Perm(), tt.mode)
			}
			if tt.realPath != "" && tt.path == "b-link" {
				if fi, err := os.Lstat(p); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
					t.Errorf("symlink replaced: %v %v", fi, err)
				}
			}
			noTempFiles(t, filepath.Dir(real))
		})
	}
}

func noTempFiles(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tai-") {
			t.Errorf("temp file left behind: %s", e.Name())
		}
	}
}

func TestWriteErrors(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	// Target is a directory: refused, nothing left behind.
	if _, err := f.svc.Write(ctx, f.ws+"/sub", []byte("x")); err == nil {
		t.Error("Write(dir) succeeded")
	}
	if _, err := f.svc.Write(ctx, f.ws, []byte("x")); err == nil {
		t.Error("Write(root) succeeded")
	}
	// A parent that is a file.
	if _, err := f.svc.Write(ctx, f.ws+"/a.txt/child", []byte("x")); err == nil {
		t.Error("Write(file/child) succeeded")
	}
	if b, _ := os.ReadFile(f.ws + "/a.txt"); string(b) != "hello\n" {
		t.Errorf("a.txt changed: %q", b)
	}
	noTempFiles(t, f.ws)
	noTempFiles(t, f.ws+"/sub")

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := f.svc.Write(cctx, f.ws+"/a.txt", []byte("x")); !errors.Is(err, context.Canceled) {
		t.Errorf("Write(canceled) = %v", err)
	}
}

func TestWithin(t *testing.T) {
	tests := []struct {
		roots []string
		p     string
		want  bool
	}{
		{[]string{"/tmp/ws"}, "/tmp/ws", true},
		{[]string{"/tmp/ws"}, "/tmp/ws/a", true},
		{[]string{"/tmp/ws"}, "/tmp/ws2", false},
		{[]string{"/tmp/ws"}, "/tmp/ws2/a", false},
		{[]string{"/tmp/ws"}, "/tmp", false},
		{[]string{"/"}, "/etc", true},
		{[]string{"/a", "/b"}, "/b/c", true},
	}
	for _, tt := range tests {
		if _, got := within(tt.roots, tt.p); got != tt.want {
			t.Errorf("within(%v, %q) = %v, want %v", tt.roots, tt.p, got, tt.want)
		}
	}
}

func TestReadLargeFile(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 65 MiB file")
	}
	f := newFixture(t)
	p := filepath.Join(f.ws, "big.txt")
	line := strings.Repeat("z", 63) + "\n" // 64 bytes
	const lines = 65 << 20 / 64
	fh, err := os.Create(p)
	must(t, err)
	chunk := strings.Repeat(line, 1<<14)
	for range lines / (1 << 14) {
		_, err := fh.WriteString(chunk)
		must(t, err)
	}
	must(t, fh.Close())
	ctx := context.Background()
	got, err := f.svc.Read(ctx, p, lines-1, 5)
	if err != nil || got != line+line {
		t.Errorf("tail lines: %q, %v", got, err)
	}
	all, err := f.svc.Read(ctx, p, 0, 0)
	if err != nil || len(all) != lines*64 {
		t.Errorf("whole file: %d bytes, %v", len(all), err)
	}
}

// A NUL byte anywhere in a path is refused by every operation, instead of
// being cleaned into another path (ws/nul\x00../../x.txt is not ws/x.txt).
func TestNULPaths(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for _, p := range []string{
		filepath.Join(f.ws, "nul") + "\x00../../x.txt",
		filepath.Join(f.ws, "a.txt\x00"),
		f.ws + "/\x00/a.txt",
	} {
		for name, err := range map[string]error{
			"resolve": func() error { _, err := f.svc.Resolve(p); return err }(),
			"read":    func() error { _, err := f.svc.Read(ctx, p, 0, 0); return err }(),
			"write":   func() error { _, err := f.svc.Write(ctx, p, []byte("x")); return err }(),
			"observe": func() error { _, err := f.svc.Observe(ctx, p); return err }(),
			"check":   func() error { _, err := f.svc.CheckWrite(p); return err }(),
			"contains": func() error {
				_, err := Contains([]string{f.ws}, p)
				return err
			}(),
		} {
			if !errors.Is(err, ErrNUL) {
				t.Errorf("%s %q: %v, want ErrNUL", name, p, err)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(f.ws, "x.txt")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("x.txt was written: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(f.ws, "a.txt")); string(b) != "hello\n" {
		t.Errorf("a.txt = %q", b)
	}
}

// Protected paths (tai's own files) are not written, by either spelling;
// the rest of the workspace is.
func TestProtect(t *testing.T) {
	f := newFixture(t)
	f.svc.Protect(filepath.Join(f.ws, "sub"), filepath.Join(f.ws, "a.txt"), "relative/ignored", "")
	ctx := context.Background()
	for _, p := range []string{
		filepath.Join(f.ws, "a.txt"),
		filepath.Join(f.ws, "sub", "b.txt"),
		filepath.Join(f.ws, "sub", "new", "c.txt"),
		filepath.Join(f.ws, "in-link", "b.txt"), // through a symlink to sub
		filepath.Join(f.ws, "b-link"),
	} {
		var pe *ProtectedError
		if _, err := f.svc.Write(ctx, p, []byte("x")); !errors.As(err, &pe) {
			t.Errorf("write %s: %v, want a ProtectedError", p, err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(f.ws, "a.txt")); string(b) != "hello\n" {
		t.Errorf("a.txt = %q", b)
	}
	if _, err := os.Stat(filepath.Join(f.ws, "sub", "new")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a directory was made in a protected one: %v", err)
	}
	if _, err := f.svc.Write(ctx, filepath.Join(f.ws, "subway.txt"), []byte("x")); err != nil {
		t.Errorf("a sibling of a protected directory: %v", err)
	}
}

// Hidden paths (the secrets the sandbox hides) are neither read nor
// written nor resolved, by any spelling: directly, below, through a
// symlink, through "..", and through a symlink to the hidden path itself;
// the rest of the workspace is served.
func TestHide(t *testing.T) {
	f := newFixture(t)
	ssh := filepath.Join(f.ws, ".ssh")
	if err := os.MkdirAll(ssh, 0o700); err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(ssh, "id_rsa")
	if err := os.WriteFile(key, []byte("KEY\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"key-link": key, "ssh-link": ssh} {
		if err := os.Symlink(target, filepath.Join(f.ws, name)); err != nil {
			t.Fatal(err)
		}
	}
	f.svc.Hide(ssh, "relative/ignored", "")
	ctx := context.Background()
	for _, p := range []string{
		key,
		ssh,
		filepath.Join(f.ws, "sub", "..", ".ssh", "id_rsa"),
		filepath.Join(f.ws, "key-link"),
		filepath.Join(f.ws, "ssh-link", "id_rsa"),
		filepath.Join(ssh, "new"),
	} {
		var se *SecretError
		if text, err := f.svc.Read(ctx, p, 0, 0); !errors.As(err, &se) {
			t.Errorf("read %s: %q, %v; want a SecretError", p, text, err)
		}
		if _, err := f.svc.Write(ctx, p, []byte("x")); !errors.As(err, &se) {
			t.Errorf("write %s: %v, want a SecretError", p, err)
		}
		if _, err := f.svc.Resolve(p); !errors.As(err, &se) {
			t.Errorf("resolve %s: %v, want a SecretError", p, err)
		}
	}
	if b, _ := os.ReadFile(key); string(b) != "KEY\n" {
		t.Errorf("id_rsa = %q", b)
	}
	if text, err := f.svc.Read(ctx, filepath.Join(f.ws, "a.txt"), 0, 0); err != nil || text != "hello\n" {
		t.Errorf("a.txt beside the secret: %q, %v", text, err)
	}
}

// The check after the open: a file that is a hidden one, reached by a
// path resolve let through (a symlink swapped in between), is refused.
func TestHidesOpen(t *testing.T) {
	f := newFixture(t)
	secret := filepath.Join(f.ws, "sub", "b.txt")
	f.svc.Hide(secret)
	fh, err := os.Open(secret)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var se *SecretError
	if err := f.svc.hidesOpen(filepath.Join(f.ws, "innocent"), fh); !errors.As(err, &se) {
		t.Errorf("hidesOpen = %v, want a SecretError", err)
	}
	other, err := os.Open(filepath.Join(f.ws, "a.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := f.svc.hidesOpen(filepath.Join(f.ws, "a.txt"), other); err != nil {
		t.Errorf("hidesOpen of another file: %v", err)
	}
}
