package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tai-dev/tai/redact"
)

func TestMain(m *testing.M) {
	if path := os.Getenv(helperEnv); path != "" {
		runKillHelper(path)
		return
	}
	goleak.VerifyTestMain(m)
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// fakeClock returns 2025-01-02T03:04:05Z + n ms on the n-th call.
func fakeClock() func() time.Time {
	var n atomic.Int64
	base := time.Date(2025, 1, 2, 3, 4, 5, 0, time.FixedZone("X", 3600))
	return func() time.Time { return base.Add(time.Duration(n.Add(1)) * time.Millisecond) }
}

func openT(t testing.TB, path string, opts Options) *Log {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = quiet
	}
	l, err := Open(path, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func verifyFile(t *testing.T, path string) Report {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rep, err := Verify(f)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	return rep
}

// writeLog writes a closed log with n prompt entries between run.start and
// run.end (n+2 lines) and returns its bytes.
func writeLog(t *testing.T, n int) (string, []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "run.jsonl")
	l := openT(t, path, Options{Run: "r1", Clock: fakeClock()})
	must(t, l.Append(KindRunStart, "", map[string]any{"version": "test"}))
	for i := range n {
		must(t, l.Append(KindPrompt, "sess-1", Prompt{Text: fmt.Sprintf("prompt %d", i)}))
	}
	must(t, l.Append(KindRunEnd, "", nil))
	must(t, l.Close())
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, b
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestAppendVerifyRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.jsonl")
	l := openT(t, path, Options{Run: "run-1", Clock: fakeClock()})
	exit := 0
	entries := []struct {
		kind, session string
		data          any
	}{
		{KindRunStart, "", map[string]any{"args": []string{"tai", "run"}}},
		{KindSessionStart, "s1", nil},
		{KindPrompt, "s1", Prompt{Text: "fix the bug\nplease \"now\" \u2028 \xff"}},
		{KindPermissionRequest, "s1", PermissionRequest{Tool: "edit", Title: "Edit main.go", Options: []string{"allow_once", "reject_once"}}},
		{KindPermissionDecision, "s1", PermissionDecision{Decision: "allow", Option: "allow_once", DecidedBy: "rule:edits", Reason: "in workspace"}},
		{KindFileWrite, "s1", FileWrite{Path: "main.go", Size: 12, HashAfter: strings.Repeat("a", 64)}},
		{KindTerminal, "s1", Terminal{Command: "go", Args: []string{"test"}, Cwd: "/w", ExitStatus: &exit}},
		{KindSessionEnd, "s1", json.RawMessage(" {\n \"reason\": \"done\" }\n")},
		{KindRunEnd, "", nil},
	}
	for _, e := range entries {
		must(t, l.Append(e.kind, e.session, e.data))
	}
	seq, head := l.Head()
	must(t, l.Close())

	rep := verifyFile(t, path)
	if !rep.OK || rep.Entries != len(entries) || !rep.Ended || rep.LastSeq != seq || rep.Head != head || rep.Problem != "" {
		t.Fatalf("report = %+v, head %d %s", rep, seq, head)
	}

	f, _ := os.Open(path)
	defer f.Close()
	var got []Entry
	must(t, Read(f, func(line int, e Entry) error {
		if line != len(got)+1 {
			t.Errorf("line %d, want %d", line, len(got)+1)
		}
		got = append(got, e)
		return nil
	}))
	if len(got) != len(entries) {
		t.Fatalf("read %d entries", len(got))
	}
	for i, e := range got {
		if e.Seq != uint64(i+1) || e.Kind != entries[i].kind || e.Session != entries[i].session || e.Run != "run-1" {
			t.Errorf("entry %d = %+v", i, e)
		}
		if e.Time.Location() != time.UTC || e.Time.IsZero() {
			t.Errorf("entry %d time %v not UTC", i, e.Time)
		}
	}
	if got[0].Prev != GenesisPrev {
		t.Errorf("genesis prev = %q", got[0].Prev)
	}
	if string(got[7].Data) != `{"reason":"done"}` {
		t.Errorf("raw data not compacted: %s", got[7].Data)
	}
	var p Prompt
	must(t, json.Unmarshal(got[2].Data, &p))
	if p.Text != "fix the bug\nplease \"now\" \u2028 \ufffd" {
		t.Errorf("prompt text = %q", p.Text)
	}

	// The documented hash definition, recomputed independently.
	raw, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
	for i, line := range lines {
		idx := strings.LastIndex(line, `,"hash":"`)
		sum := sha256.Sum256([]byte(line[:idx] + "}"))
		if got[i].Hash != hex.EncodeToString(sum[:]) {
			t.Errorf("line %d: hash is not sha256 of the line without its hash member", i+1)
		}
		if i > 0 {
			prev := sha256.Sum256([]byte(lines[i-1]))
			if got[i].Prev != hex.EncodeToString(prev[:]) {
				t.Errorf("line %d: prev is not sha256 of the previous line", i+1)
			}
		}
	}
}

func TestConcurrentAppend(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.jsonl")
	l := openT(t, path, Options{SyncInterval: time.Millisecond})
	const workers, per = 8, 200
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range per {
				if err := l.Append(KindPrompt, fmt.Sprintf("s%d", w), map[string]int{"i": i}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	must(t, l.Close())
	rep := verifyFile(t, path)
	if !rep.OK || rep.Entries != workers*per {
		t.Fatalf("report = %+v", rep)
	}
	// Per session, entries are in append order.
	next := map[string]int{}
	f, _ := os.Open(path)
	defer f.Close()
	must(t, Read(f, func(_ int, e Entry) error {
		var d struct{ I int }
		must(t, json.Unmarshal(e.Data, &d))
		if d.I != next[e.Session] {
			t.Errorf("session %s: got i=%d, want %d", e.Session, d.I, next[e.Session])
		}
		next[e.Session]++
		return nil
	}))
}

// rehash recomputes a line's hash after it was edited, as a careful forger
// would.
func rehash(line string) string {
	idx := strings.LastIndex(line, `,"hash":"`)
	sum := sha256.Sum256([]byte(line[:idx] + "}"))
	return line[:idx] + `,"hash":"` + hex.EncodeToString(sum[:]) + `"}`
}

func TestVerifyTampering(t *testing.T) {
	_, orig := writeLog(t, 8) // 10 lines
	lines := strings.SplitAfter(string(orig), "\n")
	lines = lines[:len(lines)-1] // trailing ""
	if len(lines) != 10 {
		t.Fatalf("%d lines", len(lines))
	}
	join := func(ls []string) string { return strings.Join(ls, "") }
	edit := func(i int, f func(string) string) string {
		ls := append([]string(nil), lines...)
		ls[i] = f(strings.TrimSuffix(ls[i], "\n")) + "\n"
		return join(ls)
	}
	without := func(i int) string {
		return join(append(append([]string(nil), lines[:i]...), lines[i+1:]...))
	}
	swap := func(i, j int) string {
		ls := append([]string(nil), lines...)
		ls[i], ls[j] = ls[j], ls[i]
		return join(ls)
	}
	tests := []struct {
		name     string
		in       string
		ok       bool
		firstBad int
		entries  int
		partial  bool
		problem  string
		ended    bool
	}{
		{name: "intact", in: string(orig), ok: true, entries: 10, ended: true},
		{name: "empty file", in: "", ok: true},
		{name: "edit a field", in: edit(4, func(s string) string { return strings.Replace(s, "prompt 3", "prompt X", 1) }),
			firstBad: 5, entries: 4, problem: "line 5: hash mismatch (entry edited)"},
		{name: "edit a field and recompute hash", in: edit(4, func(s string) string { return rehash(strings.Replace(s, "prompt 3", "prompt X", 1)) }),
			firstBad: 6, entries: 5, problem: "line 6: prev does not match line 5"},
		{name: "edit whitespace", in: edit(2, func(s string) string { return strings.Replace(s, `"seq":`, `"seq": `, 1) }),
			firstBad: 3, entries: 2, problem: "hash mismatch"},
		{name: "edit seq and recompute hash", in: edit(2, func(s string) string { return rehash(strings.Replace(s, `"seq":3`, `"seq":4`, 1)) }),
			firstBad: 3, entries: 2, problem: "seq 4, want 3"},
		{name: "swap two lines", in: swap(3, 4), firstBad: 4, entries: 3, problem: "line 4: seq 5, want 4"},
		{name: "delete a middle line", in: without(5), firstBad: 6, entries: 5, problem: "line 6: seq 7, want 6 (entry deleted"},
		{name: "delete the first line", in: without(0), firstBad: 1, entries: 0, problem: "line 1: seq 2, want 1"},
		{name: "duplicate a line", in: join(append(append(append([]string(nil), lines[:4]...), lines[3]), lines[4:]...)),
			firstBad: 5, entries: 4, problem: "seq 4, want 5 (entries reordered or duplicated)"},
		// Undetectable from the file alone: the result is a valid, shorter
		// chain. Ended=false and LastSeq reveal it to a reader who expects a
		// finished run or holds an anchor.
		{name: "delete the last line", in: without(9), ok: true, entries: 9, ended: false},
		{name: "truncate mid-line", in: string(orig[:len(orig)-40]), firstBad: 10, entries: 9, partial: true,
			problem: "line 10: partial last line (truncated write)"},
		{name: "truncate only the newline", in: string(orig[:len(orig)-1]), firstBad: 10, entries: 10, partial: true,
			problem: "line 10: last line lacks its newline", ended: true},
		{name: "blank line", in: join(lines[:2]) + "\n" + join(lines[2:]), firstBad: 3, entries: 2, problem: "line 3: empty line"},
		{name: "garbage line", in: join(lines[:2]) + "hello\n" + join(lines[2:]), firstBad: 3, entries: 2, problem: "malformed entry"},
		{name: "hash-shaped garbage", in: `{"x":1,"hash":"` + strings.Repeat("0", 64) + `"}` + "\n", firstBad: 1, problem: "hash mismatch"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := Verify(strings.NewReader(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if rep.OK != tt.ok || rep.FirstBad != tt.firstBad || rep.Entries != tt.entries || rep.Partial != tt.partial || rep.Ended != tt.ended {
				t.Errorf("report = %+v\nwant ok=%v firstBad=%d entries=%d partial=%v ended=%v", rep, tt.ok, tt.firstBad, tt.entries, tt.partial, tt.ended)
			}
			if !strings.Contains(rep.Problem, tt.problem) || (tt.problem == "") != (rep.Problem == "") {
				t.Errorf("problem = %q, want it to contain %q", rep.Problem, tt.problem)
			}
		})
	}
}

func TestVerifyLongLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.jsonl")
	l := openT(t, path, Options{})
	big := strings.Repeat("x", 200<<10) // longer than the bufio buffer
	must(t, l.Append(KindPrompt, "", Prompt{Text: big}))
	must(t, l.Append(KindRunEnd, "", nil))
	must(t, l.Close())
	if rep := verifyFile(t, path); !rep.OK || rep.Entries != 2 {
		t.Fatalf("report = %+v", rep)
	}
}

func TestReopenContinuesChain(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.jsonl")
	for round := range 3 {
		l := openT(t, path, Options{Run: "r"})
		if seq, _ := l.Head(); seq != uint64(round*2) {
			t.Fatalf("round %d: reopened at seq %d", round, seq)
		}
		must(t, l.Append(KindSessionStart, "s", nil))
		must(t, l.Append(KindSessionEnd, "s", nil))
		must(t, l.Close())
	}
	if rep := verifyFile(t, path); !rep.OK || rep.Entries != 6 || rep.LastSeq != 6 {
		t.Fatalf("report = %+v", rep)
	}
}

func TestFileModes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state", "tai", "audit")
	path := filepath.Join(dir, "r.jsonl")
	l := openT(t, path, Options{})
	must(t, l.Close())
	for p, want := range map[string]os.FileMode{path: 0o600, dir: 0o700 | os.ModeDir} {
		st, err := os.Stat(p)
		must(t, err)
		if st.Mode() != want {
			t.Errorf("%s: mode %v, want %v", p, st.Mode(), want)
		}
	}

	// An existing file with loose permissions is tightened.
	loose := filepath.Join(t.TempDir(), "loose.jsonl")
	must(t, os.WriteFile(loose, nil, 0o644))
	must(t, os.Chmod(loose, 0o644))
	l = openT(t, loose, Options{})
	must(t, l.Close())
	if st, _ := os.Stat(loose); st.Mode().Perm() != 0o600 {
		t.Errorf("loose file mode %v", st.Mode())
	}
}

func TestRedaction(t *testing.T) {
	secretKey := "sk-" + "ant-" + strings.Repeat("Zq9_", 8)
	red, err := redact.New(redact.Options{Literals: []string{"env-literal-value"}})
	must(t, err)
	path := filepath.Join(t.TempDir(), "run.jsonl")
	l := openT(t, path, Options{Redactor: red})
	must(t, l.Append(KindSessionStart, "s", map[string]any{
		"mcpServers": []any{map[string]any{
			"name":    "gh",
			"env":     []map[string]string{{"name": "GITHUB_TOKEN", "value": "plain-mcp-secret"}},
			"headers": []map[string]string{{"name": "Authorization", "value": "Basic abcdefgh"}},
		}},
	}))
	must(t, l.Append(KindPrompt, "s", Prompt{Text: "use " + secretKey + " and env-literal-value"}))
	must(t, l.Append(KindPermissionRequest, "s", PermissionRequest{Request: json.RawMessage(`{"api_key":"raw-msg-secret"}`)}))
	// Without an explicit Redactor, the default one applies.
	l2 := openT(t, filepath.Join(t.TempDir(), "d.jsonl"), Options{})
	must(t, l2.Append(KindPrompt, "s", Prompt{Text: secretKey}))
	must(t, l.Close())
	must(t, l2.Close())

	raw, _ := os.ReadFile(path)
	raw2, _ := os.ReadFile(l2.Path())
	for _, s := range []string{secretKey, "plain-mcp-secret", "Basic abcdefgh", "env-literal-value", "raw-msg-secret"} {
		if bytes.Contains(raw, []byte(s)) || bytes.Contains(raw2, []byte(s)) {
			t.Errorf("log contains %q", s)
		}
	}
	if !bytes.Contains(raw, []byte(redact.Replacement)) || !bytes.Contains(raw2, []byte(redact.Replacement)) {
		t.Error("no redaction marker in log")
	}
	if rep := verifyFile(t, path); !rep.OK {
		t.Fatalf("report = %+v", rep)
	}
}

func TestOpenPartialTail(t *testing.T) {
	path, orig := writeLog(t, 3) // 5 lines
	must(t, os.WriteFile(path, orig[:len(orig)-30], 0o600))

	_, err := Open(path, Options{Logger: quiet})
	var ce *CorruptError
	if !errors.As(err, &ce) || !ce.Report.Partial || ce.Report.FirstBad != 5 || ce.Report.Entries != 4 {
		t.Fatalf("Open on partial tail: %v (%+v)", err, ce)
	}

	l := openT(t, path, Options{TruncatePartial: true})
	must(t, l.Append(KindRunEnd, "", nil))
	must(t, l.Close())
	rep := verifyFile(t, path)
	if !rep.OK || rep.Entries != 6 { // 4 kept + repair note + run.end
		t.Fatalf("after repair: %+v", rep)
	}
	f, _ := os.Open(path)
	defer f.Close()
	var kinds []string
	must(t, Read(f, func(_ int, e Entry) error { kinds = append(kinds, e.Kind); return nil }))
	if kinds[4] != KindError {
		t.Errorf("kinds = %v, want a repair error entry at 5", kinds)
	}
}

func TestOpenUnterminatedTailKeepsEntry(t *testing.T) {
	path, orig := writeLog(t, 1) // 3 lines
	must(t, os.WriteFile(path, orig[:len(orig)-1], 0o600))
	l := openT(t, path, Options{TruncatePartial: true})
	if seq, _ := l.Head(); seq != 4 { // 3 + repair note
		t.Fatalf("seq after repair = %d", seq)
	}
	must(t, l.Close())
	if rep := verifyFile(t, path); !rep.OK || rep.Entries != 4 {
		t.Fatalf("report = %+v", rep)
	}
}

func TestOpenRefusesTamperedLog(t *testing.T) {
	path, orig := writeLog(t, 3)
	must(t, os.WriteFile(path, bytes.Replace(orig, []byte("prompt 1"), []byte("prompt 9"), 1), 0o600))
	_, err := Open(path, Options{TruncatePartial: true, Logger: quiet})
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.Report.Partial || ce.Report.FirstBad != 3 {
		t.Fatalf("got %v", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, bytes.Replace(orig, []byte("prompt 1"), []byte("prompt 9"), 1)) {
		t.Error("Open modified a corrupt log")
	}
}

func TestLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.jsonl")
	l := openT(t, path, Options{})
	if _, err := Open(path, Options{Logger: quiet}); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open: %v, want ErrLocked", err)
	}
	must(t, l.Close())
	l2 := openT(t, path, Options{}) // released on Close
	must(t, l2.Close())
}

func TestDiskFullIsStickyError(t *testing.T) {
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skip("no /dev/full:", err)
	}
	path := filepath.Join(t.TempDir(), "run.jsonl")
	// SyncNone: no background fsync of /dev/full (which fails with EINVAL).
	l := openT(t, path, Options{SyncMode: SyncNone})
	must(t, l.Append(KindRunStart, "", nil))
	must(t, l.Sync())
	l.mu.Lock()
	real := l.f
	l.f = full
	l.mu.Unlock()
	defer real.Close()

	err1 := l.Append(KindPrompt, "s", Prompt{Text: "x"})
	if !errors.Is(err1, syscall.ENOSPC) {
		t.Fatalf("Append on full disk: %v, want ENOSPC", err1)
	}
	if err2 := l.Append(KindPrompt, "s", nil); !errors.Is(err2, syscall.ENOSPC) {
		t.Errorf("second Append: %v, want sticky ENOSPC", err2)
	}
	if err := l.Sync(); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("Sync: %v", err)
	}
	if err := l.Close(); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("Close: %v", err)
	}
	// What reached the real file still verifies.
	if rep := verifyFile(t, path); !rep.OK || rep.Entries != 1 {
		t.Errorf("report = %+v", rep)
	}
}

