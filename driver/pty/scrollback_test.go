package pty

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/tai-dev/tai/driver/pty/term"
)

func rows(from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("line %d", i))
	}
	return out
}

func TestScrolledBy(t *testing.T) {
	for _, tc := range []struct {
		name      string
		prev, cur []string
		want      int
	}{
		{"unchanged", rows(0, 10), rows(0, 10), 0},
		{"grew at the bottom", rows(0, 10), rows(0, 14), 0},
		{"scrolled by 3", rows(0, 10), rows(3, 13), 3},
		{"scrolled, last row still streaming", rows(0, 10), append(rows(4, 9), "line 9 and more"), 4},
		{"cleared", rows(0, 10), []string{"fresh", "screen"}, 0},
		{"from nothing", nil, rows(0, 5), 0},
		{"blank rows do not make a match", []string{"a", "", "", "", ""}, []string{"", "", "", "", "b"}, 0},
	} {
		if got := scrolledBy(tc.prev, tc.cur); got != tc.want {
			t.Errorf("%s: scrolledBy = %d, want %d", tc.name, got, tc.want)
		}
	}
}

// A transcript that scrolls a few rows per frame is kept whole: the
// scrollback plus the last screen are every row, once, in order.
func TestScrollbackKeepsWhatScrolledOff(t *testing.T) {
	var b scrollback
	const screen = 20
	last := 0
	for end := 5; end <= 200; end += 3 {
		start := max(0, end-screen)
		b.observe(append(rows(start, end), "", ""), false)
		last = end
	}
	got := append(slices.Clone(b.lines), rows(max(0, last-screen), last)...)
	if want := rows(0, last); !slices.Equal(got, want) {
		t.Fatalf("scrollback + screen:\n%q\nwant\n%q", got, want)
	}
}

func TestScrollbackBounded(t *testing.T) {
	var b scrollback
	for end := 10; end < maxScrollback+500; end += 5 {
		b.observe(rows(end-10, end), false)
	}
	if len(b.lines) != maxScrollback || b.dropped == 0 {
		t.Fatalf("%d rows kept, %d dropped", len(b.lines), b.dropped)
	}
}

// readScreen plays frames into a screen of rows rows and reads it after
// every every-th frame (and after the last), as the session does; it
// returns what was kept plus the last screen.
func readScreen(t *testing.T, frames []string, screenRows, every int) []string {
	t.Helper()
	scr := term.NewScreen(60, screenRows, nil)
	var b scrollback
	read := func() []string {
		snap, scrolled := scr.Take()
		b.take(scrolled)
		b.observe(snap.Lines, len(scrolled.Rows) > 0)
		return snap.Lines
	}
	var last []string
	for i, f := range frames {
		if _, err := scr.Write([]byte(f)); err != nil {
			t.Fatal(err)
		}
		if (i+1)%every == 0 || i == len(frames)-1 {
			last = read()
		}
	}
	b.settle()
	return append(slices.Clone(b.lines), trimBlankTail(last)...)
}

func replyRows(n int) []string {
	out := []string{"FakeTUI 1.0", ""}
	for i := 1; i <= n; i++ {
		out = append(out, fmt.Sprintf("row %d of the long reply", i))
	}
	return out
}

var chrome = []string{"────", "> type here", "────", "  status"}

// Every row of a reply longer than the screen is kept once and in order,
// however rarely the screen is read: by TUIs that repaint their whole
// transcript after erasing the screen (faketui, Ink), that print and let
// the terminal scroll, and that scroll in the alternate screen by drawing
// their rows higher (read by the frame diff, which needs every frame).
func TestScrollbackWhateverTheReader(t *testing.T) {
	repaint := func() []string {
		var frames []string
		for n := 7; n <= 150; n += 7 {
			frames = append(frames, "\x1b[H\x1b[2J"+strings.Join(append(replyRows(n), chrome...), "\r\n"))
		}
		return append(frames, "\x1b[H\x1b[2J"+strings.Join(append(replyRows(150), chrome...), "\r\n"))
	}
	printed := func() []string {
		// Rows printed as they come; a two-row live area below them is
		// redrawn in place (cursor up, erase below), as Ink does.
		all := replyRows(150)
		frames := []string{strings.Join(all[:2], "\r\n") + "\r\n" + "  ⠋ working\r\n> type here"}
		for i := 2; i < len(all); i += 5 {
			end := min(i+5, len(all))
			frames = append(frames, "\x1b[1A\r\x1b[J"+strings.Join(all[i:end], "\r\n")+"\r\n  ⠙ working\r\n> type here")
		}
		return append(frames, "\x1b[1A\r\x1b[J> type here")
	}
	scrolledAlt := func() []string {
		// A full-screen app in the alternate screen: each frame draws the
		// transcript's last rows from the top, with no line feed.
		all := replyRows(150)
		var frames []string
		for end := 2; end <= len(all); end += 3 {
			var f strings.Builder
			f.WriteString("\x1b[?1049h")
			for y, r := range all[max(0, end-20):end] {
				fmt.Fprintf(&f, "\x1b[%d;1H\x1b[2K%s", y+1, r)
			}
			frames = append(frames, f.String())
		}
		return frames
	}
	for _, tc := range []struct {
		name   string
		frames []string
		every  []int
		want   []string
	}{
		{"repaints", repaint(), []int{1, 2, 5, 1000}, append(replyRows(150), chrome...)},
		{"printed", printed(), []int{1, 3, 1000}, append(replyRows(150), "> type here")},
		{"alternate screen, read every frame", scrolledAlt(), []int{1}, replyRows(150)},
	} {
		for _, every := range tc.every {
			t.Run(fmt.Sprintf("%s/every %d", tc.name, every), func(t *testing.T) {
				got := readScreen(t, tc.frames, 20, every)
				if !slices.Equal(got, tc.want) {
					t.Fatalf("kept + screen:\n%q\nwant\n%q", got, tc.want)
				}
			})
		}
	}
}

// A repaint that is not the history again (the TUI rewrote a row, or drew
// something new) is kept from where it differs: a row twice rather than
// a row lost.
func TestScrollbackRepaintThatDiffers(t *testing.T) {
	var b scrollback
	b.take(term.Scrolled{Rows: []string{"a", "b", "c", "d"}})
	b.take(term.Scrolled{Rows: []string{"a", "b", "c", "D", "e"}, Erases: []int{0}})
	if want := []string{"a", "b", "c", "d", "D", "e"}; !slices.Equal(b.lines, want) {
		t.Fatalf("kept %q, want %q", b.lines, want)
	}
	b.take(term.Scrolled{Rows: []string{"new", "screen", "x"}, Erases: []int{0}})
	b.settle()
	if want := []string{"a", "b", "c", "d", "D", "e", "new", "screen", "x"}; !slices.Equal(b.lines, want) {
		t.Fatalf("kept %q, want %q", b.lines, want)
	}
}
