package builtin

import (
	"encoding/json"
	"fmt"
	"github.com/tai-dev/tai/internal/lazyre"
	"os"
	"path/filepath"
	"time"

	"github.com/tai-dev/tai/internal/atomicfile"
	"github.com/tai-dev/tai/protocol/acp"
)

// Sessions outlive the process when Options.StateDir is set, the way a
// real agent's do: a later `tai run --continue` (a new agent process)
// resumes or loads them.

type savedSession struct {
	ID        string       `json:"id"`
	Cwd       string       `json:"cwd"`
	Mode      string       `json:"mode"`
	Model     string       `json:"model"`
	Title     string       `json:"title,omitempty"`
	UpdatedAt time.Time    `json:"updated_at"`
	Seq       int          `json:"seq"`
	LimitHits int          `json:"limit_hits,omitempty"` // a limit step's times count over processes, as an account's limit does
	History   []savedEntry `json:"history,omitempty"`
}

type savedEntry struct {
	Update    *acp.SessionUpdate `json:"update,omitempty"`
	BigBytes  int64              `json:"big_bytes,omitempty"`
	MessageID string             `json:"message_id,omitempty"`
}

// validID keeps a client's session id from naming a path outside StateDir.
var validID = lazyre.New(`^builtin-[0-9a-f]{16}$`)

// save writes s whole (temp file, then rename: a crash leaves the old or
// the new state, never half of one).
func (a *agent) save(s *session) {
	if a.opts.StateDir == "" {
		return
	}
	s.mu.Lock()
	ss := savedSession{ID: s.id, Cwd: s.cwd, Mode: s.mode, Model: s.model, Title: s.title, UpdatedAt: s.updatedAt, Seq: s.seq, LimitHits: s.limitHits}
	for _, h := range s.history {
		e := savedEntry{BigBytes: h.bigBytes, MessageID: h.messageID}
		if h.bigBytes == 0 {
			u := h.update
			e.Update = &u
		}
		ss.History = append(ss.History, e)
	}
	s.mu.Unlock()
	if err := writeSaved(a.opts.StateDir, ss); err != nil {
		a.log.Warn("builtin agent: session not saved; it cannot be resumed by a later process", "session", ss.ID, "err", err)
	}
}

func writeSaved(dir string, ss savedSession) error {
	b, err := json.Marshal(ss)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, ss.ID+".json"), b, 0o600)
}

// loadSaved brings a session saved by an earlier process back.
func (a *agent) loadSaved(id string) (*session, error) {
	if a.opts.StateDir == "" || !validID().MatchString(id) {
		return nil, os.ErrNotExist
	}
	b, err := os.ReadFile(filepath.Join(a.opts.StateDir, id+".json"))
	if err != nil {
		return nil, err
	}
	var ss savedSession
	if err := json.Unmarshal(b, &ss); err != nil {
		return nil, fmt.Errorf("saved session %s: %w", id, err)
	}
	s := newSession(ss.ID, ss.Cwd, a.script)
	s.mode, s.model, s.title, s.updatedAt, s.seq, s.limitHits = ss.Mode, ss.Model, ss.Title, ss.UpdatedAt, ss.Seq, ss.LimitHits
	for _, e := range ss.History {
		h := historyEntry{bigBytes: e.BigBytes, messageID: e.MessageID}
		if e.Update != nil {
			h.update = *e.Update
		}
		s.history = append(s.history, h)
	}
	return s, nil
}
