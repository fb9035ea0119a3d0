// Package auditlog reads a tai audit log in the e2e tests, entry by entry.
package auditlog

import (
	"bufio"
	"encoding/json"
	"os"
	"testing"

	"github.com/tai-dev/tai/audit"
)

// Read returns every entry of the log at path; a line that does not
// decode fails the test.
func Read(t testing.TB, path string) []audit.Entry {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []audit.Entry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), audit.MaxLineSize+1)
	for sc.Scan() {
		var e audit.Entry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("audit line: %v", err)
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	return out
}

// First returns the first entry of kind.
func First(entries []audit.Entry, kind string) (audit.Entry, bool) {
	for _, e := range entries {
		if e.Kind == kind {
			return e, true
		}
	}
	return audit.Entry{}, false
}
