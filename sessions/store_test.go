package sessions

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestLast(t *testing.T) {
	ctx := context.Background()
	s := Open(t.TempDir())
	ws, other := "/repo/a", "/repo/b"
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, r := range []Record{
		{Workspace: ws, Agent: "claude", Driver: "stream-json", SessionID: "s1", Resumable: true},
		{Workspace: ws, Agent: "qwen", Driver: "acp", SessionID: "s2", Resumable: true},
		{Workspace: ws, Agent: "claude", Driver: "stream-json", SessionID: "s3", Resumable: true},
		{Workspace: ws, Agent: "claude", Driver: "pty", SessionID: "s4", Resumable: false},
		{Workspace: other, Agent: "claude", Driver: "stream-json", SessionID: "s5", Resumable: true},
	} {
		r.Time = t0.Add(time.Duration(i) * time.Minute)
		if err := s.Add(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		ws, agent, driver, want string
	}{
		{ws, "claude", "stream-json", "s3"},
		{ws, "claude", "", "s3"}, // the PTY one is not resumable
		{ws, "qwen", "", "s2"},
		{ws, "", "", "s3"},
		{other, "claude", "", "s5"},
		{ws + "/", "claude", "", "s3"}, // the same workspace, spelled differently
		{ws, "gemini", "", ""},
		{"/repo/none", "", "", ""},
	} {
		r, err := s.Last(ctx, tc.ws, tc.agent, tc.driver)
		if tc.want == "" {
			if !errors.Is(err, ErrNone) {
				t.Errorf("Last(%s,%s,%s) = %+v, %v; want ErrNone", tc.ws, tc.agent, tc.driver, r, err)
			}
			continue
		}
		if err != nil || r.SessionID != tc.want {
			t.Errorf("Last(%s,%s,%s) = %q, %v; want %q", tc.ws, tc.agent, tc.driver, r.SessionID, err, tc.want)
		}
	}
}

// A line cut short (full disk, killed tai) costs that line only.
func TestDamagedLineSkipped(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := Open(dir)
	if err := s.Add(ctx, Record{Workspace: "/w", SessionID: "a", Resumable: true}); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(s.path("/w"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"workspace":"/w","session_id":"tru`)
	f.Close()
	if err := s.Add(ctx, Record{Workspace: "/w", SessionID: "b", Resumable: true}); err != nil {
		t.Fatal(err)
	}
	recs, bad, err := s.List(ctx, "/w")
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[0].SessionID != "a" || recs[1].SessionID != "b" || bad != 1 {
		t.Fatalf("records %+v, bad %d", recs, bad)
	}
	st, err := os.Stat(s.path("/w"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("file mode %v, %v; want 0600", st.Mode(), err)
	}
}

func TestConcurrentAddsAndCompaction(t *testing.T) {
	ctx := context.Background()
	s := Open(t.TempDir())
	big := strings.Repeat("x", 300)
	var wg sync.WaitGroup
	const writers, each = 8, 400 // ~1.3 MB of records: compaction runs
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				r := Record{Workspace: "/w", Agent: "a", SessionID: fmt.Sprintf("%d-%d", w, i), Resumable: true, Prompt: big}
				if err := s.Add(ctx, r); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	recs, bad, err := s.List(ctx, "/w")
	if err != nil || bad != 0 {
		t.Fatalf("list: %v, %d bad lines", err, bad)
	}
	if len(recs) < keep || len(recs) > writers*each {
		t.Fatalf("%d records after compaction", len(recs))
	}
	st, _ := os.Stat(s.path("/w"))
	if st.Size() > 2*maxBytes {
		t.Fatalf("file is %d bytes: compaction did not run", st.Size())
	}
	left, _ := filepath.Glob(filepath.Join(s.dir, ".*.tmp-*"))
	if len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

// A store file far larger than Add lets it grow is read from its end only:
// the newest records are listed, and memory stays bounded.
func TestListReadsAHugeFileFromItsEnd(t *testing.T) {
	dir, ws := t.TempDir(), t.TempDir()
	s := Open(dir)
	ctx := context.Background()
	if err := s.Add(ctx, Record{Workspace: ws, Agent: "a", SessionID: "old"}); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(s.path(ws), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	junk := bytes.Repeat([]byte("x"), 1<<20)
	for range (maxRead >> 20) + 2 {
		f.Write(junk)
	}
	line, _ := json.Marshal(Record{Workspace: filepath.Clean(ws), Agent: "a", SessionID: "newest"})
	f.Write(append(append([]byte("\n"), line...), '\n'))
	f.Close()
	recs, bad, err := s.List(ctx, ws)
	if err != nil || len(recs) != 1 || recs[0].SessionID != "newest" || bad == 0 {
		t.Fatalf("recs %+v bad %d err %v", recs, bad, err)
	}
}