func TestCloseIdempotentAndClosedErrors(t *testing.T) {
	l := openT(t, filepath.Join(t.TempDir(), "r.jsonl"), Options{})
	must(t, l.Append(KindRunStart, "", nil))
	must(t, l.Sync())
	must(t, l.Close())
	must(t, l.Close())
	if err := l.Append(KindRunEnd, "", nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Append after Close: %v", err)
	}
	if err := l.Sync(); !errors.Is(err, ErrClosed) {
		t.Errorf("Sync after Close: %v", err)
	}
}

func TestAppendErrors(t *testing.T) {
	l := openT(t, filepath.Join(t.TempDir(), "r.jsonl"), Options{})
	if err := l.Append(KindPrompt, "", func() {}); err == nil {
		t.Error("unencodable data accepted")
	}
	if err := l.Append(KindPrompt, "", json.RawMessage(`{"a":`)); err == nil {
		t.Error("invalid RawMessage accepted")
	}
	if err := l.Append(KindPrompt, "", strings.Repeat("x", MaxLineSize)); !errors.Is(err, ErrTooLarge) {
		t.Errorf("huge entry: %v, want ErrTooLarge", err)
	}
	must(t, l.Append(KindRunEnd, "", nil)) // still usable: these errors are not sticky
}

// countingFile counts fsyncs.
type countingFile struct {
	*os.File
	syncs atomic.Int64
}

