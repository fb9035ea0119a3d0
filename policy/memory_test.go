package policy

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tai-dev/tai/driver"
)

// countingPrompter answers every question the same way and counts them.
type countingPrompter struct {
	ans   Answer
	asked atomic.Int32
	delay time.Duration
}

func (c *countingPrompter) Ask(ctx context.Context, req driver.PermissionRequest) (Answer, error) {
	c.asked.Add(1)
	time.Sleep(c.delay)
	return c.ans, nil
}

var fixedNow = func() time.Time { return time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC) }

func TestMemoryKey(t *testing.T) {
	ws, home := testWS(t)
	e := engine(t, Config{}, Flags{}, Options{Workspace: ws, Home: home})
	tests := []struct {
		req  driver.PermissionRequest
		want string
	}{
		{execReq("go   test ./..."), "execute:go test ./..."},
		{execArgv("bash", "-lc", "go test ./..."), "execute:go test ./..."}, // the same thing, asked by another agent
		{execReq("go test ./... && rm -rf x"), "execute:go test ./... && rm -rf x"},
		{fileReq("edit", filepath.Join(ws, "src/b.go"), filepath.Join(ws, "a.go")), "edit:a.go,src/b.go"},
		{fileReq("edit", "/etc/hosts"), "edit:/etc/hosts"},
		{driver.PermissionRequest{ToolCall: driver.ToolCall{Kind: "fetch", RawInput: rawJSON(map[string]string{"url": "HTTPS://user@Docs.rs/serde?x=1"})}}, "fetch:https://docs.rs"},
		{driver.PermissionRequest{ToolCall: driver.ToolCall{Kind: "other", Name: "mcp__gh__create_issue", Title: "Create issue #5"}}, "other:tool=mcp__gh__create_issue"},
		{driver.PermissionRequest{ToolCall: driver.ToolCall{Kind: "edit", Title: "Write a.txt"}}, "edit:tool=Write a.txt"},
		{driver.PermissionRequest{ToolCall: driver.ToolCall{Kind: "switch_mode", RawInput: rawJSON(map[string]string{"from": "plan", "to": "code"})}}, "switch_mode:code"},
	}
	for _, tt := range tests {
		if got := e.MemoryKey(tt.req); got != tt.want {
			t.Errorf("MemoryKey = %q, want %q", got, tt.want)
		}
	}
}

func TestAlwaysIsNarrow(t *testing.T) {
	ws, home := testWS(t)
	p := &countingPrompter{ans: AllowAlways}
	e := engine(t, Config{}, Flags{}, Options{Workspace: ws, Home: home, Prompter: p, Now: fixedNow})
	check(t, e, execReq("go test ./..."), want{"allow", driver.ByHuman})
	d := check(t, e, execReq("go test ./..."), want{"allow", driver.ByRemembered})
	if !strings.Contains(d.Reason, "2026-03-04T05:06:07Z") || !strings.Contains(d.Reason, "session") {
		t.Errorf("reason %q should say when and for which scope", d.Reason)
	}
	p.ans = DenyOnce
	check(t, e, execReq("go test ./... && rm -rf x"), want{"deny", driver.ByHuman}) // not covered: asked again
	check(t, e, execReq("rm -rf x"), want{"deny", driver.ByHuman})
	if n := p.asked.Load(); n != 3 {
		t.Fatalf("asked %d times, want 3", n)
	}
}

func TestRememberedNeverBeatsTheFloorOrDenyRules(t *testing.T) {
	ws, home := testWS(t)
	mem := NewMemory(ScopeRun)
	for _, k := range []string{"execute:rm -rf /", "execute:git push --force origin main", "execute:npm publish"} {
		_ = mem.Remember(k, Remembered{Allow: true, At: fixedNow()})
	}
	e := engine(t, Config{Mode: Ask}, Flags{Deny: []string{"execute:npm publish*"}}, Options{Workspace: ws, Home: home, Memory: mem})
	check(t, e, execReq("rm -rf /"), want{"deny", "rule:floor-rm-root"})
	check(t, e, execReq("git push --force origin main"), want{"deny", "rule:floor-git-force-push"})
	check(t, e, execReq("npm publish"), want{"deny", "rule:flag-1"})

	// A remembered deny beats an allow rule; a remembered allow answers an ask rule.
	_ = mem.Remember("execute:make deploy", Remembered{Allow: false, At: fixedNow()})
	_ = mem.Remember("execute:git push origin x", Remembered{Allow: true, At: fixedNow()})
	e = engine(t, Config{}, Flags{Allow: []string{"execute:make *"}, Ask: []string{"execute:git push*"}}, Options{Workspace: ws, Home: home, Memory: mem})
	check(t, e, execReq("make deploy"), want{"deny", driver.ByRemembered})
	check(t, e, execReq("git push origin x"), want{"allow", driver.ByRemembered})
	// A remembered allow does not override deny-all, which never asks.
	e = engine(t, Config{Mode: DenyAll}, Flags{}, Options{Workspace: ws, Home: home, Memory: mem})
	check(t, e, execReq("git push origin x"), want{"deny", driver.ByDefault})
}

