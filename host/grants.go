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
// A tool call id does not bind: ACP's fs/* and terminal/* requests carry
// none, and one an agent claimed would not tie the call to what was
// decided. Only the path or the command line does.
type Grants struct {
	cwd string // relative announced paths are under it

	mu       sync.Mutex
	writes   map[string]bool // path keys an edit, delete, move or other grant names
	reads    map[string]bool // path keys any grant names
	commands map[string]bool // command lines (policy.Command)
}

// NewGrants returns an empty set; relative paths a request names are taken
// relative to cwd.
func NewGrants(cwd string) *Grants {
	return &Grants{cwd: cwd, writes: map[string]bool{}, reads: map[string]bool{}, commands: map[string]bool{}}
}

// grantWriteKinds are the tool kinds whose grant covers writing the paths
// they name. A read or search grant never covers a write.
var grantWriteKinds = map[string]bool{
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
	cmd := policy.Command(tc)
	g.mu.Lock()
	defer g.mu.Unlock()
	set := func(m map[string]bool, k string) {
		if allow {
			m[k] = true
		} else {
			delete(m, k)
		}
	}
	for _, p := range paths {
		for _, k := range pathKeys(p, g.cwd) {
			set(g.reads, k)
			if grantWriteKinds[strings.ToLower(tc.Kind)] || diffs[p] || !allow {
				set(g.writes, k)
			}
		}
	}
	if cmd != "" {
		set(g.commands, cmd)
	}
}

// coversWrite reports whether a granted permission announced writing path.
func (g *Grants) coversWrite(path string) bool { return g != nil && g.covers(g.writes, path) }

// coversRead reports whether a granted permission named path.
func (g *Grants) coversRead(path string) bool { return g != nil && g.covers(g.reads, path) }

func (g *Grants) covers(m map[string]bool, path string) bool {
	keys := pathKeys(path, g.cwd)
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, k := range keys {
		if m[k] {
			return true
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
	return g.commands[line]
}

// rawPathKeys are the raw_input fields that name the files a tool touches
// (the policy reads the same ones).
var rawPathKeys = []string{"path", "file_path", "filePath", "notebook_path", "old_path", "new_path", "source", "destination", "dest"}

// announcedPaths are the paths a tool call names, and which of them it
// shows a diff for.
func announcedPaths(tc driver.ToolCall) (paths []string, diffs map[string]bool) {
	diffs = map[string]bool{}
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
			diffs[strings.TrimSpace(c.Path)] = true
		}
	}
	var raw map[string]any
	if json.Unmarshal(tc.RawInput, &raw) == nil {
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