func (c *countingFile) Sync() error { c.syncs.Add(1); return c.File.Sync() }

func TestGroupCommitBatches(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.jsonl")
	l := openT(t, path, Options{SyncInterval: 20 * time.Millisecond})
	cf := &countingFile{File: l.f.(*os.File)}
	l.mu.Lock()
	l.f = cf
	l.mu.Unlock()
	const n = 500
	for i := range n {
		must(t, l.Append(KindPrompt, "", map[string]int{"i": i}))
	}
	// The background goroutine makes everything durable without Sync.
	deadline := time.Now().Add(10 * time.Second)
	for {
		l.mu.Lock()
		synced := l.synced
		l.mu.Unlock()
		if synced == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("synced %d of %d after 10s", synced, n)
		}
		time.Sleep(time.Millisecond)
	}
	if s := cf.syncs.Load(); s < 1 || s > n/10 {
		t.Errorf("%d fsyncs for %d appends; want batching", s, n)
	}
	must(t, l.Close())
}

func TestSyncModes(t *testing.T) {
	for _, mode := range []SyncMode{SyncGroup, SyncEvery, SyncNone} {
		path := filepath.Join(t.TempDir(), "r.jsonl")
		l := openT(t, path, Options{SyncMode: mode})
		for range 10 {
			must(t, l.Append(KindPrompt, "", nil))
		}
		must(t, l.Close())
		if rep := verifyFile(t, path); !rep.OK || rep.Entries != 10 {
			t.Errorf("mode %d: %+v", mode, rep)
		}
	}
}

