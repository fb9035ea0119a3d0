package redact

import "strings"

// maxNameLen bounds names considered by LooksSecret's fast path; longer
// strings are prose, not keys.
const maxNameLen = 128

// Exact names (compared case-insensitively) that are secret on their own.
var secretNames = []string{
	"token", "secret", "password", "passwd", "passphrase",
	"authorization", "proxy-authorization", "cookie", "set-cookie",
	"credential", "credentials", "private_key", "privatekey",
}

// Suffixes (case-insensitive) that make a name secret: ANTHROPIC_API_KEY,
// apiKey, x-api-key, GITHUB_TOKEN, accessToken, client_secret, DB_PASSWORD...
// Deliberately not "tokens" (max_tokens, inputTokens are usage counters) and
// not a bare camel-case "Key" (sortKey, cacheKey).
var secretSuffixes = []string{
	"_key", "-key", "apikey", "accesskey", "secretkey", "privatekey",
	"token", "secret", "password", "passwd", "_pat", "-pat",
	"credential", "credentials", "cookie", "authorization",
}

// LooksSecret reports whether a JSON key, header name or environment variable
// name suggests its value is a credential. Matching is ASCII
// case-insensitive.
func LooksSecret(name string) bool {
	return looksSecretName(name)
}

func looksSecretName[T string | []byte](name T) bool {
	if len(name) < 3 || len(name) > maxNameLen {
		return false
	}
	// Every name and suffix below ends in one of these letters; this cheap
	// check rejects most strings before the comparisons.
	switch name[len(name)-1] | 0x20 {
	case 'y', 'n', 't', 'd', 'e', 's', 'l':
	default:
		return false
	}
	for _, s := range secretNames {
		if len(name) == len(s) && equalFold(name, s) {
			return true
		}
	}
	for _, s := range secretSuffixes {
		if len(name) >= len(s) && equalFold(name[len(name)-len(s):], s) {
			return true
		}
	}
	return false
}

// equalFold compares a with the lower-case ASCII string b, ignoring ASCII
// case, without allocating.
func equalFold[T, U string | []byte](a T, lowerB U) bool {
	if len(a) != len(lowerB) {
		return false
	}
	for i := 0; i < len(a); i++ {
		c := a[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lowerB[i] {
			return false
		}
	}
	return true
}

// MinEnvSecretLen is the shortest environment value SecretEnvLiterals
// returns; shorter values ("1", "true", "none") are not secrets worth
// scrubbing and would shred ordinary text.
const MinEnvSecretLen = 8

// SecretEnvLiterals returns the values of environment variables (in
// os.Environ "NAME=value" form) whose names look secret — ANTHROPIC_API_KEY,
// OPENAI_API_KEY, GITHUB_TOKEN, AWS_SECRET_ACCESS_KEY, ... — skipping values
// shorter than MinEnvSecretLen. The result is suitable for
// Options.Literals.
func SecretEnvLiterals(environ []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || len(value) < MinEnvSecretLen || !LooksSecret(name) {
			continue
		}
		if strings.TrimSpace(value) == "" || seen[value] {
			continue
		}
		seen[value] = true
		out = append(out, value)
	}
	return out
}
