// Package secretenv knows tai's own secret environment variables (the
// hub's token, its credentials file, ...) and keeps them out of every
// environment tai hands an agent: an agent runs as the user, and what it
// is given it can send anywhere.
package secretenv

import "strings"

// prefixes name tai's own secrets: every variable that begins with one is
// read by tai for itself, never for an agent. TAI_NATS_ covers the hub's
// token and credentials (and its server, which an agent has no use for);
// TAI_FEED_TOKEN and TAI_HUB_ are reserved for the feed's and hub's.
var prefixes = []string{"TAI_NATS_", "TAI_FEED_TOKEN", "TAI_HUB_"}

// IsSecret reports whether the variable name is one of tai's own secrets.
func IsSecret(name string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// Scrub is env ("NAME=value" entries) without tai's own secrets, in a new
// slice (appending to it never writes into env).
func Scrub(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !IsSecret(name) {
			out = append(out, kv)
		}
	}
	return out
}

// Dropped is the names Scrub leaves out of env, for tai doctor.
func Dropped(env []string) []string {
	var out []string
	for _, kv := range env {
		if name, _, _ := strings.Cut(kv, "="); IsSecret(name) {
			out = append(out, name)
		}
	}
	return out
}
