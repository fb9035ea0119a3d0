// Package cut shortens one line of text to a number of display columns,
// marking the cut with "…": at its end, its start or its middle. Widths
// are terminal cells (wide runes count two), so a cut line fits its
// column on screen.
package cut

import "charm.land/lipgloss/v2"

// End keeps the start of s: at most w columns, the last one "…" when cut.
func End(s string, w int) string {
	if w <= 0 {
		return ""
	}
	if lipgloss.Width(s) <= w {
		return s
	}
	r := []rune(s)
	for len(r) > 0 && lipgloss.Width(string(r))+1 > w {
		r = r[:len(r)-1]
	}
	return string(r) + "…"
}

// Start keeps the end of s (a path's last parts): at most w columns, the
// first one "…" when cut.
func Start(s string, w int) string {
	if w <= 0 {
		return ""
	}
	if lipgloss.Width(s) <= w {
		return s
	}
	r := []rune(s)
	for len(r) > 0 && lipgloss.Width(string(r))+1 > w {
		r = r[1:]
	}
	return "…" + string(r)
}

// Middle keeps both ends of s (ids that differ at either end): at most w
// columns, "…" in the middle when cut. With wide runes, or fewer than 5
// columns, it cuts at the end.
func Middle(s string, w int) string {
	if lipgloss.Width(s) <= w || w < 5 {
		return End(s, w)
	}
	r := []rune(s)
	if len(r) != lipgloss.Width(s) {
		return End(s, w)
	}
	head := (w - 1) / 2
	tail := w - 1 - head
	return string(r[:head]) + "…" + string(r[len(r)-tail:])
}
