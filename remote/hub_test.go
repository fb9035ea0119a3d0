package remote

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestHubListen(t *testing.T) {
	for _, tt := range []struct {
		in   string
		host string
		port int
		bad  bool
	}{
		{"", "127.0.0.1", -1, false},
		{"127.0.0.1:0", "127.0.0.1", -1, false},
		{"127.0.0.1:4222", "127.0.0.1", 4222, false},
		{":4222", "0.0.0.0", 4222, false},
		{"[::1]:4222", "::1", 4222, false},
		{"127.0.0.1", "", 0, true},
		{"127.0.0.1:x", "", 0, true},
		{"127.0.0.1:70000", "", 0, true},
	} {
		h, p, err := hubListen(tt.in)
		if (err != nil) != tt.bad || h != tt.host || p != tt.port {
			t.Errorf("hubListen(%q) = %q, %d, %v; want %q, %d, bad=%v", tt.in, h, p, err, tt.host, tt.port, tt.bad)
		}
	}
}

func TestHubConfigQuotes(t *testing.T) {
	conf, err := hubConfig("127.0.0.1", -1, `/st"ore\dir`, `to"k\en`)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`host: "127.0.0.1"`, "port: -1", `store_dir: "/st\"ore\\dir"`, `token: "to\"k\\en"`, "max_payload: 1048576"} {
		if !strings.Contains(string(conf), want) {
			t.Errorf("config lacks %s:\n%s", want, conf)
		}
	}
	if conf, _ := hubConfig("h", 1, "/s", ""); strings.Contains(string(conf), "authorization") {
		t.Errorf("no token, yet:\n%s", conf)
	}
	if _, err := hubConfig("h", 1, "/s", "a\nb"); err == nil {
		t.Error("a token with a newline was written")
	}
}

// The real server reads what hubConfig writes: a token with quotes and
// backslashes is the token clients must present.
func TestHubTokenWithEscapes(t *testing.T) {
	const tok = `s"3\c`
	h, err := StartHub(context.Background(), HubOptions{Listen: "127.0.0.1:0", Store: t.TempDir(), Token: tok, Server: natsServer})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	nc, err := Connect(h.URL(), "", tok, "t")
	if err != nil {
		t.Fatalf("the token: %v", err)
	}
	nc.Close()
	if nc, err := Connect(h.URL(), "", `s"3`, "t"); err == nil {
		nc.Close()
		t.Fatal("a prefix of the token was taken")
	}
}

func TestHubServerMissingOrFailing(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	if _, err := FindServer(""); !errors.Is(err, ErrNoServer) {
		t.Fatalf("no server: %v", err)
	}
	if _, err := StartHub(context.Background(), HubOptions{Store: t.TempDir(), Server: filepath.Join(t.TempDir(), "none")}); err == nil {
		t.Fatal("a missing --nats-server started")
	}
	// A program that exits at once: its last words are in the error.
	dir := t.TempDir()
	fake := filepath.Join(dir, "fake-server")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho 'cannot listen: address already in use' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := StartHub(context.Background(), HubOptions{Store: t.TempDir(), Server: fake})
	if err == nil || !strings.Contains(err.Error(), "ended before it was ready") || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("got %v", err)
	}
}

// A hub whose server dies says so: Done closes and Err has the cause.
func TestHubServerDies(t *testing.T) {
	h := startHub(t)
	if err := h.hub.Err(); err != nil {
		t.Fatalf("Err before the end: %v", err)
	}
	_ = h.hub.cmd.Process.Kill()
	<-h.hub.Done()
	if err := h.hub.Err(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("Err = %v", err)
	}
}
