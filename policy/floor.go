package policy

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/internal/statedir"
)

// FloorRule describes one rule of the built-in deny floor.
type FloorRule struct {
	ID          string // provenance is "rule:<ID>"
	Description string
}

// FloorRules is the built-in deny floor: denied in every mode, before any
// allow rule or remembered answer is looked at. Only the policy file can
// turn it off (floor = false, or floor_disable = [ids]); no flag can.
var FloorRules = []FloorRule{
	{"floor-rm-root", "recursive rm (or find -delete) of /, a top-level directory, ~ or $HOME, or the workspace root or a parent of it"},
	{"floor-chmod-root", "recursive chmod, chown or chgrp of the same targets"},
	{"floor-write-outside", "an edit, delete or move of a path outside the workspace (and the write roots)"},
	{"floor-policy-files", "an edit, delete or move of tai's own files: the policy file, the persistent memory file, and tai's config and state directories (audit logs, sessions, fleet state)"},
	{"floor-git-force-push", "a forced push to, or a deletion of, a protected branch (a forced push whose branch cannot be told counts)"},
	{"floor-mkfs", "making or wiping a filesystem (mkfs, mke2fs, wipefs)"},
	{"floor-dd-device", "dd of=/dev/... or a redirection onto a disk device"},
	{"floor-fork-bomb", "a fork bomb"},
	{"floor-pipe-shell", "a download piped or substituted into a shell (curl ... | sh)"},
}

// DefaultProtectedBranches are the branches floor-git-force-push protects
// when the policy file names none.
var DefaultProtectedBranches = []string{"main", "master", "trunk", "develop", "release/*", "release-*"}

func floorKnown(id string) bool {
	for _, r := range FloorRules {
		if r.ID == id {
			return true
		}
	}
	return false
}

// floor is the built-in deny floor, as configured.
type floor struct {
	off       map[string]bool
	protected []textPattern
	files     []string // tai's own files and directories (policy, memory, config, state), absolute
}

// own sets the files floor-policy-files protects: files, and tai's config
// and state directories, each also with its symlinks resolved.
func (fl *floor) own(files []string) {
	for _, f := range append(files, statedir.Own()...) {
		if abs, err := filepath.Abs(f); f != "" && err == nil {
			fl.files = append(fl.files, filepath.Clean(abs), resolveExisting(abs))
		}
	}
}

var (
	forkBomb       = regexp.MustCompile(`([A-Za-z_:.][\w:.]*)\s*\(\)\s*\{\s*([\w:.]+)\s*\|\s*([\w:.]+)\s*&`)
	deviceRedirect = regexp.MustCompile(`>\s*/dev/(sd[a-z]|hd[a-z]|vd[a-z]|xvd[a-z]|nvme\d|mmcblk\d|disk\d|rdisk\d|md\d|dm-\d|mapper/|loop\d)`)
	downloadSubst  = regexp.MustCompile("(\\$\\(|<\\(|`)\\s*(curl|wget)\\b")
	safeDevices    = map[string]bool{"null": true, "zero": true, "stdout": true, "stderr": true, "tty": true, "random": true, "urandom": true}
)

// floorCheck returns the floor rule the request hits and why, or "".
func (e *Engine) floorCheck(f *facts) (id, why string) {
	fl := e.floor
	if fl == nil {
		return "", ""
	}
	hit := func(rid string) bool { return !fl.off[rid] }
	if f.writes {
		for _, p := range f.paths {
			if hit("floor-policy-files") && p.abs != "" {
				resolved := resolveExisting(p.abs)
				for _, file := range fl.files {
					if isAncestorOrSelf(file, p.abs) || isAncestorOrSelf(file, resolved) {
						return "floor-policy-files", fmt.Sprintf("built-in floor: %s is one of tai's own files (policy, config or state); agents may not change it", p.abs)
					}
				}
			}
			if hit("floor-rm-root") && (f.kind == driver.KindDelete || f.kind == driver.KindMove) && p.abs != "" &&
				(isAncestorOrSelf(p.abs, e.ws.root) || isAncestorOrSelf(p.abs, e.ws.home) || p.abs == "/") {
				return "floor-rm-root", fmt.Sprintf("built-in floor: a %s of %s, the workspace root, home or a parent of them", f.kind, p.abs)
			}
			if hit("floor-write-outside") && e.ws.root != "" && !e.ws.writable(p) {
				where := p.abs
				if where == "" {
					where = p.raw
				}
				return "floor-write-outside", fmt.Sprintf("built-in floor: %s is outside the workspace %s", where, e.ws.root)
			}
		}
	}
	for _, line := range f.lines {
		if id, why := e.floorLine(line, f.cwd); id != "" {
			return id, "built-in floor: " + why
		}
	}
	return "", ""
}

