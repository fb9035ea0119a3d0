package host

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"

	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/policy"
)

// Grants are the permissions an agent asked for and was granted, kept as
// what they announced: the paths a tool call names (locations, diffs,
// raw_input's path fields) and the command it runs. A file or terminal call
// they cover is served without a second decision; anything else is decided
// as a request of its own.
//
// A grant lasts while its tool call runs: it ends when the tool call is
// reported completed or failed, when the turn ends, or when a later
// request for the same path or command is denied. Its tool call id binds
// nothing by itself: ACP's fs/* and terminal/* requests carry none, and one
// an agent claimed would not tie the call to what was decided. Only the
// path or the command line does.
//
// Grants is a driver.Sink: it hears of tool calls ending from the session's
// events.
type Grants struct {
	cwd string // relative announced paths are under it

	mu     sync.Mutex
	byCall map[string][]*grant // the grants, by tool call id
}

// grant is one allowed request.
type grant struct {
	toolCall string
	writes   map[string]bool // path keys, when its kind covers writing them
	reads    map[string]bool // path keys it names
	command  string          // its command line (policy.Command), or ""
}

// NewGrants returns an empty set; relative paths a request names are taken
// relative to cwd.
func NewGrants(cwd string) *Grants { return &Grants{cwd: cwd} }

// grantWriteKinds are the tool kinds whose grant covers writing the paths
// they name. A read or search grant never covers a write.
var grantWriteKinds = map[driver.ToolKind]bool{
	driver.KindEdit: true, driver.KindDelete: true, driver.KindMove: true, driver.KindOther: true, "": true,
}

// Decided records the decision on a permission the agent asked for. An
// allow covers the calls it announced; a later denial of the same path or
// command withdraws that cover. tai's own (unrequested) requests and
// cancelled answers change nothing.
func (g *Grants) Decided(req driver.PermissionRequest, d driver.PermissionDecision) {
	if g == nil || req.Unrequested || d.Unrequested {
		return
	}
	allow := d.Verdict == driver.VerdictAllow
	if !allow && !d.Denied() {
		return
	}
	tc := req.ToolCall
	paths, diffs := announcedPaths(tc)
	command := policy.Command(tc)
	if len(paths) == 0 && command == "" {
		return // it names nothing a grant covers or a denial withdraws
	}
	n := &grant{toolCall: tc.ID, writes: map[string]bool{}, reads: map[string]bool{}, command: command}
	for _, p := range paths {
		for _, k := range pathKeys(p, g.cwd) {
			n.reads[k] = true
			if grantWriteKinds[driver.ToolKind(strings.ToLower(string(tc.Kind)))] || diffs[p] {
				n.writes[k] = true
			}
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if allow {
		if g.byCall == nil {
			g.byCall = map[string][]*grant{}
		}
		g.byCall[n.toolCall] = append(g.byCall[n.toolCall], n)
		return
	}
	// A denial withdraws every cover of what it names.
	for id, list := range g.byCall {
		kept := list[:0]
		for _, old := range list {
			if !old.overlaps(n) {
				kept = append(kept, old)
			}
		}
		clear(list[len(kept):])
		if len(kept) == 0 {
			delete(g.byCall, id)
		} else {
			g.byCall[id] = kept
		}
	}
}

func (a *grant) overlaps(b *grant) bool {
	if a.command != "" && a.command == b.command {
		return true
	}
	for k := range b.reads {
		if a.reads[k] {
			return true
		}
	}
	return false
}

// Emit ends the grants of a tool call that completed or failed, and every
// grant when the turn ends.
func (g *Grants) Emit(ev driver.Event) {
	switch {
	case ev.Type == driver.EventTurnEnded:
		g.mu.Lock()
		g.byCall = nil
		g.mu.Unlock()
	case ev.Type == driver.EventToolCall && ev.ToolCall != nil && ev.ToolCall.ID != "" &&
		(ev.ToolCall.Status == "completed" || ev.ToolCall.Status == "failed"):
		g.mu.Lock()
		delete(g.byCall, ev.ToolCall.ID) // most calls that end were never granted: nothing to scan
		g.mu.Unlock()
	}
}

// coversWrite reports whether a granted permission announced writing path.
func (g *Grants) coversWrite(path string) bool {
	return g.covers(path, func(gr *grant, k string) bool { return gr.writes[k] })
}

// coversRead reports whether a granted permission named path.
func (g *Grants) coversRead(path string) bool {
	return g.covers(path, func(gr *grant, k string) bool { return gr.reads[k] })
}

func (g *Grants) covers(path string, has func(*grant, string) bool) bool {
	if g == nil {
		return false
	}
	keys := pathKeys(path, g.cwd)
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, list := range g.byCall {
		for _, gr := range list {
			for _, k := range keys {
				if has(gr, k) {
					return true
				}
			}
		}
	}
	return false
}

// coversCommand reports whether a granted permission announced running
// exactly this command line.
func (g *Grants) coversCommand(line string) bool {
	if g == nil || line == "" {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, list := range g.byCall {
		for _, gr := range list {
			if gr.command == line {
				return true
			}
		}
	}
	return false
}

// rawPathKeys are the raw_input fields that name the files a tool touches
// (the policy reads the same ones).
var rawPathKeys = []string{"path", "file_path", "filePath", "notebook_path", "old_path", "new_path", "source", "destination", "dest"}

// announcedPaths are the paths a tool call names, and which of them it
// shows a diff for.
func announcedPaths(tc driver.ToolCall) (paths []string, diffs map[string]bool) {
	add := func(p string) {
		if p = strings.TrimSpace(p); p != "" && !strings.ContainsRune(p, 0) {
			paths = append(paths, p)
		}
	}
	for _, l := range tc.Locations {
		add(l.Path)
	}
	for _, c := range tc.Content {
		if c.Type == "diff" {
			add(c.Path)
			if diffs == nil {
				diffs = map[string]bool{}
			}
			diffs[strings.TrimSpace(c.Path)] = true
		}
	}
	var raw map[string]any
	// Most tool calls a permission names carry no raw input: no decode
	// (and no error built) for those.
	if len(tc.RawInput) > 0 && json.Unmarshal(tc.RawInput, &raw) == nil {
		for _, k := range rawPathKeys {
			if s, ok := raw[k].(string); ok {
				add(s)
			}
		}
		if ps, ok := raw["paths"].([]any); ok {
			for _, p := range ps {
				if s, ok := p.(string); ok {
					add(s)
				}
			}
		}
	}
	return paths, diffs
}

// pathKeys are the spellings a path is matched by: clean and absolute, and
// with its symlinks resolved as far as it exists.
func pathKeys(p, cwd string) []string {
	if !filepath.IsAbs(p) {
		if cwd == "" {
			return nil
		}
		p = filepath.Join(cwd, p)
	}
	clean := filepath.Clean(p)
	keys := []string{clean}
	if real := resolveExisting(clean); real != clean {
		keys = append(keys, real)
	}
	return keys
}

// resolveExisting resolves the symlinks of the longest existing prefix of
// p and appends the rest.
func resolveExisting(p string) string {
	rest := ""
	for dir := p; ; {
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(real, rest)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return p
		}
		rest = filepath.Join(filepath.Base(dir), rest)
		dir = parent
	}
}
