package term

import (
	"bytes"
	"testing"

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
