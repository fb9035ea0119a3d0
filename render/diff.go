package render

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/aymanbagabas/go-udiff"

	"github.com/tai-dev/tai/driver"
)

// maxDiffBytes bounds the text diffed inline: beyond it the diff costs more
// than it shows, and the file is on disk anyway.
const maxDiffBytes = 1 << 20

// DiffPath is how a diff names path: relative to the workspace root when
// it is inside it (the reader knows the workspace; its absolute path only
// hides the file's name), else whole.
func DiffPath(root, path string) string {
	if root != "" && filepath.IsAbs(path) {
		if rel, err := filepath.Rel(root, path); err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, "../") {
			return rel
		}
	}
	return path
}

// UnifiedDiff is c as a unified diff (3 lines of context), the lines
// without their newlines, its file named relative to root (DiffPath); a
// new file diffs against /dev/null. It is nil when nothing changes.
func UnifiedDiff(c driver.ToolContent, root string) ([]string, error) {
	name := strings.TrimPrefix(DiffPath(root, c.Path), "/")
	from, old := "a/"+name, ""
	if c.OldText == nil {
		from = "/dev/null"
	} else {
		old = *c.OldText
	}
	if old == c.NewText {
		if c.OldText == nil {
			return []string{"(an empty file)"}, nil
		}
		return nil, nil
	}
	if len(old)+len(c.NewText) > maxDiffBytes {
		return nil, fmt.Errorf("%d bytes → %d bytes: too large to diff here", len(old), len(c.NewText))
	}
	u, err := udiff.ToUnified(from, "b/"+name, old, udiff.Lines(old, c.NewText), 3)
	if err != nil {
		return nil, err
	}
	return strings.Split(strings.TrimSuffix(u, "\n"), "\n"), nil
}

// diff shows a write about to happen as a unified diff, at most
// maxDiffLines lines of it.
func (t *Text) diff(c driver.ToolContent) {
	header := "    ✎ " + DiffPath(t.root, c.Path)
	if c.OldText == nil {
		header += " (new file)"
	}
	fmt.Fprintln(t.writer(), t.style(bold, header))
	lines, err := UnifiedDiff(c, t.root)
	switch {
	case err != nil:
		fmt.Fprintln(t.writer(), t.style(dim, "    ("+err.Error()+")"))
		return
	case lines == nil:
		fmt.Fprintln(t.writer(), t.style(dim, "    (no change)"))
		return
	}
	for i, l := range lines {
		if i == maxDiffLines {
			fmt.Fprintln(t.writer(), t.style(dim, fmt.Sprintf("    … %d more lines", len(lines)-i)))
			return
		}
		col := ""
		switch {
		case strings.HasPrefix(l, "---"), strings.HasPrefix(l, "+++"):
			col = bold
		case strings.HasPrefix(l, "@@"):
			col = cyan
		case strings.HasPrefix(l, "-"):
			col = red
		case strings.HasPrefix(l, "+"):
			col = green
		}
		if col == "" {
			fmt.Fprintln(t.writer(), "    "+l)
		} else {
			fmt.Fprintln(t.writer(), t.style(col, "    "+l))
		}
	}
}
