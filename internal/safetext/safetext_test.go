package safetext

import "testing"

func TestLineAndText(t *testing.T) {
	tests := []struct {
		name, in, line, text string
	}{
		{"plain ASCII", "Run the unit tests", "Run the unit tests", "Run the unit tests"},
		{"empty", "", "", ""},
		{"CJK wide", "日本語のテスト", "日本語のテスト", "日本語のテスト"},
		{"emoji", "done ✅ 🎉", "done ✅ 🎉", "done ✅ 🎉"},
		{"emoji ZWJ sequence", "👨\u200d👩\u200d👧", "👨\u200d👩\u200d👧", "👨\u200d👩\u200d👧"},
		{"emoji variation selector", "❤\ufe0f", "❤\ufe0f", "❤\ufe0f"},
		{"accents, Arabic, ZWNJ", "café مرحبا می\u200cخواهم", "café مرحبا می\u200cخواهم", "café مرحبا می\u200cخواهم"},
		{"replacement char is valid text", "a\ufffdb", "a\ufffdb", "a\ufffdb"},
		{"erase line", "npm test\x1b[2K", `npm test\x1b[2K`, `npm test\x1b[2K`},
		{"cursor back and erase", "Run tests; rm -rf ~\x1b[12D\x1b[K", `Run tests; rm -rf ~\x1b[12D\x1b[K`, `Run tests; rm -rf ~\x1b[12D\x1b[K`},
		{"OSC title and hyperlink", "\x1b]0;x\x07\x1b]8;;http://e\x1b\\", `\x1b]0;x\x07\x1b]8;;http://e\x1b\`, `\x1b]0;x\x07\x1b]8;;http://e\x1b\`},
		{"other C0", "a\x00b\x08c\x0cd", `a\x00b\x08c\x0cd`, `a\x00b\x08c\x0cd`},
		{"DEL", "a\x7fb", `a\x7fb`, `a\x7fb`},
		{"C1 CSI and NEL", "a\u009b2Kb\u0085c", `a\u009b2Kb\u0085c`, `a\u009b2Kb\u0085c`},
		{"newline", "line1\nline2", `line1\nline2`, "line1\nline2"},
		{"tab", "a\tb", `a\tb`, "a\tb"},
		{"carriage return overwrites", "safe\rrm -rf /", `safe\rrm -rf /`, `safe\rrm -rf /`},
		{"CRLF", "a\r\nb", `a\r\nb`, "a\nb"},
		{"bidi override", "ls \u202etxt.exe", `ls \u202etxt.exe`, `ls \u202etxt.exe`},
		{"bidi embeddings", "\u202a\u202b\u202c\u202d", `\u202a\u202b\u202c\u202d`, `\u202a\u202b\u202c\u202d`},
		{"bidi isolates", "\u2066a\u2067b\u2068c\u2069", `\u2066a\u2067b\u2068c\u2069`, `\u2066a\u2067b\u2068c\u2069`},
		{"bidi marks", "\u200e\u200f\u061c", `\u200e\u200f\u061c`, `\u200e\u200f\u061c`},
		{"zero width space, word joiner, BOM", "r\u200bm\u2060x\ufeff", `r\u200bm\u2060x\ufeff`, `r\u200bm\u2060x\ufeff`},
		{"soft hyphen", "a\u00adb", `a\u00adb`, `a\u00adb`},
		{"line and paragraph separators", "a\u2028b\u2029c", `a\u2028b\u2029c`, `a\u2028b\u2029c`},
		{"tag characters", "hi\U000e0041\U000e0042", `hi\U000e0041\U000e0042`, `hi\U000e0041\U000e0042`},
		{"invalid UTF-8", "a\xffb\xc3", `a\xffb\xc3`, `a\xffb\xc3`},
		{"truncated rune then text", "\xe6\x97z", `\xe6\x97z`, `\xe6\x97z`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Line(tt.in); got != tt.line {
				t.Errorf("Line(%q) = %q, want %q", tt.in, got, tt.line)
			}
			if got := Text(tt.in); got != tt.text {
				t.Errorf("Text(%q) = %q, want %q", tt.in, got, tt.text)
			}
		})
	}
}

// What Line returns holds nothing a terminal acts on, and cleaning it again
// changes nothing.
func FuzzLine(f *testing.F) {
	for _, s := range []string{"a\x1b[2Kb", "\u202e", "\xff", "日本", "a\r\nb"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l := Line(s)
		for _, r := range l {
			if hidden(r) {
				t.Fatalf("Line(%q) = %q keeps %U", s, l, r)
			}
		}
		if Line(l) != l || Text(Text(s)) != Text(s) {
			t.Fatalf("not idempotent on %q", s)
		}
	})
}

func TestPlainStringIsNotCopied(t *testing.T) {
	s := "Run `go test ./...` in the workspace — 日本 ✅"
	if n := testing.AllocsPerRun(100, func() { _ = Line(s); _ = Text(s) }); n != 0 {
		t.Errorf("%v allocations for a plain string", n)
	}
}
