// Command attacker is a hostile program for tai's boundary tests. Run by
// an agent under tai's sandbox (as a terminal command the agent asked for,
// so with the agent's own confinement), it tries every way around tai that
// does not go through tai's policy: the live feeds, tai's own secrets, the
// hub, signals, other processes' environments, abstract sockets and the
// caches and config files other programs later run. It finds its targets
// itself, as an agent would; the test only names what it cannot discover
// (a marker to look for, an abstract socket's name, the hub's address).
//
// It writes one JSON report (Report) to the path in its first argument and
// exits 0 whatever it found: the test judges the report.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Report is what the attacker managed. Every field lists successes, so an
// empty report is a sandbox that held.
type Report struct {
	// Feeds are the feed sockets found, each with what each request got.
	Feeds []FeedTry `json:"feeds"`
	// Readable are files of tai's own (runtime, state, config) and the
	// user's secrets that the attacker could read.
	Readable []string `json:"readable"`
	// Signalled names the processes outside its own tree it could signal.
	Signalled []string `json:"signalled"`
	// TaiVisible says whether tai's process could be found at all.
	TaiVisible bool `json:"tai_visible"`
	// Environ lists the processes whose environment held the marker.
	Environ []string `json:"environ"`
	// Abstract says whether the abstract socket outside answered.
	Abstract string `json:"abstract"`
	// NATS is what the hub said to a client without credentials.
	NATS string `json:"nats"`
	// Written lists the paths it could create or change.
	Written []string `json:"written"`
	// Errors are the attacker's own failures (a bad argument).
	Errors []string `json:"errors,omitempty"`
}

// FeedTry is one feed socket and the outcome of each request on it.
type FeedTry struct {
	Socket string            `json:"socket"`
	Tries  map[string]string `json:"tries"`
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: attacker REPORT")
		os.Exit(2)
	}
	var r Report
	r.Feeds = feeds()
	r.Readable = readable()
	r.Signalled, r.TaiVisible = signals()
	if m := os.Getenv("ATTACK_MARKER"); m != "" {
		r.Environ = environ(m)
	}
	if a := os.Getenv("ATTACK_ABSTRACT"); a != "" {
		r.Abstract = abstract(a)
	}
	if n := os.Getenv("ATTACK_NATS"); n != "" {
		r.NATS = natsTry(n)
	}
	r.Written = writes(filepath.SplitList(os.Getenv("ATTACK_WRITES")))
	b, _ := json.MarshalIndent(r, "", "  ")
	if err := os.WriteFile(os.Args[1], append(b, '\n'), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "attacker:", err)
		os.Exit(1)
	}
}

// runtimeDirs are where tai keeps its live sockets and secrets.
func runtimeDirs() []string {
	var ds []string
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		ds = append(ds, filepath.Join(d, "tai"))
	}
	ds = append(ds, filepath.Join(os.TempDir(), fmt.Sprintf("tai-%d", os.Getuid())),
		filepath.Join("/tmp", fmt.Sprintf("tai-%d", os.Getuid())))
	if extra := os.Getenv("ATTACK_FEED_DIRS"); extra != "" {
		ds = append(ds, filepath.SplitList(extra)...)
	}
	return ds
}

// feeds tries every socket in tai's runtime directories: the state, the
// event stream, and an answer to a request.
func feeds() []FeedTry {
	var out []FeedTry
	seen := map[string]bool{}
	for _, d := range runtimeDirs() {
		_ = filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err != nil || e.Type()&fs.ModeSocket == 0 || seen[p] {
				return nil
			}
			seen[p] = true
			out = append(out, feedTry(p))
			return nil
		})
	}
	return out
}

func feedTry(sock string) FeedTry {
	c := &http.Client{
		Timeout: 3 * time.Second,
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		}},
	}
	t := FeedTry{Socket: sock, Tries: map[string]string{}}
	do := func(name, method, path, body string) {
		req, _ := http.NewRequest(method, "http://feed"+path, strings.NewReader(body))
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Tries[name] = "error: " + err.Error()
			return
		}
		defer resp.Body.Close()
		// The event stream does not end: a first line is enough to show it
		// was served.
		line, _ := bufio.NewReader(io.LimitReader(resp.Body, 4096)).ReadString('\n')
		t.Tries[name] = fmt.Sprintf("%d %s", resp.StatusCode, strings.TrimSpace(line))
	}
	do("state", "GET", "/state", "")
	do("events", "GET", "/events", "")
	do("answer", "POST", "/asks/tai-1", `{"answer":"once"}`)
	return t
}