// floorLine checks one command line.
func (e *Engine) floorLine(line, cwd string) (id, why string) {
	hit := func(rid string) bool { return !e.floor.off[rid] }
	if hit("floor-fork-bomb") {
		for _, m := range forkBomb.FindAllStringSubmatch(line, -1) {
			if m[1] == m[2] && m[2] == m[3] {
				return "floor-fork-bomb", "a fork bomb"
			}
		}
	}
	if hit("floor-dd-device") && deviceRedirect.MatchString(line) {
		return "floor-dd-device", "a redirection onto a disk device"
	}
	segs := splitCommands(line)
	for i, s := range segs {
		w := normalizeWords(shellWords(s.text))
		if len(w) == 0 {
			continue
		}
		name := path.Base(w[0])
		if s.depth == 0 && name == "cd" {
			cwd = e.cd(cwd, w[1:])
			continue
		}
		if hit("floor-pipe-shell") {
			if (name == "curl" || name == "wget") && pipedIntoShell(segs[i:]) {
				return "floor-pipe-shell", fmt.Sprintf("%s piped into a shell", name)
			}
			if (shells[name] || name == "source" || name == "." || name == "eval") && downloadSubst.MatchString(s.text) {
				return "floor-pipe-shell", "a download run through a shell substitution"
			}
		}
		switch {
		case name == "rm" && hit("floor-rm-root"):
			if t, ok := e.rmTarget(w[1:], cwd); ok {
				return "floor-rm-root", fmt.Sprintf("rm -r of %s", t)
			}
		case name == "find" && hit("floor-rm-root"):
			if t, ok := e.findDelete(w[1:], cwd); ok {
				return "floor-rm-root", fmt.Sprintf("find %s deleting", t)
			}
		case (name == "chmod" || name == "chown" || name == "chgrp") && hit("floor-chmod-root"):
			if t, ok := e.chmodTarget(w[1:], cwd); ok {
				return "floor-chmod-root", fmt.Sprintf("recursive %s of %s", name, t)
			}
		case name == "git" && hit("floor-git-force-push"):
			if why := e.gitForcePush(w[1:], cwd); why != "" {
				return "floor-git-force-push", why
			}
		case (strings.HasPrefix(name, "mkfs") || name == "mke2fs" || name == "wipefs") && hit("floor-mkfs"):
			return "floor-mkfs", name + " makes or wipes a filesystem"
		case name == "dd" && hit("floor-dd-device"):
			for _, a := range w[1:] {
				if dev, ok := strings.CutPrefix(a, "of=/dev/"); ok && !safeDevices[dev] && !strings.HasPrefix(dev, "fd/") {
					return "floor-dd-device", "dd onto /dev/" + dev
				}
			}
		}
	}
	return "", ""
}

// pipedIntoShell reports whether the first segment's output reaches a shell
// through a pipeline.
func pipedIntoShell(segs []segment) bool {
	for i := 0; i+1 < len(segs) && segs[i].pipe; i++ {
		w := normalizeWords(shellWords(segs[i+1].text))
		if len(w) > 0 && shells[path.Base(w[0])] {
			if _, hasScript := shellScript(w); !hasScript {
				return true
			}
		}
	}
	return false
}

// cd follows a cd in a command chain; "" means the directory is unknown.
func (e *Engine) cd(cwd string, args []string) string {
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		return e.ws.home
	}
	d := expandHome(args[0], e.ws.home)
	if strings.HasPrefix(d, "$") || d == "-" {
		return ""
	}
	if filepath.IsAbs(d) {
		return filepath.Clean(d)
	}
	if cwd == "" {
		return ""
	}
	return filepath.Join(cwd, d)
}

