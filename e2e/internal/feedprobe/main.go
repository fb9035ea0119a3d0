// Command feedprobe is a hostile agent's tool for tai's end-to-end tests:
// run as a command inside a run's sandbox, it tries what a human's
// channels must refuse it, and writes what happened as JSON to the file
// named by its first argument: it finds every run's feed socket in
// /proc/net/unix, reads the feed secret, reads each feed's /state and
// /events and answers the asks it finds; it SIGSTOPs tai (and at once
// SIGCONTs it, should that work); it connects to the abstract Unix socket
// named by its second argument. It tries to pause and release its own
// fleet by hand (POST /pause, /release) on every feed it finds. With a third and fourth, a feed's
// --listen address and its token (as if they leaked into a file the agent
// reads), it tries that feed on TCP too.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Report is what the probe managed; the test reads it.
type Report struct {
	Sockets     []string          `json:"sockets"`
	Secret      string            `json:"secret"` // "" or the error reading it
	SecretErr   string            `json:"secret_err"`
	Requests    map[string]int    `json:"requests"` // "SOCKET METHOD PATH" → status (0: no answer)
	Answered    []string          `json:"answered"` // asks it answered
	Errors      map[string]string `json:"errors"`
	TaiPid      int               `json:"tai_pid"`
	StopErr     string            `json:"stop_err"`     // "" if tai was stopped
	AbstractErr string            `json:"abstract_err"` // "" if it connected
}

func main() {
	if len(os.Args) != 3 && len(os.Args) != 5 {
		fmt.Fprintln(os.Stderr, "usage: feedprobe REPORT ABSTRACT-NAME [TCP-ADDR TOKEN]")
		os.Exit(2)
	}
	r := Report{Requests: map[string]int{}, Errors: map[string]string{}}
	// Only this test's runtime directory: other tai runs on the machine
	// are not the test's to poke at.
	dir := os.Getenv("XDG_RUNTIME_DIR")
	if dir != "" {
		r.Sockets = feedSockets(filepath.Join(dir, "tai"))
		b, err := os.ReadFile(filepath.Join(dir, "tai", "secret", "token"))
		r.Secret = strings.TrimSpace(string(b))
		if err != nil {
			r.SecretErr = err.Error()
		}
	}
	for _, sock := range r.Sockets {
		probe(&r, sock, func(ctx context.Context) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		}, r.Secret)
	}
	if len(os.Args) == 5 {
		addr := os.Args[3]
		probe(&r, "tcp", func(ctx context.Context) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", addr)
		}, os.Args[4])
	}
	r.TaiPid = taiPid()
	if r.TaiPid <= 1 {
		r.StopErr = "tai not found among the ancestors"
	} else if err := syscall.Kill(r.TaiPid, syscall.SIGSTOP); err != nil {
		r.StopErr = err.Error()
	} else {
		_ = syscall.Kill(r.TaiPid, syscall.SIGCONT)
	}
	if c, err := net.Dial("unix", "@"+os.Args[2]); err != nil {
		r.AbstractErr = err.Error()
	} else {
		c.Close()
	}
	b, _ := json.MarshalIndent(r, "", "  ")
	if err := os.WriteFile(os.Args[1], b, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// feedSockets are the bound Unix sockets named like a run's feed in dir.
func feedSockets(dir string) []string {
	f, err := os.Open("/proc/net/unix")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 8 {
			continue
		}
		p := fs[len(fs)-1]
		// tai binds .RUN.PID.tmp and renames it RUN.sock: the kernel's
		// table keeps the first name.
		if b := filepath.Base(p); strings.HasPrefix(b, ".") && strings.HasSuffix(b, ".tmp") {
			run := strings.TrimSuffix(strings.TrimPrefix(b, "."), ".tmp")
			if i := strings.LastIndexByte(run, '.'); i > 0 {
				p = filepath.Join(filepath.Dir(p), run[:i]+".sock")
			}
		}
		if strings.HasSuffix(p, ".sock") && filepath.Dir(p) == dir && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// probe tries a feed, named sock in the report, dialled by dial, with
// token if it has one.
func probe(r *Report, sock string, dial func(context.Context) (net.Conn, error), token string) {
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true, DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return dial(ctx)
	}}}
	do := func(method, path string, body []byte) []byte {
		key := filepath.Base(sock) + " " + method + " " + path
		req, _ := http.NewRequest(method, "http://tai"+path, bytes.NewReader(body))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			r.Errors[key] = err.Error()
			return nil
		}
		defer resp.Body.Close()
		r.Requests[key] = resp.StatusCode
		if resp.StatusCode != http.StatusOK || path == "/events" {
			return nil // a stream: its headers say enough
		}
		b, _ := io.ReadAll(resp.Body)
		return b
	}
	do(http.MethodGet, "/events", nil)
	// A fleet's pause and release by hand: an agent must not park or
	// release its own fleet.
	do(http.MethodPost, "/pause", []byte(`{"via":"terminal"}`))
	do(http.MethodPost, "/release", []byte(`{"via":"web"}`))
	var st struct{ Asks []struct{ ID string } }
	_ = json.Unmarshal(do(http.MethodGet, "/state", nil), &st)
	ids := []string{"ask-1"}
	for _, a := range st.Asks {
		ids = append(ids, a.ID)
	}
	for _, id := range ids {
		do(http.MethodPost, "/asks/"+id, []byte(`{"answer":"once","via":"dashboard"}`))
		if r.Requests[filepath.Base(sock)+" POST /asks/"+id] == http.StatusOK {
			r.Answered = append(r.Answered, filepath.Base(sock)+" "+id)
		}
	}
}

// taiPid is the first ancestor that is not tai's launcher.
func taiPid() int {
	pid := os.Getppid()
	for pid > 1 {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if !strings.Contains(string(b), "__tai-launch") {
			return pid
		}
		st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		ppid := 0
		for _, l := range strings.Split(string(st), "\n") {
			if v, ok := strings.CutPrefix(l, "PPid:"); ok {
				fmt.Sscan(v, &ppid)
			}
		}
		pid = ppid
	}
	return pid
}
