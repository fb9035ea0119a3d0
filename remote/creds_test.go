package remote

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLocalURL(t *testing.T) {
	host, _ := os.Hostname()
	for _, tc := range []struct {
		url  string
		want bool
	}{
		{"nats://127.0.0.1:4222", true},
		{"nats://localhost:4222", true},
		{"127.0.0.1:4222", true},
		{"nats://[::1]:4222", true},
		{"nats://" + host + ":4222", host != ""},
		{"nats://127.0.0.1:1,nats://localhost:2", true},
		// Another host never gets this host's token, even in a list.
		{"nats://example.com:4222", false},
		{"nats://127.0.0.1:1,nats://example.com:2", false},
		{"nats://192.0.2.1:4222", false},
		{"", false},
		{"nats://", false},
	} {
		if got := localURL(tc.url); got != tc.want {
			t.Errorf("localURL(%q) = %v, want %v", tc.url, got, tc.want)
		}
	}
}

// A hub without credentials makes its token once, 0600 in the hidden
// secrets directory; the next hub and this host's clients read the same.
func TestHubTokenMadeOnce(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	tok, path, err := HubToken()
	if err != nil {
		t.Fatal(err)
	}
	if len(tok) != 64 || path != HubTokenFile() {
		t.Fatalf("token %q at %s", tok, path)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("%s: %v %v", path, fi.Mode(), err)
	}
	if di, err := os.Stat(filepath.Dir(HubTokenFile())); err != nil || di.Mode().Perm() != 0o700 {
		t.Fatalf("secrets dir: %v %v", di.Mode(), err)
	}
	again, _, err := HubToken()
	if err != nil || again != tok {
		t.Fatalf("second hub: %q, %v; want the first's", again, err)
	}
	for url, want := range map[string]string{"nats://127.0.0.1:4222": tok, "nats://example.com:4222": ""} {
		if got, err := LocalHubToken(url); err != nil || got != want {
			t.Errorf("LocalHubToken(%s) = %q, %v; want %q", url, got, err, want)
		}
	}
}

// The server's configuration opens the client port only: no monitoring,
// websocket, leaf node, cluster or gateway listener that skips the token.
func TestHubConfigOnlyClients(t *testing.T) {
	conf, err := hubConfig("127.0.0.1", -1, "/store", "tok")
	if err != nil {
		t.Fatal(err)
	}
	for _, open := range []string{"http", "monitor", "websocket", "leafnodes", "cluster", "gateway", "mqtt"} {
		if strings.Contains(string(conf), open) {
			t.Errorf("the config opens %s:\n%s", open, conf)
		}
	}
	if !strings.Contains(string(conf), `token: "tok"`) {
		t.Errorf("no token:\n%s", conf)
	}
}
