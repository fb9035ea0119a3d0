package feed

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// TokenFile is the user's feed secret, in the feed directory (0600): every
// request on a feed's socket carries it. The sandbox denies reading the
// feed directory (agentspec), so a caller with it is outside every
// sandbox; the peer check (sandbox.ConfinedPeer) is the other proof.
const TokenFile = "token"

// Secret is the feed secret of dir, made on first use. It is written under
// another name and linked into place, so a reader never sees it half
// written and two runs starting at once agree on one.
func Secret(dir string) (string, error) {
	path := filepath.Join(dir, TokenFile)
	if tok, err := readSecret(path); err == nil || !errors.Is(err, os.ErrNotExist) {
		return tok, err
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("feed secret: %w", err)
	}
	f, err := os.CreateTemp(dir, ".token-*")
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