func TestDefaultPath(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", "/xdg/state")
	if got := DefaultPath("run-1"); got != "/xdg/state/tai/audit/run-1.jsonl" {
		t.Errorf("got %s", got)
	}
	if got := DefaultPath("../../etc/x"); got != "/xdg/state/tai/audit/.._.._etc_x.jsonl" {
		t.Errorf("traversal not neutralized: %s", got)
	}
	t.Setenv("XDG_STATE_HOME", "relative") // ignored per the XDG spec
	t.Setenv("HOME", "/home/u")
	if got := DefaultPath("r"); got != "/home/u/.local/state/tai/audit/r.jsonl" {
		t.Errorf("fallback: %s", got)
	}
}

func TestRender(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.jsonl")
	l := openT(t, path, Options{Clock: fakeClock()})
	exit := 2
	must(t, l.Append(KindRunStart, "", map[string]string{"version": "1.0"}))
	must(t, l.Append(KindPermissionDecision, "8f2c01ab-long-session-id", PermissionDecision{
		Decision: "allow", Option: "allow_once", DecidedBy: "rule:git-ro", Reason: "read-only git"}))
	must(t, l.Append(KindFileWrite, "8f2c01ab-long-session-id", FileWrite{Path: "a.go", Size: 42, HashAfter: strings.Repeat("b", 64)}))
	must(t, l.Append(KindTerminal, "other", Terminal{Command: "go", Args: []string{"test", "./..."}, Cwd: "/w", ExitStatus: &exit}))
	must(t, l.Append(KindPrompt, "other", Prompt{Text: "evil \x1b[31m text"}))
	// A command is shown as tai ran it: an argv quoted once as a shell reads
	// it, a shell line as it is; what a terminal would act on escaped.
	must(t, l.Append(KindTerminal, "third", Terminal{Command: "sh", Args: []string{"-c", "echo hi\x1b[2K; rm x"}, Cwd: "/w", ExitStatus: &exit}))
	must(t, l.Append(KindTerminal, "third", Terminal{Command: "make test\u202e", Cwd: "/w", ExitStatus: &exit}))
	must(t, l.Close())
	raw, _ := os.ReadFile(path)

	var out strings.Builder
	must(t, Render(&out, bytes.NewReader(raw), Filter{}))
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := []string{
		"2025-01-02T02:04:05.001Z      1  -         run.start             version=1.0",
		`2025-01-02T02:04:05.002Z      2  8f2c01ab  permission.decision   allow option=allow_once by rule:git-ro reason="read-only git"`,
		"2025-01-02T02:04:05.003Z      3  8f2c01ab  file.write            a.go 42B new→bbbbbbbbbbbb",
		"2025-01-02T02:04:05.004Z      4  other     terminal.exit         $ go test ./... → exit 2 cwd=/w",
		`2025-01-02T02:04:05.005Z      5  other     prompt                "evil \x1b[31m text"`,
		`2025-01-02T02:04:05.006Z      6  third     terminal.exit         $ sh -c $'echo hi\x1b[2K; rm x' → exit 2 cwd=/w`,
		`2025-01-02T02:04:05.007Z      7  third     terminal.exit         $ make test\u202e → exit 2 cwd=/w`,
	}
	if len(lines) != len(want) {
		t.Fatalf("got:\n%s", out.String())
	}
	for i := range want {
		if lines[i] != want[i] {
			t.Errorf("line %d:\n got %q\nwant %q", i+1, lines[i], want[i])
		}
	}

	tests := []struct {
		f    Filter
		seqs string
	}{
		{Filter{Session: "8f2c"}, "2,3"},
		{Filter{Kinds: []string{"permission"}}, "2"},
		{Filter{Kinds: []string{KindFileWrite, KindRunStart}}, "1,3"},
		{Filter{Session: "other", Kinds: []string{"terminal"}}, "4"},
	}
	for _, tt := range tests {
		var js strings.Builder
		must(t, RenderJSON(&js, bytes.NewReader(raw), tt.f))
		var seqs []string
		for line := range strings.Lines(js.String()) {
			if !bytes.Contains(raw, []byte(line)) {
				t.Errorf("RenderJSON line not verbatim: %s", line)
			}
			var e Entry
			must(t, json.Unmarshal([]byte(line), &e))
			seqs = append(seqs, fmt.Sprint(e.Seq))
		}
		if got := strings.Join(seqs, ","); got != tt.seqs {
			t.Errorf("filter %+v: seqs %s, want %s", tt.f, got, tt.seqs)
		}
	}
}

