package feed

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// TokenFile is the user's feed secret, in the secret directory below the
// feed directory (both 0700, the file 0600): every request on a feed's
// socket carries it. The sandbox denies reading SecretDir (agentspec), so
// a caller with it is outside every sandbox; the peer check
// (sandbox.ConfinedPeer) is the other proof.
const TokenFile = "token"

// secretSub is the secret directory's name in a feed directory.
const secretSub = "secret"

// SecretDirs are where this user's feed secrets live, made if missing so
// that the sandbox can hide them (Landlock hides only what exists): the
// secret of DefaultDir, and of the temp directory's feed directory, which
// a tai started without XDG_RUNTIME_DIR uses.
func SecretDirs() []string {
	var out []string
	for _, d := range []string{DefaultDir(), tempDir()} {
		p := filepath.Join(d, secretSub)
		if slices.Contains(out, p) {
			continue
		}
		if err := ensureDir(d); err == nil {
			_ = ensureDir(p)
		}
		out = append(out, p)
	}
	return out
}

// secretPath is the feed secret of the feed directory dir.
func secretPath(dir string) string { return filepath.Join(dir, secretSub, TokenFile) }

// Secret is the feed secret of the feed directory dir, made on first use.
// It is written under another name and linked into place, so a reader
// never sees it half written and two runs starting at once agree on one.
func Secret(dir string) (string, error) {
	path := secretPath(dir)
	if err := ensureDir(filepath.Dir(path)); err != nil {
		return "", err
	}
	if tok, err := readSecret(path); err == nil || !errors.Is(err, os.ErrNotExist) {
		return tok, err
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("feed secret: %w", err)
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".token-*")
	if err != nil {
		return "", fmt.Errorf("feed secret: %w", err)
	}
	defer os.Remove(f.Name())
	_, err = f.WriteString(hex.EncodeToString(b) + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Link(f.Name(), path)
	}
	if err != nil && !errors.Is(err, os.ErrExist) {
		return "", fmt.Errorf("feed secret: %w", err)
	}
	return readSecret(path)
}

func readSecret(path string) (string, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("feed secret %s: not a private file (%s)", path, fi.Mode())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("feed secret: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if len(tok) < 32 {
		return "", fmt.Errorf("feed secret %s: too short", path)
	}
	return tok, nil
}
