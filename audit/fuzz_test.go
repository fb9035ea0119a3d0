package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tai-dev/tai/redact"
)

// encodeLog builds a log in memory with the same encoder Append uses, so the
// fuzzer can try arbitrary kinds, sessions and data without touching disk.
func encodeLog(kinds, sessions []string, data [][]byte) []byte {
	var out []byte
	prev := GenesisPrev
	ts := time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC)
	for i := range kinds {
		buf := appendBody(nil, uint64(i+1), ts, kinds[i], "run", sessions[i], "", data[i], prev)
		sum := sha256.Sum256(append(buf, '}'))
		buf = append(buf, `,"hash":"`...)
		buf = hex.AppendEncode(buf, sum[:])
		buf = append(buf, `"}`...)
		line := sha256.Sum256(buf)
		prev = hex.EncodeToString(line[:])
		out = append(append(out, buf...), '\n')
	}
	return out
}

func seedLog(f *testing.F) []byte {
	dir := f.TempDir()
	path := filepath.Join(dir, "seed.jsonl")
	l, err := Open(path, Options{Logger: quiet})
	if err != nil {
		f.Fatal(err)
	}
	l.Append(KindRunStart, "", map[string]string{"v": "1"})
	l.Append(KindPrompt, "s", Prompt{Text: "hi \"there\"\n"})
	l.Append(KindRunEnd, "", nil)
	if err := l.Close(); err != nil {
		f.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	return b
}

func FuzzVerify(f *testing.F) {
	seed := seedLog(f)
	f.Add(seed, "prompt", "s1", "hello")
	f.Add(seed[:len(seed)-7], "\xff\x00", "", `{"a":1}`)
	f.Add([]byte("\n\n{}\n"), "k", "\u2028", "")
	f.Add([]byte(`{"seq":1,"hash":"`+strings.Repeat("a", 64)+`"}`), "x", "y", "z")
	f.Fuzz(func(t *testing.T, b []byte, kind, session, text string) {
		// Arbitrary bytes never panic and the report is self-consistent.
		rep, err := Verify(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if rep.OK != (rep.FirstBad == 0) || rep.OK != (rep.Problem == "") || rep.Entries < 0 {
			t.Fatalf("inconsistent report %+v", rep)
		}
		if rep.OK && rep.Entries != bytes.Count(b, []byte("\n")) {
			t.Fatalf("OK with %d entries but %d lines", rep.Entries, bytes.Count(b, []byte("\n")))
		}

		// A freshly encoded log with arbitrary content verifies.
		if kind == "" {
			kind = "k"
		}
		data, _ := json.Marshal(map[string]string{"text": text})
		raw := redact.Default().Bytes(data)
		log := encodeLog([]string{kind, KindPrompt, KindRunEnd}, []string{session, session, ""}, [][]byte{raw, nil, data})
		rep, err = Verify(bytes.NewReader(log))
		if err != nil || !rep.OK || rep.Entries != 3 || !rep.Ended {
			t.Fatalf("fresh log does not verify: %+v %v\n%s", rep, err, log)
		}
		// Strings round-trip as encoding/json would have them.
		var wantKind string
		jk, _ := json.Marshal(kind)
		json.Unmarshal(jk, &wantKind)
		var n int
		if err := Read(bytes.NewReader(log), func(_ int, e Entry) error {
			n++
			if n == 1 && e.Kind != wantKind {
				t.Fatalf("kind %q round-tripped as %q", kind, e.Kind)
			}
			return nil
		}); err != nil || n != 3 {
			t.Fatalf("Read: %d entries, %v", n, err)
		}
	})
}

func FuzzRead(f *testing.F) {
	f.Add(seedLog(f))
	f.Add([]byte("{\"kind\":\"x\"}\n\xff\n{"))
	f.Fuzz(func(t *testing.T, b []byte) {
		last := 0
		err := Read(bytes.NewReader(b), func(line int, e Entry) error {
			if line <= last || e.Kind == "" {
				t.Fatalf("line %d after %d, kind %q", line, last, e.Kind)
			}
			last = line
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		// Render is strict: a line that is not an entry is named.
		var sb strings.Builder
		var bad *BadLineError
		if err := Render(&sb, bytes.NewReader(b), Filter{}); err != nil && !errors.As(err, &bad) {
			t.Fatal(err)
		}
	})
}
