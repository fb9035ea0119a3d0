package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// Access is what the sandbox lets the agent do under a path. The levels
// are ordered: each includes the ones before it.
type Access uint8

const (
	// None: not even listed (a secret file).
	None Access = iota
	// List: the directory's entries can be listed, nothing below read.
	// The directories on the way to a secret get this.
	List
	// Read: read, list and execute.
	Read
	// Write: also create, change, rename and remove.
	Write
)

func (a Access) String() string {
	switch a {
	case None:
		return "none"
	case List:
		return "list"
	case Read:
		return "read"
	case Write:
		return "write"
	}
	return "access(" + string(rune('0'+a)) + ")"
}

// Grant gives Access to everything under Path (a file or a directory),
// unless a grant for a deeper path says otherwise: the deepest grant
// covering a path decides. Path is absolute and clean.
type Grant struct {
	Path   string `json:"path"`
	Access Access `json:"access"`
}

// Rule is one Landlock rule: Access to the hierarchy under Path.
type Rule struct {
	Path   string
	Access Access
	Dir    bool
}

// Plan turns grants into Landlock rules. Landlock rules only add rights,
// so "everything under G except X" is spelled as rules for every sibling
// along the way from G down to X, and only List (or, when X keeps Read,
// Read) for the directories on that way. Missing paths below a grant are
// skipped; symlinks are never followed into a rule (their targets are
// covered, or not, where they live). Entries of a directory that are
// created later get no rule of their own: that is the cost of an
// exception, and why the directories on the way to one cannot gain new
// entries.
func Plan(grants []Grant) ([]Rule, error) {
	gs := normalize(grants)
	var out []Rule
	for _, g := range gs {
		if g.Access == None {
			continue
		}
		fi, err := os.Lstat(g.Path)
		if err != nil {
			continue // nothing to grant (yet)
		}
		planOne(&out, g.Path, fi.IsDir(), g.Access, lowering(gs, g))
	}
	return dedupe(out), nil
}

// normalize cleans the paths and keeps, for each path, the last grant.
func normalize(grants []Grant) []Grant {
	byPath := map[string]Access{}
	var order []string
	for _, g := range grants {
		if !filepath.IsAbs(g.Path) {
			continue
		}
		p := filepath.Clean(g.Path)
		if _, ok := byPath[p]; !ok {
			order = append(order, p)
		}
		byPath[p] = g.Access
	}
	out := make([]Grant, 0, len(order))
	for _, p := range order {
		out = append(out, Grant{Path: p, Access: byPath[p]})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// lowering lists the grants strictly below g that give less than g.
// Deeper grants that give more are rules of their own and need no split.
func lowering(gs []Grant, g Grant) []Grant {
	var out []Grant
	for _, e := range gs {
		if e.Access < g.Access && within(e.Path, g.Path) && e.Path != g.Path {
			out = append(out, e)
		}
	}
	return out
}

// within reports whether p is base or below it.
func within(p, base string) bool {
	if base == "/" {
		return true
	}
	return p == base || strings.HasPrefix(p, base+"/")
}

func planOne(out *[]Rule, path string, dir bool, acc Access, except []Grant) {
	if len(except) == 0 || !dir {
		*out = append(*out, Rule{Path: path, Access: acc, Dir: dir})
		return
	}
	// The way to an exception: the directory itself gets what its
	// hierarchy may have at most.
	way := acc
	for _, e := range except {
		way = min(way, max(List, e.Access))
	}
	*out = append(*out, Rule{Path: path, Access: way, Dir: true})
	ents, err := os.ReadDir(path)
	if err != nil {
		return
	}
	for _, ent := range ents {
		if ent.Type()&os.ModeSymlink != 0 {
			continue
		}
		child := filepath.Join(path, ent.Name())
		childAcc := acc
		var below []Grant
		for _, e := range except {
			switch {
			case e.Path == child:
				childAcc = e.Access
			case within(e.Path, child):
				below = append(below, e)
			}
		}
		// Exceptions below child that the child's own access no longer
		// exceeds are moot.
		below = slices.DeleteFunc(below, func(e Grant) bool { return e.Access >= childAcc })
		if childAcc == None {
			continue
		}
		planOne(out, child, ent.IsDir(), childAcc, below)
	}
}

func dedupe(rs []Rule) []Rule {
	seen := map[Rule]bool{}
	out := rs[:0]
	for _, r := range rs {
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	return out
}
