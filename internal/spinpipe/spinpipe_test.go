package spinpipe

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/coder/quartz"
)

// Everything written comes through in order, whether the reader finds it
// while it tries or after it waits, and the end is io.EOF.
func TestReadsAllThenEOF(t *testing.T) {
	pr, pw := pipe(t)
	r := New(pr)
	defer r.Close()
	var want bytes.Buffer
	go func() {
		defer pw.Close()
		for i := range 20000 {
			line := bytes.Repeat([]byte{byte('a' + i%26)}, i%300)
			line = append(line, '\n')
			pw.Write(line)
		}
	}()
	for i := range 20000 {
		want.Write(bytes.Repeat([]byte{byte('a' + i%26)}, i%300))
		want.WriteByte('\n')
	}
	got, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("read %d bytes, want %d, or they differ", len(got), want.Len())
	}
	if n, err := r.Read(make([]byte, 8)); n != 0 || err != io.EOF {
		t.Fatalf("after the end: %d, %v; want 0, EOF", n, err)
	}
}

// A reader waiting on a pipe nobody writes returns once it is closed.
func TestCloseEndsWaitingRead(t *testing.T) {
	pr, pw := pipe(t)
	defer pw.Close()
	r := New(pr)
	done := make(chan error, 1)
	go func() {
		_, err := r.Read(make([]byte, 8))
		done <- err
	}()
	pw.Write(nil) // no data: the reader tries, then waits
	r.Close()
	if err := <-done; !errors.Is(err, os.ErrClosed) {
		t.Fatalf("read after close: %v, want os.ErrClosed", err)
	}
}

// A regular file is read as f.Read reads it; a read error says what os
// says.
func TestRegularFileAndErrors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	r := New(f)
	got, err := io.ReadAll(r)
	if err != nil || string(got) != "hello\n" {
		t.Fatalf("read %q, %v", got, err)
	}
	r.Close()
	if _, err := r.Read(make([]byte, 1)); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("read of a closed file: %v", err)
	}
	d, err := os.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var pe *os.PathError
	if _, err := New(d).Read(make([]byte, 1)); !errors.As(err, &pe) || pe.Op != "read" {
		t.Fatalf("read of a directory: %v, want a *os.PathError", err)
	}
}

// Data already in the pipe is read without waiting. An empty pipe is
// tried once and waited on while the agent does not stream; while it
// streams (data was there, or the last wait was short), Tries times.
func TestTriesOnlyWhileHot(t *testing.T) {
	clock := quartz.NewMock(t)
	waitFor := time.Duration(0) // how long the next wait takes
	waits := 0
	r, pw := tryingReader(t, func(p []byte) (int, error) {
		waits++
		clock.Advance(waitFor)
		return copy(p, "w"), nil
	})
	r.clock = clock
	tries := 0
	try := r.try
	r.try = func(fd uintptr) bool { tries++; return try(fd) }
	buf := make([]byte, 16)
	read := func(step string, wantTries, wantWaits int, want string) {
		t.Helper()
		tries, waits = 0, 0
		if n, err := r.Read(buf); err != nil || string(buf[:n]) != want || tries != wantTries || waits != wantWaits {
			t.Fatalf("%s: read %q, %v after %d tries and %d waits; want %q after %d and %d", step, buf[:n], err, tries, waits, want, wantTries, wantWaits)
		}
	}
	waitFor = 5 * time.Millisecond
	read("a new reader, empty pipe", 1, 1, "w")
	read("after a long wait", 1, 1, "w")
	waitFor = HotGap / 2
	read("still after a long wait", 1, 1, "w")
	read("after a short wait", Tries, 1, "w")
	waitFor = 2 * HotGap
	read("hot again after a short wait", Tries, 1, "w")
	read("cold after a long wait", 1, 1, "w")
	pw.Write([]byte("ready"))
	read("data in the pipe", 1, 0, "ready")
	read("hot after data was there", Tries, 1, "w")
}

// tryingReader is a Reader of a pipe that tries it, with wait in place of
// the waiting read (the test is skipped with one CPU), and the pipe's
// writing end; both are closed when the test ends.
func tryingReader(t testing.TB, wait func([]byte) (int, error)) (*Reader, *os.File) {
	t.Helper()
	pr, pw := pipe(t)
	t.Cleanup(func() { pw.Close() })
	r := New(pr)
	t.Cleanup(func() { r.Close() })
	if r.rc == nil {
		t.Skip("one CPU: the reader does not try")
	}
	r.wait = wait
	return r, pw
}

// pipe is an os.Pipe for one test.
func pipe(t testing.TB) (r, w *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	return r, w
}

// A read allocates nothing, whether it finds data at once or tries an
// empty pipe Tries times and then waits: it runs once a line in a flood.
func TestReadAllocatesNothing(t *testing.T) {
	r, pw := tryingReader(t, func(p []byte) (int, error) { return copy(p, "w"), nil })
	r.hot = true // the wait is instant: it stays hot
	buf := make([]byte, 64)
	line := []byte("line\n")
	if n := testing.AllocsPerRun(100, func() {
		pw.Write(line)
		r.Read(buf)
	}); n != 0 {
		t.Errorf("a read of data in the pipe: %v allocations, want 0", n)
	}
	if n := testing.AllocsPerRun(20, func() { r.Read(buf) }); n != 0 {
		t.Errorf("a read of an empty pipe, tried and then waited: %v allocations, want 0", n)
	}
}