// dangerous resolves a target of a recursive delete or chmod and reports
// whether it is /, a top-level directory, home or a parent of it, or the
// workspace root or a parent of it. A glob counts as its directory: rm -rf
// ~/* empties home.
func (e *Engine) dangerous(arg, cwd string) (string, bool) {
	t := expandHome(arg, e.ws.home)
	if strings.HasPrefix(t, "$") || t == "" {
		return "", false // an unknown variable: cannot tell
	}
	if i := strings.IndexAny(t, "*?["); i >= 0 {
		t = t[:i]
		if j := strings.LastIndexByte(t, '/'); j >= 0 {
			t = t[:j+1]
		} else {
			t = "."
		}
	}
	if !filepath.IsAbs(t) {
		if cwd == "" {
			return "", false
		}
		t = filepath.Join(cwd, t)
	}
	t = filepath.Clean(t)
	switch {
	case t == "/":
		return arg, true
	case strings.Count(t, "/") == 1:
		return arg + " (a top-level directory)", true
	case isAncestorOrSelf(t, e.ws.home):
		return arg + " (home)", true
	case isAncestorOrSelf(t, e.ws.root) || isAncestorOrSelf(t, e.ws.real):
		return arg + " (the workspace root)", true
	}
	return "", false
}

// rmTarget returns a dangerous target of a recursive rm.
func (e *Engine) rmTarget(args []string, cwd string) (string, bool) {
	recursive := false
	var targets []string
	opts := true
	for _, a := range args {
		switch {
		case opts && a == "--":
			opts = false
		case opts && strings.HasPrefix(a, "--"):
			recursive = recursive || a == "--recursive"
		case opts && strings.HasPrefix(a, "-") && len(a) > 1:
			recursive = recursive || strings.ContainsAny(a, "rR")
		default:
			targets = append(targets, a)
		}
	}
	if !recursive {
		return "", false
	}
	for _, t := range targets {
		if why, ok := e.dangerous(t, cwd); ok {
			return why, true
		}
	}
	return "", false
}

// nameFilters are find predicates that select files by name or path.
var nameFilters = map[string]bool{"-name": true, "-iname": true, "-path": true, "-ipath": true, "-wholename": true,
	"-iwholename": true, "-regex": true, "-iregex": true}

// findDelete returns a dangerous root of a find that deletes everything it
// walks.
func (e *Engine) findDelete(args []string, cwd string) (string, bool) {
	deletes := false
	for i, a := range args {
		switch {
		case a == "-delete" || (a == "-exec" || a == "-execdir" || a == "-ok") && i+1 < len(args) && path.Base(args[i+1]) == "rm":
			deletes = true
		case nameFilters[a]:
			return "", false // a targeted clean-up (find . -name '*.o' -delete), not a wipe
		}
	}
	if !deletes {
		return "", false
	}
	var roots []string
	for _, a := range args {
		if a == "-H" || a == "-L" || a == "-P" || strings.HasPrefix(a, "-O") || strings.HasPrefix(a, "-D") {
			continue
		}
		if strings.HasPrefix(a, "-") || a == "(" || a == "!" {
			break
		}
		roots = append(roots, a)
	}
	if len(roots) == 0 {
		roots = []string{"."}
	}
	for _, r := range roots {
		if why, ok := e.dangerous(r, cwd); ok {
			return why, true
		}
	}
	return "", false
}

// chmodTarget returns a dangerous target of a recursive chmod/chown/chgrp.
func (e *Engine) chmodTarget(args []string, cwd string) (string, bool) {
	recursive := false
	var rest []string
	for _, a := range args {
		switch {
		case a == "--recursive":
			recursive = true
		case strings.HasPrefix(a, "--"):
		case strings.HasPrefix(a, "-") && len(a) > 1 && !strings.ContainsAny(a[1:2], "0123456789"):
			recursive = recursive || strings.Contains(a, "R")
		default:
			rest = append(rest, a)
		}
	}
	if !recursive || len(rest) < 2 {
		return "", false
	}
	for _, t := range rest[1:] { // rest[0] is the mode or owner
		if why, ok := e.dangerous(t, cwd); ok {
			return why, true
		}
	}
	return "", false
}

