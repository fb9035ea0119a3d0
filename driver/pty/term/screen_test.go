package term

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/hinshun/vt10x"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// What vt10x does not track, watched on the byte stream, also when a
// sequence is split across writes.
func TestModesAndReplies(t *testing.T) {
	for _, tc := range []struct {
		name      string
		writes    []string
		bracketed bool
		reply     string
		text      string
	}{
		{name: "bracketed on", writes: []string{"\x1b[?2004h"}, bracketed: true},
		{name: "bracketed on then off", writes: []string{"\x1b[?2004h", "\x1b[?2004l"}},
		{name: "split sequence", writes: []string{"\x1b[?20", "04h"}, bracketed: true},
		{name: "combined params", writes: []string{"\x1b[?1049;2004h"}, bracketed: true},
		{name: "DA1 answered", writes: []string{"\x1b[c"}, reply: "\x1b[?62;22c"},
		{name: "DA2 ignored", writes: []string{"\x1b[>c"}},
		{name: "utf8 split", writes: []string{"h\xe2\x9c", "\xa6 hi"}, text: "h✦ hi"},
		{name: "cursor position report", writes: []string{"ab\x1b[6n"}, reply: "\x1b[1;3R", text: "ab"},
		// Claude Code's kitty keyboard query after its first frame: vt10x
		// took it for "restore cursor" and the next row landed on top.
		{name: "kitty query is not restore cursor", writes: []string{"\x1b7\x1b8x\r\n", "\x1b[?", "u\x1b[>0q\x1b[>4mab\x1b[<u"}, text: "x"},
		{name: "kitty query after a split character", writes: []string{"\x1b7\x1b8x\xe2\x9c", "\xa6\r\n\x1b[?uab"}, text: "x✦"},
		{name: "plain CSI kept", writes: []string{"a\x1b[", "3Cb\x1b[2Dc"}, text: "a  cb"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var replies bytes.Buffer
			s := NewScreen(40, 5, &replies)
			for _, w := range tc.writes {
				if n, err := s.Write([]byte(w)); err != nil || n != len(w) {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			snap := s.Snapshot()
			if snap.BracketedPaste != tc.bracketed {
				t.Errorf("bracketed paste = %v, want %v", snap.BracketedPaste, tc.bracketed)
			}
			if replies.String() != tc.reply {
				t.Errorf("replies %q, want %q", replies.String(), tc.reply)
			}
			if tc.text != "" && snap.Lines[0] != tc.text {
				t.Errorf("row 0 = %q, want %q", snap.Lines[0], tc.text)
			}
		})
	}
}

func TestAltScreenAndResize(t *testing.T) {
	s := NewScreen(20, 4, nil)
	_, _ = s.Write([]byte("main\x1b[?1049h\x1b[Halt"))
	if snap := s.Snapshot(); !snap.AltScreen || snap.Lines[0] != "alt" {
		t.Fatalf("alt screen: %+v", snap)
	}
	_, _ = s.Write([]byte("\x1b[?1049l"))
	if snap := s.Snapshot(); snap.AltScreen || snap.Lines[0] != "main" {
		t.Fatalf("back on the main screen: %q alt=%v", snap.Lines[0], snap.AltScreen)
	}
	s.Resize(30, 6)
	if snap := s.Snapshot(); snap.Cols != 30 || snap.Rows != 6 || len(snap.Lines) != 6 {
		t.Fatalf("resize: %dx%d", snap.Cols, snap.Rows)
	}
}

func numbered(from, to int, sep string) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		if i > from {
			b.WriteString(sep)
		}
		fmt.Fprintf(&b, "row %d ✦ ü", i)
	}
	return b.String()
}

func rowsOf(from, to int) []string {
	var out []string
	for i := from; i <= to; i++ {
		out = append(out, fmt.Sprintf("row %d ✦ ü", i))
	}
	return out
}

