package worktree

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Info is one worktree as `tai worktree list` shows it.
type Info struct {
	Record
	Registered bool   `json:"registered"`
	DirExists  bool   `json:"dir_exists"`
	GitLocked  bool   `json:"git_locked"`
	InUse      bool   `json:"in_use"`
	Dirty      bool   `json:"dirty"`
	Unmerged   int    `json:"unmerged_commits"`
	State      string `json:"state"` // in-use | active | untouched | merged | unmerged | dirty | orphan-dir | missing-dir | no-branch
}

// List returns tai's worktrees: every record, every registered worktree on
// a tai/ branch or under Root, and every directory under Root.
func (m *Manager) List(ctx context.Context) ([]Info, error) {
	regs, err := m.listRegistered(ctx)
	if err != nil {
		return nil, err
	}
	byPath := map[string]*Info{}
	add := func(r Record) *Info {
		if i, ok := byPath[r.Path]; ok {
			return i
		}
		i := &Info{Record: r}
		byPath[r.Path] = i
		return i
	}
	recRoot := filepath.Join(m.CommonDir, "tai", "worktrees")
	runs, _ := os.ReadDir(recRoot)
	for _, run := range runs {
		files, _ := os.ReadDir(filepath.Join(recRoot, run.Name()))
		for _, f := range files {
			if task, ok := strings.CutSuffix(f.Name(), ".json"); ok && !strings.HasPrefix(f.Name(), ".") {
				if r, err := m.readRecord(run.Name(), task); err == nil {
					add(r)
				}
			}
		}
	}
	for p, reg := range regs {
		br := strings.TrimPrefix(reg.Branch, "refs/heads/")
		if !strings.HasPrefix(p, m.Root+string(filepath.Separator)) && !strings.HasPrefix(br, BranchPrefix) {
			continue
		}
		run, task := runTask(m.Root, p)
		add(Record{Run: run, Task: task, Branch: br, Path: p})
	}
	dirs, _ := os.ReadDir(m.Root)
	for _, run := range dirs {
		tasks, _ := os.ReadDir(filepath.Join(m.Root, run.Name()))
		for _, t := range tasks {
			if t.IsDir() {
				p := filepath.Join(m.Root, run.Name(), t.Name())
				add(Record{Run: run.Name(), Task: t.Name(), Branch: Branch(run.Name(), t.Name()), Path: p})
			}
		}
	}
	var list []Info
	for p, i := range byPath {
		reg, ok := regs[p]
		i.Registered, i.GitLocked = ok, ok && reg.Locked
		_, err := os.Stat(p)
		i.DirExists = err == nil
		i.InUse = ValidName(i.Run) && ValidName(i.Task) && m.inUse(i.Run, i.Task)
		if i.DirExists && i.Registered {
			var err error
			if i.Dirty, err = m.Dirty(ctx, p); err != nil {
				i.Dirty = true // when in doubt (a rewritten .git), keep it
			}
		}
		hasBranch := i.Branch != "" && m.branchExists(ctx, i.Branch)
		untouched := false
		if hasBranch {
			// No commit beyond its base: nothing was done there, so
			// nothing was merged either.
			tip, err := m.branchHead(ctx, i.Branch)
			untouched = err == nil && i.Base != "" && tip == i.Base
			left, err := m.Unmerged(ctx, i.Branch, m.targets(ctx, i.Record, nil))
			if err != nil {
				return nil, err
			}
			i.Unmerged = len(left)
		}
		switch {
		case i.InUse:
			i.State = "in-use"
		case i.DirExists && !i.Registered:
			i.State = "orphan-dir"
		case i.Registered && !i.DirExists:
			i.State = "missing-dir"
		case i.Dirty:
			i.State = "dirty"
		case !hasBranch:
			i.State = "no-branch"
		case i.Unmerged > 0:
			i.State = "unmerged"
		case untouched:
			i.State = "untouched"
		default:
			i.State = "merged"
		}
		list = append(list, *i)
	}
	sort.Slice(list, func(a, b int) bool { return list[a].Path < list[b].Path })
	return list, nil
}

func runTask(root, p string) (string, string) {
	rel, err := filepath.Rel(root, p)
	if err != nil || strings.HasPrefix(rel, "..") {
		return "", filepath.Base(p)
	}
	run, task, _ := strings.Cut(rel, string(filepath.Separator))
	return run, task
}

// GCOptions tune GC.
type GCOptions struct {
	DryRun bool
	// Force also removes dirty worktrees and unmerged branches (never one in use).
	Force bool
	// OlderThan keeps worktrees created more recently (0 = any age).
	OlderThan time.Duration
	Targets   []string
}

// GCAction is what GC did (or, dry, would do) with one worktree.
type GCAction struct {
	Path   string `json:"path"`
	Branch string `json:"branch"`
	Action string `json:"action"` // remove | keep | prune
	Reason string `json:"reason"`
}

// GC removes tai's worktrees whose work is safe elsewhere: merged (also by
// squash) or pushed, clean and not in use. Registrations whose directory
// is gone are pruned.
func (m *Manager) GC(ctx context.Context, o GCOptions) ([]GCAction, error) {
	list, err := m.List(ctx)
	if err != nil {
		return nil, err
	}
	var acts []GCAction
	for _, i := range list {
		a := GCAction{Path: i.Path, Branch: i.Branch, Action: "keep"}
		switch {
		case i.InUse:
			a.Reason = fmt.Sprintf("in use (pid %d)", i.Owner.PID)
		case o.OlderThan > 0 && !i.Created.IsZero() && m.Clock.Since(i.Created) < o.OlderThan:
			a.Reason = "younger than " + o.OlderThan.String()
		case i.State == "dirty" && !o.Force:
			a.Reason = "uncommitted changes (use --force)"
		case i.State == "orphan-dir" && !o.Force:
			a.Reason = "directory unknown to git, may hold uncommitted work (use --force)"
		case i.Unmerged > 0 && !o.Force:
			a.Reason = fmt.Sprintf("%d commit(s) neither merged nor pushed (use --force)", i.Unmerged)
		default:
			a.Action = "remove"
			a.Reason = i.State
			if o.Force && (i.Unmerged > 0 || i.Dirty) {
				a.Reason += " (forced)"
			}
		}
		if a.Action == "remove" && !o.DryRun {
			if err := m.Remove(ctx, i.Record, RemoveOptions{Force: o.Force, Targets: o.Targets}); err != nil {
				if errors.Is(err, ErrInUse) || errors.Is(err, ErrUnmerged) || errors.Is(err, ErrDirty) {
					a.Action, a.Reason = "keep", err.Error()
				} else {
					return acts, err
				}
			}
		}
		acts = append(acts, a)
	}
	if !o.DryRun {
		if _, err := m.git(ctx, m.Repo, "worktree", "prune"); err != nil {
			return acts, fmt.Errorf("worktree: %w", err)
		}
	}
	return acts, nil
}
