// Package sessions keeps, per workspace, the agent sessions tai ran there,
// so that a later run can resume the last one (`tai run --continue`) and
// `tai sessions` can list them. The store is one append-only JSONL file per
// workspace under tai's state directory, outside the workspace itself (a
// repo's files are the agent's to write, and must not steer tai).
package sessions

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/tai-dev/tai/internal/atomicfile"
	"github.com/tai-dev/tai/internal/statedir"
)

// Record is one session as tai saw it end.
type Record struct {
	Time      time.Time `json:"time"`
	Workspace string    `json:"workspace"`
	Agent     string    `json:"agent"`
	Driver    string    `json:"driver"`
	SessionID string    `json:"session_id"`
	RunID     string    `json:"run_id,omitempty"`
	// Resumable: the agent said it can load or resume sessions, so
	// --continue and --resume can come back to this one.
	Resumable bool   `json:"resumable"`
	Resumed   string `json:"resumed,omitempty"` // the session this run resumed, if any
	Status    string `json:"status"`
	ExitCode  int    `json:"exit_code"`
	Prompt    string `json:"prompt,omitempty"` // the first words, redacted
	Audit     string `json:"audit,omitempty"`
	// Deleted marks the agent's session as deleted (tai sessions rm):
	// every record of it is then neither listed nor resumed.
	Deleted bool `json:"deleted,omitempty"`
}

// StatusRunning is the status of a session's record written when it
// starts: a run killed before its end (kill -9) leaves it, so the session
// is still listed and can be continued.
const StatusRunning = "running"

// ErrNone is returned by Last when the workspace has no matching session.
var ErrNone = errors.New("no earlier session")

// maxBytes bounds a workspace's file: past it, Add keeps the newest keep
// records. Nobody lists thousands of sessions, and the file must not grow
// without end in a CI runner's long-lived home.
const (
	maxBytes = 1 << 20
	keep     = 500
	// maxRead bounds what List reads of a file that grew past maxBytes
	// anyway (Add was not the only writer).
	maxRead = 16 << 20
	maxLine = 1 << 20 // a record is far smaller
)

// Store is the state directory's sessions folder.
type Store struct{ dir string }

// Open returns the store rooted at dir (created on first write).
func Open(dir string) *Store { return &Store{dir: dir} }

// DefaultDir is $XDG_STATE_HOME/tai/sessions (else ~/.local/state/...).
func DefaultDir() string { return statedir.Dir("sessions") }

// path is the workspace's file: named by a hash of its absolute path, so
// that any path (spaces, deep trees) maps to one flat name.
func (s *Store) path(workspace string) string {
	sum := sha256.Sum256([]byte(filepath.Clean(workspace)))
	return filepath.Join(s.dir, hex.EncodeToString(sum[:12])+".jsonl")
}

// Add appends r to its workspace's file. Concurrent runs (a fleet, two
// terminals) append under an exclusive lock, one whole line each.
func (s *Store) Add(ctx context.Context, r Record) error {
	if r.Workspace == "" || r.SessionID == "" {
		return fmt.Errorf("sessions: a record needs a workspace and a session id")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return fmt.Errorf("sessions: %w", err)
	}
	line, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("sessions: %w", err)
	}
	line = append(line, '\n')
	f, err := s.lockedFile(r.Workspace)
	if err != nil {
		return err
	}
	defer f.Close()
	defer syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	// A line cut short by a full disk or a killed tai must not swallow
	// this one: start on a fresh line.
	if st, err := f.Stat(); err == nil && st.Size() > 0 {
		var last [1]byte
		if _, err := f.ReadAt(last[:], st.Size()-1); err == nil && last[0] != '\n' {
			line = append([]byte{'\n'}, line...)
		}
	}
	if _, err := f.Write(line); err != nil {
		return fmt.Errorf("sessions: %w", err)
	}
	if st, err := f.Stat(); err == nil && st.Size() > maxBytes {
		return s.compact(f)
	}
	return nil
}

