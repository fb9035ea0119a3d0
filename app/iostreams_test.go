package app

import (
	"io"
	"os"
	"path/filepath"
	"testing"
)

// Colour and the terminal come from the injected IO, not the process.
func TestIOColourAndTerminal(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		tty  bool
		want bool
	}{
		{"terminal", nil, true, true},
		{"pipe", nil, false, false},
		{"NO_COLOR", map[string]string{"NO_COLOR": "1"}, true, false},
		{"empty NO_COLOR is unset", map[string]string{"NO_COLOR": ""}, true, true},
		{"dumb terminal", map[string]string{"TERM": "dumb"}, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			std, _, _ := testIO(tc.env)
			std.IsTerminal = func(any) bool { return tc.tty }
			if got := std.ColorOn(std.Out); got != tc.want {
				t.Fatalf("ColorOn = %v, want %v", got, tc.want)
			}
			if std.OutTTY() != tc.tty || std.ErrTTY() != tc.tty || std.InTTY() != tc.tty {
				t.Fatal("the TTY state is not the injected one")
			}
		})
	}
}

// TTY opens the injected terminal, and refuses (and closes) a file that is
// not one.
func TestIOTTY(t *testing.T) {
	p := filepath.Join(t.TempDir(), "not-a-tty")
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var opened *os.File
	std, _, _ := testIO(nil)
	std.OpenTTY = func() (*os.File, error) {
		f, err := os.Open(p)
		opened = f
		return f, err
	}
	std.IsTerminal = func(s any) bool { return false }
	if _, ok := std.TTY(); ok {
		t.Fatal("a plain file is not a terminal")
	}
	if _, err := opened.Read(make([]byte, 1)); err == nil || err == io.EOF {
		t.Fatalf("the refused file was left open: %v", err)
	}
	std.IsTerminal = func(s any) bool { return s == opened }
	f, ok := std.TTY()
	if !ok || f != opened {
		t.Fatal("the injected terminal was not used")
	}
	f.Close()
}

// A zero IO's environment and directory are the process's.
func TestIOZeroIsTheProcess(t *testing.T) {
	t.Setenv("TAI_IO_TEST", "x")
	var std IO
	if std.Getenv("TAI_IO_TEST") != "x" {
		t.Fatal("Getenv")
	}
	wd, _ := os.Getwd()
	if got, err := std.Wd(); err != nil || got != wd {
		t.Fatalf("Wd = %q, %v", got, err)
	}
}
