package builtin

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tai-dev/tai/protocol/acp"
)

// Config option ids.
const (
	configMode  = "mode"
	configModel = "model"
)

func isAbs(p string) bool { return filepath.IsAbs(p) }

// historyEntry is one recorded update, replayed by session/load. The big
// step is recorded by size, not by content, and replayed by streaming again.
type historyEntry struct {
	update    acp.SessionUpdate
	bigBytes  int64
	messageID string
}

// session is one ACP session, kept in memory for the life of Serve.
type session struct {
	id string

	mu        sync.Mutex
	cwd       string
	addDirs   []string // additionalDirectories of session/new
	mode      string
	model     string
	title     string
	updatedAt time.Time
	history   []historyEntry
	plan      []acp.PlanEntry
	commands  []Command
	seq       int // tool call and message ids
	limitHits int // prompts that reached a limit step

	turnCancel context.CancelFunc // nil when no turn is running
}

func newSession(id, cwd string, sc *Script) *session {
	cmds := sc.Commands
	if cmds == nil {
		cmds = defaultCommands
	}
	mode := modeDefault
	if sc.StartMode != "" {
		mode = sc.StartMode
	}
	return &session{
		id:        id,
		cwd:       cwd,
		mode:      mode,
		model:     sessionModels[0].id,
		updatedAt: now(),
		commands:  slices.Clone(cmds),
	}
}

func (s *session) record(h historyEntry) {
	s.mu.Lock()
	s.history = append(s.history, h)
	s.mu.Unlock()
}

func (s *session) historySnapshot() []historyEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.history)
}

// nextID returns a fresh id with the given prefix, unique in the session.
func (s *session) nextID(prefix string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	return fmt.Sprintf("%s-%d", prefix, s.seq)
}

// startTurn registers a running turn; false if one is already running.
func (s *session) startTurn(cancel context.CancelFunc) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.turnCancel != nil {
		return false
	}
	s.turnCancel = cancel
	s.updatedAt = now()
	return true
}

func (s *session) endTurn() {
	s.mu.Lock()
	s.turnCancel = nil
	s.updatedAt = now()
	s.mu.Unlock()
}

func (s *session) cancelTurn() {
	s.mu.Lock()
	cancel := s.turnCancel
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

func (s *session) currentMode() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mode
}

func (s *session) setModel(id string) bool {
	if !slices.ContainsFunc(sessionModels, func(m modeInfo) bool { return m.id == id }) {
		return false
	}
	s.mu.Lock()
	s.model = id
	s.mu.Unlock()
	return true
}

func (s *session) modeState() *acp.SessionModeState {
	st := &acp.SessionModeState{CurrentModeId: s.currentMode()}
	for _, m := range sessionModes {
		st.AvailableModes = append(st.AvailableModes, acp.SessionMode{Id: m.id, Name: m.name, Description: acp.Ptr(m.description)})
	}
	return st
}

func selectOption(id, name string, category acp.ConfigOptionCategory, current string, values []modeInfo) acp.SessionConfigOption {
	sel := &acp.SelectConfigOption{Id: id, Name: name, Category: category, CurrentValue: current}
	for _, v := range values {
		sel.Options.Flat = append(sel.Options.Flat, acp.SelectOption{Value: v.id, Name: v.name, Description: acp.Ptr(v.description)})
	}
	return acp.SessionConfigOption{Select: sel}
}

func (s *session) configOptions() acp.ConfigOptionList {
	s.mu.Lock()
	mode, model := s.mode, s.model
	s.mu.Unlock()
	return acp.ConfigOptionList{
		selectOption(configMode, "Mode", acp.CategoryMode, mode, sessionModes),
		selectOption(configModel, "Model", acp.CategoryModel, model, sessionModels),
	}
}

func (s *session) commandsUpdate() acp.SessionUpdate {
	s.mu.Lock()
	defer s.mu.Unlock()
	return acp.SessionUpdate{AvailableCommandsUpdate: &acp.AvailableCommandsUpdate{AvailableCommands: toACPCommands(s.commands)}}
}

func toACPCommands(cmds []Command) acp.AvailableCommandList {
	out := make(acp.AvailableCommandList, 0, len(cmds))
	for _, c := range cmds {
		ac := acp.AvailableCommand{Name: c.Name, Description: c.Description}
		if c.Hint != "" {
			ac.Input = &acp.AvailableCommandInput{Hint: c.Hint}
		}
		out = append(out, ac)
	}
	return out
}

func (s *session) info() acp.SessionInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	si := acp.SessionInfo{SessionId: s.id, Cwd: s.cwd, UpdatedAt: acp.Ptr(s.updatedAt.UTC().Format(time.RFC3339))}
	if s.title != "" {
		si.Title = acp.Ptr(s.title)
	}
	si.AdditionalDirectories = s.addDirs
	return si
}

// sortSessions orders sessions most recently updated first.
func sortSessions(ss []*session) []*session {
	type keyed struct {
		s *session
		t time.Time
	}
	ks := make([]keyed, len(ss))
	for i, s := range ss {
		s.mu.Lock()
		ks[i] = keyed{s, s.updatedAt}
		s.mu.Unlock()
	}
	slices.SortFunc(ks, func(x, y keyed) int {
		if c := y.t.Compare(x.t); c != 0 {
			return c
		}
		return strings.Compare(x.s.id, y.s.id)
	})
	out := make([]*session, len(ks))
	for i, k := range ks {
		out[i] = k.s
	}
	return out
}

// abs resolves a script path against the session cwd. An absolute path is
// sent as the script spells it (.., NUL bytes and all), so that scripts
// can test how a client handles the paths it is sent.
func (s *session) abs(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return filepath.Join(s.cwd, p)
}