// gitForcePush explains why a git command is a forced push to, or a
// deletion of, a protected branch; "" when it is not.
func (e *Engine) gitForcePush(args []string, cwd string) string {
	// Global options before the subcommand.
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		a := args[0]
		args = args[1:]
		switch {
		case a == "-C" && len(args) > 0:
			cwd = e.cd(cwd, args[:1])
			args = args[1:]
		case (a == "-c" || a == "--git-dir" || a == "--work-tree" || a == "--namespace") && len(args) > 0:
			args = args[1:]
		}
	}
	if len(args) == 0 || args[0] != "push" {
		return ""
	}
	force, del, all := false, false, false
	var pos []string
	for i := 1; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--force" || a == "--force-with-lease" || strings.HasPrefix(a, "--force-with-lease="):
			force = true
		case a == "--delete":
			del = true
		case a == "--all" || a == "--mirror" || a == "--branches":
			all = true
		case a == "-o" || a == "--push-option" || a == "--repo" || a == "--receive-pack" || a == "--exec":
			i++
		case strings.HasPrefix(a, "--"):
		case strings.HasPrefix(a, "-") && len(a) > 1:
			force = force || strings.Contains(a, "f")
			del = del || strings.Contains(a, "d")
			if strings.HasSuffix(a, "o") {
				i++
			}
		default:
			pos = append(pos, a)
		}
	}
	var refspecs []string
	if len(pos) > 1 {
		refspecs = pos[1:] // pos[0] is the remote
	}
	if force && all {
		return "a forced push of all branches"
	}
	for _, r := range refspecs {
		plus := strings.HasPrefix(r, "+")
		r = strings.TrimPrefix(r, "+")
		src, dst, hasColon := strings.Cut(r, ":")
		if !hasColon {
			dst = src
		}
		dst = strings.TrimPrefix(dst, "refs/heads/")
		if dst == "HEAD" || dst == "@" {
			dst = gitBranch(cwd)
			if dst == "" {
				dst = "HEAD"
			}
		}
		switch {
		case (del || hasColon && src == "") && e.protected(dst):
			return "deleting the protected branch " + dst
		case (force || plus) && e.protected(dst):
			return "a forced push to the protected branch " + dst
		case (force || plus) && dst == "HEAD":
			return "a forced push to HEAD, whose branch cannot be told"
		}
	}
	if force && len(refspecs) == 0 {
		b := gitBranch(cwd)
		switch {
		case b == "":
			return "a forced push of the current branch, which cannot be told"
		case e.protected(b):
			return "a forced push of the current branch " + b + ", which is protected"
		}
	}
	return ""
}

func (e *Engine) protected(branch string) bool {
	return anyText(e.floor.protected, branch)
}

// gitBranch reads the branch checked out in the repository holding dir, or
// "" when it cannot tell (no repository, a detached HEAD).
func gitBranch(dir string) string {
	for d := dir; d != "" && d != "."; d = filepath.Dir(d) {
		gitPath := filepath.Join(d, ".git")
		st, err := os.Stat(gitPath)
		if err == nil {
			gitDir := gitPath
			if !st.IsDir() {
				// A worktree or submodule: .git is "gitdir: PATH".
				b, err := os.ReadFile(gitPath)
				if err != nil {
					return ""
				}
				g, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:")
				if !ok {
					return ""
				}
				gitDir = strings.TrimSpace(g)
				if !filepath.IsAbs(gitDir) {
					gitDir = filepath.Join(d, gitDir)
				}
			}
			head, err := os.ReadFile(filepath.Join(gitDir, "HEAD"))
			if err != nil {
				return ""
			}
			ref, ok := strings.CutPrefix(strings.TrimSpace(string(head)), "ref: refs/heads/")
			if !ok {
				return ""
			}
			return ref
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	return ""
}