// The rows that leave the top of the main screen are kept, each once and
// in order, however the output is split across writes.
func TestScrolledRows(t *testing.T) {
	text := numbered(1, 250, "\r\n") // 249 line feeds: 150 scroll a 100-row screen
	for _, tc := range []struct {
		name   string
		writes []string
		want   []string
		erases []int
	}{
		{name: "one write", writes: []string{text}, want: rowsOf(1, 150)},
		{name: "split writes", writes: splitEvery(text, 7), want: rowsOf(1, 150)},
		{name: "split in every byte", writes: splitEvery(text, 1), want: rowsOf(1, 150)},
		{name: "bare LF, IND and NEL", writes: []string{"\x1b[100;1Ha\nb\x1bDc\x1bEd"}, want: []string{"", "", ""}},
		{name: "SU", writes: []string{"top\r\nnext\r\nthird\x1b[2S"}, want: []string{"top", "next"}},
		{name: "SU with no count", writes: []string{"top\x1b[S"}, want: []string{"top"}},
		// A pane scrolled inside a region: not the screen's history.
		{name: "region above a footer", writes: []string{"\x1b[1;99r" + numbered(1, 150, "\r\n") + "\x1b[r\x1b[100;1H\nx"}, want: []string{"row 52 ✦ ü"}},
		{name: "region below a header", writes: []string{"\x1b[2;100r\x1b[100;1H" + numbered(1, 5, "\r\n")}},
		{name: "region split across writes", writes: []string{"\x1b[2;", "100r\x1b[100;1H", numbered(1, 5, "\r\n"), "\x1b[", "r\x1b[100;1Hlast\n"}, want: []string{""}},
		{name: "alternate screen", writes: []string{"\x1b[?1049h" + numbered(1, 150, "\r\n") + "\x1b[?1049l"}},
		{name: "line feed in an OSC string", writes: []string{"\x1b[100;1H\x1b]0;a\nb\x07\x1b]2;c\n\x1b\\x"}},
		{name: "repaints", writes: []string{"\x1b[H\x1b[2J" + numbered(1, 101, "\r\n"), "\x1b[H\x1b[2J" + numbered(1, 102, "\r\n")},
			want: append(rowsOf(1, 1), rowsOf(1, 2)...), erases: []int{0, 1}},
		{name: "ED 0 from home", writes: []string{"x\x1b[H\x1b[J", "\x1b[5;1H\x1b[J"}, erases: []int{0}},
		{name: "erasing the alternate screen", writes: []string{"\x1b[?1049h\x1b[2J\x1b[H\x1b[J\x1b[?1049l"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewScreen(40, 100, nil)
			for _, w := range tc.writes {
				if _, err := s.Write([]byte(w)); err != nil {
					t.Fatal(err)
				}
			}
			got := s.TakeScrolled()
			if !slices.Equal(got.Rows, tc.want) {
				t.Errorf("rows %q,\nwant %q", got.Rows, tc.want)
			}
			if !slices.Equal(got.Erases, tc.erases) {
				t.Errorf("erases %v, want %v", got.Erases, tc.erases)
			}
			if again := s.TakeScrolled(); len(again.Rows)+len(again.Erases) != 0 {
				t.Errorf("taken twice: %+v", again)
			}
		})
	}
	// What stays on screen is vt10x's as before.
	s := NewScreen(40, 100, nil)
	_, _ = s.Write([]byte(text))
	if snap := s.Snapshot(); !slices.Equal(snap.Lines, rowsOf(151, 250)) {
		t.Errorf("screen %q", snap.Lines)
	}
}

func splitEvery(s string, n int) []string {
	var out []string
	for len(s) > n {
		out = append(out, s[:n])
		s = s[n:]
	}
	return append(out, s)
}

