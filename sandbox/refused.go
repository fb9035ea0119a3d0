package sandbox

import (
	"regexp"
	"strings"
)

// The kernel does not tell userspace which paths Landlock refused (its
// audit records need the audit subsystem, and root). What a confined
// program says about a refusal is the next best thing: EACCES and EPERM
// as the runtimes print them.
var (
	deniedLine = regexp.MustCompile(`(?i)permission denied|operation not permitted|\beacces\b|\beperm\b|os error 13\b|os error 1\b|errno 13\b|errno 1\b|read-only file system`)
	// A path quoted ('...', "...", `...`, coreutils' ‘...’) or bare, absolute or ~/.
	quotedPath = regexp.MustCompile("['\"`‘“]((?:/|~/)[^'\"`’”\\n]*)['\"`’”]")
	barePath   = regexp.MustCompile(`(?:^|[\s(=:,])((?:/|~/)[^\s'"` + "`" + `:,;()]+)`)
)

// DeniedPaths are the paths a confined program's stderr names on the lines
// that report a refusal (EACCES, EPERM, "Permission denied", "os error
// 13"), in the order printed, each once. home expands ~/.
func DeniedPaths(stderr, home string) []string {
	var out []string
	add := func(p string) {
		p = strings.TrimRight(p, ".")
		if rest, ok := strings.CutPrefix(p, "~/"); ok && home != "" {
			p = strings.TrimSuffix(home, "/") + "/" + rest
		}
		if p == "" || p == "/" || !strings.HasPrefix(p, "/") {
			return
		}
		for _, q := range out {
			if q == p {
				return
			}
		}
		out = append(out, p)
	}
	for _, line := range strings.Split(stderr, "\n") {
		if !deniedLine.MatchString(line) {
			continue
		}
		quoted := quotedPath.FindAllStringSubmatch(line, -1)
		for _, m := range quoted {
			add(m[1])
		}
		if len(quoted) > 0 {
			continue // a quoted path is the one the program meant
		}
		for _, m := range barePath.FindAllStringSubmatch(line, -1) {
			add(m[1])
		}
	}
	return out
}

// Denial is a path a confined program said it was refused, read against
// the sandbox's grants.
type Denial struct {
	Path string
	// Hidden: a secret path (Config.Deny), neither read nor written.
	Hidden bool
	// Own: one of tai's own paths (Config.Protect), never written.
	Own bool
}

// Denials are the paths stderr names as refused (DeniedPaths) where the
// sandbox's grants refuse writing them: Landlock's refusals, as far as
// the program told. A path the sandbox lets be written was refused by
// something else (file modes) and is left out. Nil without Landlock.
func (s *Sandbox) Denials(stderr, home string) []Denial {
	if s == nil || s.rules == nil {
		return nil
	}
	var out []Denial
	for _, p := range DeniedPaths(stderr, home) {
		g := deepest(s.rules.Grants, p)
		if g.Access == Write {
			continue
		}
		out = append(out, Denial{Path: p, Hidden: g.Access < Read, Own: g.Access == Read && g.Path != "/"})
	}
	return out
}

// deepest is the grant that decides p: the deepest one covering it.
func deepest(gs []Grant, p string) Grant {
	best := Grant{Path: "/", Access: Read}
	for _, g := range normalize(gs) {
		if within(p, g.Path) && len(g.Path) >= len(best.Path) {
			best = g
		}
	}
	return best
}
