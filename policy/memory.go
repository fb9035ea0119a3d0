package policy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/gofrs/flock"

	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/internal/atomicfile"
	"github.com/tai-dev/tai/internal/readlimit"
	"github.com/tai-dev/tai/internal/statedir"
	"github.com/tai-dev/tai/policy/shell"
)

// Scope says how far a human's "always" answer reaches.
type Scope string

// Memory scopes.
const (
	// ScopeSession: this session only (each Engine has its own Memory).
	ScopeSession Scope = "session"
	// ScopeRun: every engine given the same Memory, e.g. all agents of a
	// fleet run.
	ScopeRun Scope = "run"
	// ScopeWorkspace: persisted for the workspace, so later runs remember.
	ScopeWorkspace Scope = "workspace"
)

// ParseScope parses the remember setting.
func ParseScope(s string) (Scope, error) {
	switch Scope(strings.ToLower(strings.TrimSpace(s))) {
	case "", ScopeSession:
		return ScopeSession, nil
	case ScopeRun, "fleet":
		return ScopeRun, nil
	case ScopeWorkspace:
		return ScopeWorkspace, nil
	}
	return "", fmt.Errorf("unknown remember scope %q (want session, run or workspace)", s)
}

// Remembered is one remembered answer.
type Remembered struct {
	Allow   bool      `json:"allow"`
	At      time.Time `json:"at"`
	Title   string    `json:"title,omitempty"`   // the request that was answered, for people reading the file
	Session string    `json:"session,omitempty"` // the session it was answered in
}

// Memory holds "always" answers by memory key (see MemoryKey). One Memory
// shared by several engines makes one answer reach all of them; one opened
// with OpenMemory also persists to a file, locked with flock and replaced
// atomically, so concurrent tai processes can share it. Safe for concurrent
// use.
type Memory struct {
	scope Scope
	file  string // "" = in memory only

	mu      sync.Mutex
	entries map[string]Remembered
	stamp   fileStamp

	// turns lets one engine at a time ask the human for a key, so that
	// engines sharing the memory ask once per key; asks for different
	// keys are put at once.
	turns map[string]*turn
}

// turn is a key's right to ask: held by one ask, waited for by the others.
type turn struct {
	held    chan struct{} // buffered 1: full while held
	waiters int           // asks holding or waiting: the turn goes with the last
}

// fileStamp identifies a version of the file. Every write renames a new
// file into place, so the identity (inode) changes even when the size and
// the coarse mtime do not.
type fileStamp struct {
	info os.FileInfo
}

func (s fileStamp) same(st os.FileInfo) bool {
	return s.info != nil && os.SameFile(s.info, st) && s.info.ModTime().Equal(st.ModTime()) && s.info.Size() == st.Size()
}

// NewMemory returns an empty in-memory Memory. Pass the same one to several
// engines (Options.Memory) to share answers among them, scope ScopeRun.
func NewMemory(scope Scope) *Memory {
	if scope == "" {
		scope = ScopeSession
	}
	return &Memory{scope: scope, entries: map[string]Remembered{}, turns: map[string]*turn{}}
}

// memoryFile is the persistent file's format.
type memoryFile struct {
	Version   int                   `json:"version"`
	Workspace string                `json:"workspace,omitempty"`
	Entries   map[string]Remembered `json:"entries"`
}

// WorkspaceMemoryPath is where the workspace's persistent memory lives:
// $XDG_STATE_HOME/tai/policy-memory/<hash of the workspace path>.json
// (~/.local/state when XDG_STATE_HOME is unset). It is outside the
// workspace on purpose: an agent can write the workspace, and must not be
// able to grant itself approvals.
func WorkspaceMemoryPath(workspace string) (string, error) {
	abs, err := filepath.Abs(workspace)
	if err != nil {
		return "", err
	}
	abs = resolveExisting(filepath.Clean(abs))
	sum := sha256.Sum256([]byte(abs))
	return statedir.Dir("policy-memory", hex.EncodeToString(sum[:8])+".json"), nil
}

// OpenWorkspaceMemory opens the persistent memory of a workspace, at
// WorkspaceMemoryPath.
func OpenWorkspaceMemory(workspace string) (*Memory, error) {
	file, err := WorkspaceMemoryPath(workspace)
	if err != nil {
		return nil, err
	}
	m, err := OpenMemory(file)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(file); errors.Is(err, fs.ErrNotExist) {
		// Name the workspace in a new file, for people reading it.
		abs, _ := filepath.Abs(workspace)
		m.mu.Lock()
		defer m.mu.Unlock()
		if err := m.write(context.Background(), abs, nil); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// OpenMemory opens (creating its directory) a persistent memory file,
// scope ScopeWorkspace. A file that exists but cannot be read is an error:
// silently dropping people's answers is worse than stopping.
func OpenMemory(file string) (*Memory, error) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, fmt.Errorf("policy memory: %w", err)
	}
	m := NewMemory(ScopeWorkspace)
	m.file = abs
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.load(context.Background()); err != nil {
		return nil, err
	}
	return m, nil
}