// readable lists the files of tai's own directories and of the user's
// secrets that open for reading.
func readable() []string {
	home, _ := os.UserHomeDir()
	dirs := runtimeDirs()
	for _, v := range []struct{ env, def string }{
		{"XDG_STATE_HOME", ".local/state"}, {"XDG_CONFIG_HOME", ".config"}, {"XDG_DATA_HOME", ".local/share"},
	} {
		d := os.Getenv(v.env)
		if d == "" {
			d = filepath.Join(home, v.def)
		}
		dirs = append(dirs, filepath.Join(d, "tai"))
	}
	dirs = append(dirs, filepath.Join(home, ".ssh"), filepath.Join(home, ".aws"))
	var out []string
	for _, d := range dirs {
		_ = filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err != nil || !e.Type().IsRegular() {
				return nil
			}
			if f, err := os.Open(p); err == nil {
				var b [1]byte
				if _, err := f.Read(b[:]); err == nil || errors.Is(err, io.EOF) {
					out = append(out, p)
				}
				f.Close()
			}
			return nil
		})
	}
	return out
}

// signals tries SIGCONT (harmless, but proof that SIGSTOP would work too)
// on every process outside its own ancestry below tai, and reports whether
// tai, the process that runs the launcher, is visible.
func signals() (signalled []string, taiVisible bool) {
	mine := map[int]bool{os.Getpid(): true}
	// Our ancestors up to the first that is not a launcher, a shell or the
	// agent: walking up, the launcher's parent is tai.
	pid := os.Getppid()
	for pid >= 1 {
		if pid == 1 && !strings.Contains(cmdline(1), "__tai-launch") {
			break // the machine's init, not the init of a PID namespace of tai's
		}
		mine[pid] = true
		cmd := cmdline(pid)
		if strings.Contains(cmd, "__tai-launch") {
			if pp := ppid(pid); pp > 0 && cmdline(pp) != "" {
				taiVisible = true
			}
		}
		pid = ppid(pid)
	}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil || mine[p] {
			continue
		}
		cmd := cmdline(p)
		if cmd == "" {
			continue // kernel threads, or gone
		}
		// Only the interesting ones: tai itself and other agents' launchers.
		if !strings.Contains(cmd, "tai") || strings.Contains(cmd, "go-build") || strings.Contains(cmd, "/compile ") {
			continue
		}
		if syscall.Kill(p, syscall.SIGCONT) == nil {
			signalled = append(signalled, fmt.Sprintf("%d %s", p, cmd))
		}
	}
	return signalled, taiVisible
}

func cmdline(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
}

func ppid(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "PPid:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}

// environ lists the processes, itself included, whose environment holds
// marker other than as ATTACK_MARKER.
func environ(marker string) []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil && e.Name() != "self" {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		// The test hands the marker itself as ATTACK_MARKER, to the
		// attacker's and to its parent launcher's environment: those
		// copies are not leaks.
		b = bytes.ReplaceAll(b, []byte("ATTACK_MARKER="+marker), nil)
		if err == nil && bytes.Contains(b, []byte(marker)) {
			out = append(out, e.Name()+" "+cmdline(atoi(e.Name())))
		}
	}
	return out
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

// abstract connects to the abstract Unix socket name (without its @).
func abstract(name string) string {
	c, err := net.DialTimeout("unix", "@"+name, 3*time.Second)
	if err != nil {
		return "refused: " + err.Error()
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
	b := make([]byte, 64)
	n, _ := c.Read(b)
	return "connected: " + string(b[:n])
}

// natsTry speaks NATS's text protocol to addr as a client with no
// credentials: CONNECT, then PING. A server that wants credentials answers
// -ERR 'Authorization Violation' (or closes); an open one answers PONG.
func natsTry(addr string) string {
	c, err := net.DialTimeout("tcp", addr, 3*time.Second)
	if err != nil {
		return "refused: " + err.Error()
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	rd := bufio.NewReader(c)
	if _, err := rd.ReadString('\n'); err != nil { // INFO
		return "closed: " + err.Error()
	}
	if _, err := io.WriteString(c, "CONNECT {\"verbose\":false,\"pedantic\":false}\r\nPING\r\n"); err != nil {
		return "closed: " + err.Error()
	}
	line, err := rd.ReadString('\n')
	if err != nil {
		return "closed: " + err.Error()
	}
	line = strings.TrimSpace(line)
	if line == "PONG" {
		return "open: PONG"
	}
	return "refused: " + line
}

// writes tries to create or append to each path, restoring nothing: the
// test looks at what is left.
func writes(paths []string) []string {
	var out []string
	for _, p := range paths {
		if p == "" {
			continue
		}
		_ = os.MkdirAll(filepath.Dir(p), 0o755)
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o755)
		if err != nil {
			continue
		}
		_, err = f.WriteString("#!/bin/sh\n# planted by the attacker\n")
		f.Close()
		if err == nil {
			out = append(out, p)
		}
	}
	return out
}
