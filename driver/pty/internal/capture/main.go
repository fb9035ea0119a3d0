// Command capture runs a TUI in tai's PTY terminal and records what the
// profiles are tested against: the raw output with timestamps (.rec, for
// the replay tests and benchmarks) and screens at chosen moments
// (.screen, the golden fixtures). It is a developer tool, run by
// driver/pty/testdata/capture.sh against `tai model serve`.
//
//	capture -o DIR -rec NAME [-cols 200 -rows 100] -- ARGV... <<steps
//
// Steps, one per line on stdin:
//
//	wait REGEXP      wait (up to 60 s) until the screen matches
//	quiet DURATION   wait until the output has been quiet that long
//	dump NAME        write the screen to DIR/NAME.screen
//	type TEXT        type TEXT (bracketed if the app enabled it)
//	key NAME         enter, esc, up, down, tab, ctrl-c, or a literal string
//	mark NAME        write a marker into the recording ("submit" starts
//	                 the turn the replays measure; "end" is written
//	                 before the app is stopped)
//	sleep DURATION
package main

import (
	"bufio"
	"encoding/base64"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tai-dev/tai/driver/pty/term"
)

func main() {
	out := flag.String("o", ".", "output directory")
	rec := flag.String("rec", "", "name of the recording (DIR/NAME.rec)")
	cols := flag.Int("cols", term.DefaultCols, "columns")
	rows := flag.Int("rows", term.DefaultRows, "rows")
	flag.Parse()
	if err := run(*out, *rec, *cols, *rows, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "capture:", err)
		os.Exit(1)
	}
}

func run(dir, recName string, cols, rows int, argv []string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var mu sync.Mutex
	start := time.Now()
	last := start
	var rec *os.File
	if recName != "" {
		f, err := os.Create(filepath.Join(dir, recName+".rec"))
		if err != nil {
			return err
		}
		defer f.Close()
		rec = f
		fmt.Fprintf(rec, "# tai pty recording v1 cols=%d rows=%d argv0=%s\n", cols, rows, filepath.Base(argv[0]))
	}
	record := func(kind string, p []byte) {
		mu.Lock()
		defer mu.Unlock()
		now := time.Now()
		if kind == "o" {
			last = now
		}
		if rec != nil {
			fmt.Fprintf(rec, "%d %s %s\n", now.Sub(start).Microseconds(), kind, base64.StdEncoding.EncodeToString(p))
		}
	}
	p, err := term.Start(term.Options{Argv: argv, Cols: cols, Rows: rows, Output: func(b []byte) { record("o", b) }})
	if err != nil {
		return err
	}
	defer func() {
		// What the app writes as it exits (opencode leaves the alternate
		// screen) is not part of the last turn: replays stop here.
		record("m", []byte("end"))
		p.Signal(syscall.SIGTERM)
		select {
		case <-p.Done():
		case <-time.After(3 * time.Second):
			p.Signal(syscall.SIGKILL)
			<-p.Done()
		}
	}()
	keys := map[string]string{"enter": "\r", "esc": "\x1b", "up": "\x1b[A", "down": "\x1b[B", "tab": "\t", "ctrl-c": "\x03"}
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		verb, arg, _ := strings.Cut(line, " ")
		fmt.Fprintf(os.Stderr, "capture: %s %s\n", verb, arg)
		switch verb {
		case "wait":
			re, err := regexp.Compile(arg)
			if err != nil {
				return err
			}
			deadline := time.Now().Add(60 * time.Second)
			for !re.MatchString(p.Screen.Snapshot().Text()) {
				if time.Now().After(deadline) {
					return fmt.Errorf("timed out waiting for %q; screen:\n%s", arg, p.Screen.Snapshot().Text())
				}
				time.Sleep(20 * time.Millisecond)
			}
		case "quiet":
			d, err := time.ParseDuration(arg)
			if err != nil {
				return err
			}
			for {
				mu.Lock()
				q := time.Since(last)
				mu.Unlock()
				if q >= d {
					break
				}
				time.Sleep(d - q)
			}
		case "dump":
			s := p.Screen.Snapshot()
			if err := os.WriteFile(filepath.Join(dir, arg+".screen"), []byte(s.Text()+"\n"), 0o644); err != nil {
				return err
			}
		case "type":
			b := []byte(arg)
			if p.Screen.BracketedPaste() {
				b = []byte("\x1b[200~" + arg + "\x1b[201~")
			}
			record("i", b)
			if _, err := p.Write(b); err != nil {
				return err
			}
		case "key":
			k, ok := keys[arg]
			if !ok {
				k = arg
			}
			record("i", []byte(k))
			if _, err := p.Write([]byte(k)); err != nil {
				return err
			}
		case "mark":
			record("m", []byte(arg))
		case "sleep":
			d, err := time.ParseDuration(arg)
			if err != nil {
				return err
			}
			time.Sleep(d)
		default:
			return fmt.Errorf("unknown step %q", verb)
		}
	}
	return sc.Err()
}
