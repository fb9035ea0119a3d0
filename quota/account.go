package quota

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tai-dev/tai/internal/readlimit"
)

// Credentials are where an agent keeps what identifies its account: the
// environment variables and the files (relative to the home directory)
// it reads its keys or login from.
type Credentials struct {
	Env   []string `json:"env,omitempty"`
	Files []string `json:"files,omitempty"`
}

// Account is whose limit it is: runs of the same agent with the same
// credentials share one. ID is a hash of the credentials, never their
// value.
type Account struct {
	Agent string `json:"agent"`
	// ID is "sha256:" and the first 16 hex digits of the hash of the
	// credentials found; "none" when none of them is set.
	ID string `json:"id"`
	// From names the variables and files the hash covers (names only).
	From []string `json:"from,omitempty"`
}

// AccountOf identifies agent's account from the credentials it reads, as
// set in env (KEY=VALUE) and under home. Unreadable files count as absent,
// as do a FIFO or device in a file's place (the agent writes its state).
func AccountOf(agent string, c Credentials, env []string, home string) Account {
	h := sha256.New()
	var from []string
	for _, name := range c.Env {
		v, ok := lookup(env, name)
		if !ok || v == "" {
			continue
		}
		from = append(from, "$"+name)
		h.Write([]byte("env\x00" + name + "\x00" + v + "\x00"))
	}
	for _, f := range c.Files {
		if home == "" {
			break
		}
		b, err := readlimit.ReadRegularFile(filepath.Join(home, f), readlimit.Config)
		if err != nil {
			continue
		}
		from = append(from, "~/"+f)
		h.Write([]byte("file\x00" + f + "\x00"))
		h.Write(b)
		h.Write([]byte{0})
	}
	a := Account{Agent: agent, ID: "none", From: from}
	if len(from) > 0 {
		a.ID = "sha256:" + hex.EncodeToString(h.Sum(nil))[:16]
	}
	return a
}

// lookup is the last value of name in env, as the process sees it.
func lookup(env []string, name string) (string, bool) {
	for _, kv := range slices.Backward(env) {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return v, true
		}
	}
	return "", false
}