func TestReadTolerant(t *testing.T) {
	_, orig := writeLog(t, 2) // 4 lines
	damaged := "garbage\n" + string(orig[:len(orig)-20])
	var lines []int
	must(t, Read(strings.NewReader(damaged), func(line int, _ Entry) error { lines = append(lines, line); return nil }))
	if fmt.Sprint(lines) != "[2 3 4]" {
		t.Errorf("lines = %v", lines)
	}
	stop := errors.New("stop")
	if err := Read(bytes.NewReader(orig), func(int, Entry) error { return stop }); err != stop {
		t.Errorf("callback error not returned: %v", err)
	}
}

func TestShortSession(t *testing.T) {
	for in, want := range map[string]string{
		"builtin-4d37a8dc4532e6f4":   "4d37a8dc",
		"8f2c01ab-long-session-id":   "8f2c01ab",
		"ses_abcdef0123":             "abcdef01",
		"short":                      "short",
		"":                           "",
		"nohyphenbutlongerthaneight": "nohyphen",
	} {
		if got := ShortSession(in); got != want {
			t.Errorf("ShortSession(%q) = %q, want %q", in, got, want)
		}
	}
}

// A fleet task's entries name the task; the filter selects them, and the
// rendering shows the task.
func TestTaskEntries(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.jsonl")
	l, err := Open(path, Options{Run: "fleet-1"})
	must(t, err)
	must(t, l.Append(KindRunStart, "", nil))
	must(t, l.AppendTask(KindPrompt, "builtin-aaaa1111", "lint", map[string]any{"text": "lint it"}))
	must(t, l.AppendTask(KindPrompt, "builtin-bbbb2222", "docs", map[string]any{"text": "write docs"}))
	must(t, l.Close())
	f, err := os.Open(path)
	must(t, err)
	defer f.Close()
	rep, err := Verify(f)
	if err != nil || !rep.OK || rep.Entries != 3 || !rep.Started {
		t.Fatalf("verify %+v %v", rep, err)
	}
	_, _ = f.Seek(0, 0)
	var out strings.Builder
	must(t, Render(&out, f, Filter{Task: "docs"}))
	if got := out.String(); strings.Count(got, "\n") != 1 || !strings.Contains(got, "docs/bbbb2222") || !strings.Contains(got, "write docs") {
		t.Fatalf("render --task docs:\n%s", got)
	}
}