// BenchmarkScrollingWrite is Screen.Write on output that scrolls the
// screen at every line (a reply printed past the bottom), against vt10x
// alone on the same bytes: the cost of keeping the rows that scroll off.
func BenchmarkScrollingWrite(b *testing.B) {
	text := []byte("\x1b[38;5;12m" + numbered(1, 1000, "\x1b[0m\r\n\x1b[38;5;12m") + "\r\n")
	b.Run("screen", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		b.ReportAllocs()
		for b.Loop() {
			s := NewScreen(DefaultCols, DefaultRows, nil)
			_, _ = s.Write(text)
			_ = s.TakeScrolled()
		}
	})
	b.Run("vt10x", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		b.ReportAllocs()
		for b.Loop() {
			vt := vt10x.New(vt10x.WithSize(DefaultCols, DefaultRows))
			_, _ = vt.Write(text)
		}
	})
}

// Output the app wrote is pending until it is on the Screen and passed
// to Output: the settle must not call an app idle whose answer tai has
// not read.
func TestOutputPending(t *testing.T) {
	entered, release := make(chan struct{}, 1), make(chan struct{})
	p, err := Start(Options{Argv: []string{"sh", "-c", "printf answer; exec sleep 30"}, Output: func([]byte) {
		select {
		case entered <- struct{}{}:
			<-release
		default:
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	<-entered
	if !p.OutputPending() {
		t.Error("a chunk being applied is not pending")
	}
	close(release)
	p.Signal(syscall.SIGKILL)
	<-p.Done()
	if p.OutputPending() {
		t.Error("pending after the process is gone and its output drained")
	}
}

// The line feeds Write passes to vt10x without looking (scrollWatch.safe)
// are ones that cannot scroll: on random streams of text, line feeds and
// sequences, split at random, the rows kept are those of a watch that
// looks at every line feed.
func TestScrolledRowsSkipOnlySafeLineFeeds(t *testing.T) {
	tokens := []string{"\r\n", "\r\n", "\r\n", "\n", "\r", "\b", "\t", "\x1b[31m", "\x1b[0m", "\x1b[K", "\x1b[5C", "\x1b[2D",
		"\x1b[38G", "\x1b[H", "\x1b[11;1H", "\x1b[2J", "\x1bD", "\x1bE", "\x1bM", "\x1b7", "\x1b8", "\x1b[2S", "\x1b[2;10r",
		"\x1b[r", "\x1b[?1049h", "\x1b[?1049l", "\x1b]0;t\nt\x07", "\x1b[s", "\x1b[u", "\x1b[A", "\x1b[3B"}
	rng := rand.New(rand.NewPCG(1, 2))
	kept := 0
	for round := 0; round < 300; round++ {
		var b strings.Builder
		for range 200 {
			if rng.IntN(3) == 0 {
				n := rng.IntN(90)
				for i := range n {
					b.WriteByte(byte('a' + (round+i)%26))
				}
				continue
			}
			b.WriteString(tokens[rng.IntN(len(tokens))])
		}
		text := b.String()
		got, want := NewScreen(40, 12, nil), NewScreen(40, 12, nil)
		want.scroll.exact = true
		for rest := text; len(rest) > 0; {
			n := min(len(rest), 1+rng.IntN(64))
			_, _ = got.Write([]byte(rest[:n]))
			_, _ = want.Write([]byte(rest[:n]))
			rest = rest[n:]
		}
		g, w := got.TakeScrolled(), want.TakeScrolled()
		if !slices.Equal(g.Rows, w.Rows) || !slices.Equal(g.Erases, w.Erases) {
			t.Fatalf("round %d: kept %q %v,\nwant %q %v\nstream %q", round, g.Rows, g.Erases, w.Rows, w.Erases, text)
		}
		if gs, ws := got.Snapshot(), want.Snapshot(); !slices.Equal(gs.Lines, ws.Lines) {
			t.Fatalf("round %d: screens differ", round)
		}
		kept += len(w.Rows)
	}
	if kept == 0 {
		t.Fatal("no row scrolled off in any round: the streams test nothing")
	}
}