// Scope returns the memory's scope.
func (m *Memory) Scope() Scope { return m.scope }

// Path returns the persistent file, or "".
func (m *Memory) Path() string { return m.file }

// Lookup returns the answer remembered for key. A persistent memory first
// picks up what other processes wrote since it last looked.
func (m *Memory) Lookup(key string) (Remembered, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.file != "" {
		_ = m.refresh() // on error, what we have is still our best answer
	}
	r, ok := m.entries[key]
	return r, ok
}

// Remember records an answer. For a persistent memory it is written
// through before Remember returns.
func (m *Memory) Remember(key string, r Remembered) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.entries[key] = r
	if m.file == "" {
		return nil
	}
	return m.write(context.Background(), "", map[string]*Remembered{key: &r})
}

// Forget drops a remembered answer.
func (m *Memory) Forget(key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.entries, key)
	if m.file == "" {
		return nil
	}
	return m.write(context.Background(), "", map[string]*Remembered{key: nil})
}

// Entries returns a copy of every remembered answer.
func (m *Memory) Entries() map[string]Remembered {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.file != "" {
		_ = m.refresh()
	}
	out := make(map[string]Remembered, len(m.entries))
	for k, v := range m.entries {
		out[k] = v
	}
	return out
}

// lockTimeout bounds the wait for another process's lock: they are held
// for a read or a write, never across a prompt.
const lockTimeout = 10 * time.Second

func (m *Memory) lock(ctx context.Context, shared bool) (*flock.Flock, error) {
	fl := flock.New(m.file+".lock", flock.SetPermissions(0o600))
	ctx, cancel := context.WithTimeout(ctx, lockTimeout)
	defer cancel()
	try := fl.TryLockContext
	if shared {
		try = fl.TryRLockContext
	}
	ok, err := try(ctx, 20*time.Millisecond)
	if err == nil && !ok {
		err = errors.New("timed out")
	}
	if err != nil {
		return nil, fmt.Errorf("locking %s: %w", fl.Path(), err)
	}
	return fl, nil
}

// refresh reloads the file when it changed. m.mu is held.
func (m *Memory) refresh() error {
	st, err := os.Stat(m.file)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	if m.stamp.same(st) {
		return nil
	}
	return m.load(context.Background())
}

// load reads the file under a shared lock. m.mu is held.
func (m *Memory) load(ctx context.Context) error {
	if _, err := os.Stat(m.file); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	fl, err := m.lock(ctx, true)
	if err != nil {
		return err
	}
	defer fl.Unlock()
	entries, stamp, err := readMemoryFile(m.file)
	if err != nil {
		return err
	}
	m.entries, m.stamp = entries, stamp
	return nil
}

func readMemoryFile(file string) (map[string]Remembered, fileStamp, error) {
	f, err := os.Open(file)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]Remembered{}, fileStamp{}, nil
	}
	if err != nil {
		return nil, fileStamp{}, fmt.Errorf("policy memory: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fileStamp{}, fmt.Errorf("policy memory: %w", err)
	}
	if st.Size() > readlimit.State {
		return nil, fileStamp{}, fmt.Errorf("policy memory: %w (fix or delete the file)", &readlimit.TooLargeError{Name: file, Max: readlimit.State})
	}
	var mf memoryFile
	if err := json.NewDecoder(f).Decode(&mf); err != nil {
		return nil, fileStamp{}, fmt.Errorf("policy memory %s: %w (fix or delete the file)", file, err)
	}
	if mf.Version > 1 {
		return nil, fileStamp{}, fmt.Errorf("policy memory %s: version %d is newer than this tai understands", file, mf.Version)
	}
	if mf.Entries == nil {
		mf.Entries = map[string]Remembered{}
	}
	return mf.Entries, fileStamp{st}, nil
}