func TestMemorySharedAcrossEngines(t *testing.T) {
	ws, home := testWS(t)
	mem := NewMemory(ScopeRun)
	p := &countingPrompter{ans: AllowAlways, delay: 20 * time.Millisecond}
	var engines []*Engine
	for i := 0; i < 5; i++ {
		engines = append(engines, engine(t, Config{}, Flags{}, Options{Workspace: ws, Home: home, Prompter: p, Memory: mem, Now: fixedNow}))
	}
	// Five agents ask the same thing at once: one question, five answers.
	var wg sync.WaitGroup
	decisions := make([]driver.PermissionDecision, len(engines))
	for i, e := range engines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			decisions[i], _ = e.Decide(context.Background(), execArgv("bash", "-c", "go test ./..."))
		}()
	}
	wg.Wait()
	if n := p.asked.Load(); n != 1 {
		t.Fatalf("asked %d times, want 1", n)
	}
	humans := 0
	for _, d := range decisions {
		if d.Verdict != driver.VerdictAllow {
			t.Fatalf("decision %+v", d)
		}
		if d.DecidedBy == driver.ByHuman {
			humans++
		} else if d.DecidedBy != driver.ByRemembered || !strings.Contains(d.Reason, "for the run") {
			t.Fatalf("decision %+v", d)
		}
	}
	if humans != 1 {
		t.Fatalf("%d human decisions, want 1", humans)
	}
	// A separate memory does not know.
	other := engine(t, Config{}, Flags{}, Options{Workspace: ws, Home: home})
	check(t, other, execReq("go test ./..."), want{"deny", driver.ByDefault})
}

func TestPersistentMemory(t *testing.T) {
	ws, home := testWS(t)
	t.Setenv("XDG_STATE_HOME", filepath.Join(home, ".state"))
	mem, err := OpenWorkspaceMemory(ws)
	if err != nil {
		t.Fatal(err)
	}
	file := mem.Path()
	if !strings.HasPrefix(file, filepath.Join(home, ".state", "tai", "policy-memory")) {
		t.Fatalf("memory file %s", file)
	}
	p := &countingPrompter{ans: AllowAlways}
	e := engine(t, Config{}, Flags{}, Options{Workspace: ws, Home: home, Prompter: p, Memory: mem, Now: fixedNow})
	check(t, e, fileReq("edit", filepath.Join(ws, "src/a.go")), want{"allow", driver.ByHuman})
	p.ans = DenyAlways
	check(t, e, execReq("make deploy"), want{"deny", driver.ByHuman})

	// A new process: a new memory and engine, no terminal.
	mem2, err := OpenWorkspaceMemory(ws)
	if err != nil {
		t.Fatal(err)
	}
	e2 := engine(t, Config{}, Flags{}, Options{Workspace: ws, Home: home, Memory: mem2})
	d := check(t, e2, fileReq("edit", filepath.Join(ws, "src/a.go")), want{"allow", driver.ByRemembered})
	if !strings.Contains(d.Reason, "workspace") || !strings.Contains(d.Reason, file) {
		t.Errorf("reason %q", d.Reason)
	}
	check(t, e2, execReq("make deploy"), want{"deny", driver.ByRemembered})
	check(t, e2, fileReq("edit", filepath.Join(ws, "src/b.go")), want{"deny", driver.ByDefault})

	// What one process remembers, the other sees without reopening.
	p.ans = AllowAlways
	check(t, e, execReq("go vet ./..."), want{"allow", driver.ByHuman})
	check(t, e2, execReq("go vet ./..."), want{"allow", driver.ByRemembered})

	// The file: private, readable, naming the workspace.
	st, err := os.Stat(file)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("stat %v %v", st.Mode(), err)
	}
	b, _ := os.ReadFile(file)
	var mf memoryFile
	if err := json.Unmarshal(b, &mf); err != nil || mf.Version != 1 || mf.Workspace != ws || !mf.Entries["execute:make deploy"].At.Equal(fixedNow()) {
		t.Fatalf("file %s: %v", b, err)
	}
	// Forget.
	if err := mem2.Forget("execute:make deploy"); err != nil {
		t.Fatal(err)
	}
	if _, ok := mem.Lookup("execute:make deploy"); ok {
		t.Error("forgotten entry still there")
	}
	// Agents may not write the memory file, even in yolo.
	e3 := engine(t, Config{Mode: Yolo, WriteRoots: []string{filepath.Dir(file)}}, Flags{}, Options{Workspace: ws, Home: home, Memory: mem2})
	check(t, e3, fileReq("edit", file), want{"deny", "rule:floor-policy-files"})

	// A broken file is an error, not an empty memory.
	if err := os.WriteFile(file, []byte("{broken"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenMemory(file); err == nil {
		t.Error("broken memory file accepted")
	}
}

func TestPersistentMemoryConcurrentWriters(t *testing.T) {
	file := filepath.Join(t.TempDir(), "m.json")
	var mems []*Memory
	for i := 0; i < 4; i++ {
		m, err := OpenMemory(file)
		if err != nil {
			t.Fatal(err)
		}
		mems = append(mems, m)
	}
	var wg sync.WaitGroup
	for i, m := range mems {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 10; j++ {
				if err := m.Remember(strings.Repeat("k", i+1)+string(rune('a'+j)), Remembered{Allow: true, At: fixedNow()}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	m, err := OpenMemory(file)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(m.Entries()); n != 40 {
		t.Fatalf("%d entries after 4 concurrent writers of 10, want 40", n)
	}
}

func TestParseScope(t *testing.T) {
	for in, want := range map[string]Scope{"": ScopeSession, "session": ScopeSession, "run": ScopeRun, "fleet": ScopeRun, "workspace": ScopeWorkspace} {
		if got, err := ParseScope(in); err != nil || got != want {
			t.Errorf("ParseScope(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParseScope("forever"); err == nil {
		t.Error("accepted forever")
	}
}
