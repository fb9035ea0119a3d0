package web

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/tai-dev/tai/internal/statedir"
)

// TokenFile is where the page's token is kept: tai's secrets directory
// (0700, the file 0600), which every agent's sandbox hides, as it hides
// the hub's token and the feeds' secret. It survives restarts, so a phone
// that opened the link once stays signed in.
func TokenFile() string { return filepath.Join(statedir.Secrets(), "web-token") }

// URLFile is where tai serve says, while it runs, the address its page is
// served on (no token): a run adds a link to the ask to its notifications.
// It is in the secrets directory too, so no agent can point the link
// elsewhere.
func URLFile() string { return filepath.Join(statedir.Secrets(), "web-url") }

// Token is the page's token: the one in path, else a new one written there
// (created exclusively: two tai serve starting at once agree on one).
func Token(path string) (string, error) {
	if tok, err := readToken(path); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return tok, err
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("web token: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("web token: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return readToken(path)
	}
	if err != nil {
		return "", fmt.Errorf("web token: %w", err)
	}
	_, err = f.WriteString(hex.EncodeToString(b) + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(path)
		return "", fmt.Errorf("web token: %w", err)
	}
	return readToken(path)
}

func readToken(path string) (string, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("web token %s: not a private file (%s)", path, fi.Mode())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("web token: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if len(tok) < 32 || strings.ContainsAny(tok, " \t\r\n") {
		return "", fmt.Errorf("web token %s: want one token of at least 32 characters", path)
	}
	return tok, nil
}

// csrfToken is the session's CSRF token: derived from the page's token, so
// it is tied to it and needs no state; a page from another site cannot
// read it.
func csrfToken(token string) string {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte("tai web csrf"))
	return hex.EncodeToString(m.Sum(nil))
}