// Reading stops at a line longer than MaxLineSize rather than reading an
// endless file to its end; a file that is not a log is named by its line.
func TestBoundedReading(t *testing.T) {
	rep, err := Verify(zeros{})
	if err != nil || rep.OK || rep.FirstBad != 1 || !strings.Contains(rep.Problem, "longer than") {
		t.Fatalf("verify of endless zeros: %+v %v", rep, err)
	}
	var bad *BadLineError
	if err := Render(io.Discard, zeros{}, Filter{}); !errors.As(err, &bad) || bad.Line != 1 {
		t.Fatalf("render of endless zeros: %v", err)
	}
	for in, want := range map[string]string{
		"":                                  "line 1: no entries (the file is empty)",
		"garbage\n":                         `line 1: not an audit entry: "garbage"`,
		"garbage":                           `line 1: not an audit entry: "garbage"`,
		`{"seq":1,"kind":"x"}` + "\nnope\n": `line 2: not an audit entry: "nope"`,
	} {
		err := Render(io.Discard, strings.NewReader(in), Filter{})
		if err == nil || err.Error() != want {
			t.Errorf("render %q: %v, want %s", in, err, want)
		}
	}
}

type zeros struct{}

func (zeros) Read(b []byte) (int, error) {
	clear(b)
	return len(b), nil
}