// lockedFile opens the workspace's file and locks it. Compaction renames
// a new file over the old one, so a writer that waited on the old file's
// lock opens again rather than append to a file nobody reads.
func (s *Store) lockedFile(workspace string) (*os.File, error) {
	path := s.path(workspace)
	for {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_APPEND, 0o600)
		if err != nil {
			return nil, fmt.Errorf("sessions: %w", err)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
			f.Close()
			return nil, fmt.Errorf("sessions: lock: %w", err)
		}
		held, err1 := f.Stat()
		now, err2 := os.Stat(path)
		if err1 == nil && err2 == nil && os.SameFile(held, now) {
			return f, nil
		}
		f.Close() // closing drops the lock
	}
}

// compact rewrites the locked file with its newest records. The new file
// is renamed over the old one, so a crash leaves one or the other whole.
func (s *Store) compact(f *os.File) error {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("sessions: %w", err)
	}
	recs, _ := decode(f)
	if len(recs) > keep {
		recs = recs[len(recs)-keep:]
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, r := range recs {
		_ = enc.Encode(r)
	}
	if err := atomicfile.Write(f.Name(), buf.Bytes(), 0o600); err != nil {
		return fmt.Errorf("sessions: %w", err)
	}
	return nil
}

// List returns the workspace's sessions, oldest first. A damaged line (a
// full disk cut it short) is skipped, not fatal: the count of skipped
// lines comes back so the caller can say so.
func (s *Store) List(ctx context.Context, workspace string) ([]Record, int, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	f, err := os.Open(s.path(workspace))
	if errors.Is(err, os.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("sessions: %w", err)
	}
	defer f.Close()
	var r io.Reader = f
	if st, err := f.Stat(); err == nil && st.Size() > maxRead {
		// Far past what Add lets the file grow to: read only its newest
		// maxRead bytes (the cut first line counts as damaged).
		if _, err := f.Seek(-maxRead, io.SeekEnd); err != nil {
			return nil, 0, fmt.Errorf("sessions: %w", err)
		}
		r = io.LimitReader(f, maxRead)
	}
	recs, bad := decode(r)
	return current(recs, filepath.Clean(workspace)), bad, nil
}

// current is the workspace's sessions as they stand: a run's record at
// its end replaces the one written at its start, and a deleted session's
// records go.
func current(recs []Record, workspace string) []Record {
	type key struct{ agent, session string }
	deleted := map[key]bool{}
	for _, r := range recs {
		if r.Deleted {
			deleted[key{r.Agent, r.SessionID}] = true
		}
	}
	// Two workspaces never share a file unless their hashes collide; keep
	// only this one's records all the same.
	out := recs[:0]
	at := map[[2]string]int{} // (run, session) -> index in out
	for _, r := range recs {
		if r.Workspace != workspace || r.Deleted || deleted[key{r.Agent, r.SessionID}] {
			continue
		}
		if r.RunID != "" {
			k := [2]string{r.RunID, r.SessionID}
			if i, ok := at[k]; ok {
				out[i] = r
				continue
			}
			at[k] = len(out)
		}
		out = append(out, r)
	}
	return out
}

// Last returns the newest resumable session in workspace for agent over
// driver (either may be empty to match any).
func (s *Store) Last(ctx context.Context, workspace, agent, driver string) (Record, error) {
	recs, _, err := s.List(ctx, workspace)
	if err != nil {
		return Record{}, err
	}
	for i := len(recs) - 1; i >= 0; i-- {
		r := recs[i]
		if r.Resumable && (agent == "" || r.Agent == agent) && (driver == "" || r.Driver == driver) {
			return r, nil
		}
	}
	return Record{}, ErrNone
}

func decode(r io.Reader) ([]Record, int) {
	var recs []Record
	bad := 0
	br := bufio.NewReaderSize(r, 64<<10)
	var line []byte
	for {
		frag, err := br.ReadSlice('\n')
		if len(line)+len(frag) <= maxLine {
			line = append(line, frag...)
		} else {
			line = append(line[:0], "!"...) // over-long: damaged, skipped to its end
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if b := bytes.TrimSpace(line); len(b) > 0 {
			var rec Record
			if json.Unmarshal(b, &rec) != nil || rec.SessionID == "" {
				bad++
			} else {
				recs = append(recs, rec)
			}
		}
		line = line[:0]
		if err != nil {
			return recs, bad
		}
	}
}