// write merges changes (nil deletes) into the file as it is on disk now,
// under an exclusive lock, and replaces it atomically. m.mu is held.
func (m *Memory) write(ctx context.Context, workspace string, changes map[string]*Remembered) error {
	fl, err := m.lock(ctx, false)
	if err != nil {
		return err
	}
	defer fl.Unlock()
	entries, _, err := readMemoryFile(m.file)
	if err != nil {
		return err
	}
	for k, v := range changes {
		if v == nil {
			delete(entries, k)
		} else {
			entries[k] = *v
		}
	}
	if workspace == "" {
		if b, err := readlimit.ReadFile(m.file, readlimit.State); err == nil {
			var old memoryFile
			if json.Unmarshal(b, &old) == nil {
				workspace = old.Workspace
			}
		}
	}
	data, err := json.MarshalIndent(memoryFile{Version: 1, Workspace: workspace, Entries: entries}, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.Write(m.file, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("policy memory: %w", err)
	}
	m.entries = entries
	if st, err := os.Stat(m.file); err == nil {
		m.stamp = fileStamp{st}
	}
	return nil
}

// Turn waits for the right to ask the human for key, so that asks for
// the same thing wait for each other (one "always" answers them all) and
// asks for different things reach the human at once. The engine takes it
// for every ask; a hub's coordinator takes it for its workers' asks. It
// returns the release, to be called once.
func (m *Memory) Turn(ctx context.Context, key string) (release func(), err error) {
	if err := m.acquireTurn(ctx, key); err != nil {
		return nil, err
	}
	return func() { m.releaseTurn(key) }, nil
}

// acquireTurn waits for the right to ask the human for key. Every
// successful acquireTurn is followed by one releaseTurn(key).
func (m *Memory) acquireTurn(ctx context.Context, key string) error {
	m.mu.Lock()
	t := m.turns[key]
	if t == nil {
		t = &turn{held: make(chan struct{}, 1)}
		m.turns[key] = t
	}
	t.waiters++
	m.mu.Unlock()
	select {
	case t.held <- struct{}{}:
		return nil
	case <-ctx.Done():
		m.leaveTurn(key, t)
		return ctx.Err()
	}
}

// releaseTurn gives key's turn to the next ask waiting for it.
func (m *Memory) releaseTurn(key string) {
	m.mu.Lock()
	t := m.turns[key]
	m.mu.Unlock()
	<-t.held
	m.leaveTurn(key, t)
}

func (m *Memory) leaveTurn(key string, t *turn) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if t.waiters--; t.waiters == 0 {
		delete(m.turns, key)
	}
}

// MemoryKey is what an "always" answer is remembered under. It names the
// thing allowed, not the agent or tool that asked, so one answer serves
// every agent asking the same thing:
//
//	execute:<command line, white space collapsed>   execute:go test ./...
//	<kind>:<paths, workspace-relative, sorted>      edit:src/a.go   (absolute when outside)
//	fetch:<scheme://host>                           fetch:https://docs.rs
//	switch_mode:<target mode>                       switch_mode:acceptEdits
//	<kind>:tool=<name>                              other:tool=mcp__github__create_issue
//
// A request with nothing of the kind's own (an execute without a command,
// an edit without paths) falls back to <kind>:tool=<name, else title>.
// So "always allow go test ./..." never allows "go test ./... && rm -rf x",
// and "always allow editing src/a.go" never allows src/b.go.
func (e *Engine) MemoryKey(req driver.PermissionRequest) string {
	return memoryKey(e.facts(req))
}

func memoryKey(f *facts) string {
	switch f.kind {
	case kindExecute:
		if f.command != "" {
			return f.kind + ":" + shell.Collapse(f.command)
		}
	case kindFetch:
		if f.url != "" {
			return f.kind + ":" + urlOrigin(f.url)
		}
	case kindSwitchMode:
		if f.mode != "" {
			return f.kind + ":" + f.mode
		}
	case kindThink, kindOther:
	default:
		if len(f.paths) > 0 {
			ps := make([]string, 0, len(f.paths))
			for _, p := range f.paths {
				switch {
				case p.inside:
					ps = append(ps, p.rel)
				case p.abs != "":
					ps = append(ps, p.abs)
				default:
					ps = append(ps, p.raw)
				}
			}
			sort.Strings(ps)
			return f.kind + ":" + strings.Join(ps, ",")
		}
	}
	return f.kind + ":tool=" + f.tool
}

// urlOrigin is scheme://host of a URL, lower-cased; the URL itself when it
// has no host.
func urlOrigin(u string) string {
	scheme, rest, ok := strings.Cut(u, "://")
	if !ok {
		return u
	}
	host := rest
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		host = rest[:i]
	}
	if i := strings.LastIndexByte(host, '@'); i >= 0 { // drop credentials
		host = host[i+1:]
	}
	return strings.ToLower(scheme + "://" + host)
}