// A character device is written as is: /dev/full fails every Append with
// ENOSPC (a full disk, for tests), /dev/null takes them; neither is
// verified, locked, chmod-ed or fsynced.
func TestOpenCharDevice(t *testing.T) {
	for _, tc := range []struct {
		path    string
		wantErr error
	}{
		{"/dev/full", syscall.ENOSPC},
		{"/dev/null", nil},
	} {
		t.Run(tc.path, func(t *testing.T) {
			before, err := os.Stat(tc.path)
			if err != nil {
				t.Skipf("no %s: %v", tc.path, err)
			}
			l, err := Open(tc.path, Options{Run: "r1", Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			// Two at once: a device is not locked.
			l2, err := Open(tc.path, Options{Run: "r2", Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatalf("second open: %v", err)
			}
			l2.Close()
			err = l.Append(KindRunStart, "", map[string]any{"x": 1})
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Fatalf("Append: %v, want %v", err, tc.wantErr)
			}
			if tc.wantErr != nil && !errors.Is(l.Append(KindRunEnd, "", nil), tc.wantErr) {
				t.Error("the write error is not sticky")
			}
			if err := l.Sync(); (err == nil) != (tc.wantErr == nil) {
				t.Errorf("Sync: %v", err)
			}
			l.Close()
			after, _ := os.Stat(tc.path)
			if after.Mode() != before.Mode() {
				t.Errorf("mode changed from %v to %v", before.Mode(), after.Mode())
			}
		})
	}
}
