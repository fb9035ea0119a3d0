package remote

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/tai-dev/tai/internal/statedir"
)

// HubTokenFile is where a hub given no credentials keeps the token it made
// (0600, in tai's secrets directory, which every agent's sandbox hides).
// Clients on the same host read it; another host gets a copy (tai worker
// --nats-token-file FILE).
func HubTokenFile() string { return filepath.Join(statedir.Secrets(), "nats-token") }

// HubToken is the token of a hub started without credentials: the one in
// HubTokenFile, else a new one written there. A hub restarted (or a second
// one on this host) keeps it, so its clients keep working.
func HubToken() (token, path string, err error) {
	path = HubTokenFile()
	if tok, err := readToken(path); err == nil && tok != "" {
		return tok, path, nil
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", "", err
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", "", fmt.Errorf("remote: hub token: %w", err)
	}
	tok := hex.EncodeToString(b)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		// Another hub made it first: share its token.
		if tok, err := readToken(path); err == nil && tok != "" {
			return tok, path, nil
		}
		return "", "", fmt.Errorf("remote: hub token %s: empty or unreadable", path)
	}
	if err != nil {
		return "", "", fmt.Errorf("remote: hub token: %w", err)
	}
	_, err = f.WriteString(tok + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(path)
		return "", "", fmt.Errorf("remote: hub token: %w", err)
	}
	return tok, path, nil
}

// LocalHubToken is the token of this host's hub (HubTokenFile) for a
// client of url, when every server url names is on this host; "" when it
// names another host (whose server must never be handed this one's token)
// or no hub here made one.
func LocalHubToken(u string) (string, error) {
	if !localURL(u) {
		return "", nil
	}
	tok, err := readToken(HubTokenFile())
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	return tok, err
}

func readToken(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("remote: hub token: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// localURL reports whether every server of a NATS URL list ("nats://h:p",
// "h:p", comma-separated) is on this host: a loopback address, an address
// of one of its interfaces, localhost, or its host name. Names are not
// looked up (a resolver must not decide where the token goes).
func localURL(list string) bool {
	servers := strings.Split(list, ",")
	for _, s := range servers {
		s = strings.TrimSpace(s)
		if !strings.Contains(s, "://") {
			s = "nats://" + s
		}
		u, err := url.Parse(s)
		if err != nil || u.Hostname() == "" || !localHost(u.Hostname()) {
			return false
		}
	}
	return len(servers) > 0
}

func localHost(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	if name, err := os.Hostname(); err == nil && strings.EqualFold(h, name) {
		return true
	}
	ip := net.ParseIP(h)
	if ip == nil {
		return false
	}
	if ip.IsLoopback() {
		return true
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
			return true
		}
	}
	return false
}

// hubConfPath is where a hub on store keeps its server's configuration
// (which holds the token) while it runs: tai's secrets directory, not the
// store, which agents may read.
func hubConfPath(store string) string {
	sum := sha256.Sum256([]byte(store))
	return filepath.Join(statedir.Secrets(), "hub-"+hex.EncodeToString(sum[:8])+".conf")
}
