package app

import (
	"context"
	"encoding/json"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/tai-dev/tai/exitcode"
	"github.com/tai-dev/tai/worktree"
)

// WorktreeFlags are `tai worktree`'s flags.
type WorktreeFlags struct {
	Repo      string
	JSON      bool
	DryRun    bool
	Force     bool
	OlderThan time.Duration
}

func openWorktrees(ctx context.Context, f WorktreeFlags, std IO) (*worktree.Manager, error) {
	dir := f.Repo
	if dir == "" {
		var err error
		if dir, err = std.Wd(); err != nil {
			return nil, err
		}
	}
	return worktree.Open(ctx, dir)
}

// WorktreeList runs `tai worktree list`.
func WorktreeList(ctx context.Context, f WorktreeFlags, std IO) error {
	m, err := openWorktrees(ctx, f, std)
	if err != nil {
		return exitcode.With(exitcode.Usage, fmt.Errorf("worktree list: %w", err))
	}
	list, err := m.List(ctx)
	if err != nil {
		return exitcode.With(exitcode.AgentError, fmt.Errorf("worktree list: %w", err))
	}
	if f.JSON {
		if list == nil {
			list = []worktree.Info{}
		}
		enc := json.NewEncoder(std.Out)
		enc.SetIndent("", "  ")
		_ = enc.Encode(list)
		return nil
	}
	tw := tabwriter.NewWriter(std.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STATE\tBRANCH\tUNMERGED\tOWNER PID\tPATH")
	for _, i := range list {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\n", i.State, i.Branch, i.Unmerged, i.Owner.PID, i.Path)
	}
	_ = tw.Flush()
	return nil
}

// WorktreeGC runs `tai worktree gc`.
func WorktreeGC(ctx context.Context, f WorktreeFlags, std IO) error {
	m, err := openWorktrees(ctx, f, std)
	if err != nil {
		return exitcode.With(exitcode.Usage, fmt.Errorf("worktree gc: %w", err))
	}
	acts, err := m.GC(ctx, worktree.GCOptions{DryRun: f.DryRun, Force: f.Force, OlderThan: f.OlderThan})
	if f.JSON {
		if acts == nil {
			acts = []worktree.GCAction{}
		}
		enc := json.NewEncoder(std.Out)
		enc.SetIndent("", "  ")
		_ = enc.Encode(acts)
	} else {
		verb := map[bool]string{true: "would remove", false: "removed"}[f.DryRun]
		for _, a := range acts {
			if a.Action == "remove" {
				fmt.Fprintf(std.Out, "%s %s (%s): %s\n", verb, a.Path, a.Branch, a.Reason)
			} else {
				fmt.Fprintf(std.Out, "kept %s (%s): %s\n", a.Path, a.Branch, a.Reason)
			}
		}
	}
	if err != nil {
		return exitcode.With(exitcode.AgentError, fmt.Errorf("worktree gc: %w", err))
	}
	return nil
}
