// Package lazyre compiles a package's regular expressions on first use
// instead of at start-up. Every start of the tai binary (tai, the
// sandbox's launcher, the built-in agent: all the same program) runs every
// package's initialisers, and most starts never match most expressions.
package lazyre

import (
	"regexp"
	"sync"
)

var (
	mu       sync.Mutex
	registry []string
)

// New returns a function that compiles expr once, on its first call, and
// returns it from then on. It panics then, as regexp.MustCompile would, if
// expr is not valid: Registered lets a test compile every one up front.
func New(expr string) func() *regexp.Regexp {
	mu.Lock()
	registry = append(registry, expr)
	mu.Unlock()
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}

// Registered is every expression New was given so far.
func Registered() []string {
	mu.Lock()
	defer mu.Unlock()
	return append([]string(nil), registry...)
}
