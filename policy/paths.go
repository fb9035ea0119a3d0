package policy

import "fmt"

// PathSet is a list of workspace path globs with the rules' syntax
// ("src/**", "*.md", "docs/"): what a fleet task's owns: says it may change.
type PathSet struct{ pats []pathPattern }

// CompilePathSet compiles workspace-relative globs; absolute ones are
// refused (a set is about the workspace).
func CompilePathSet(globs []string) (PathSet, error) {
	var s PathSet
	for _, g := range globs {
		p, err := compilePathPattern(g, "")
		if err != nil {
			return s, err
		}
		if p.abs {
			return s, fmt.Errorf("path pattern %q: want a path inside the workspace", g)
		}
		s.pats = append(s.pats, p)
	}
	return s, nil
}

// Match says whether the workspace-relative path rel is in the set.
func (s PathSet) Match(rel string) bool {
	segs := splitSlash(rel)
	for _, p := range s.pats {
		if matchSegs(p.segs, segs) {
			return true
		}
	}
	return false
}
