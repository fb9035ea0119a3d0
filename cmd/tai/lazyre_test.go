package main

import (
	"regexp"
	"testing"

	"github.com/tai-dev/tai/internal/lazyre"
)

// Every expression compiled on first use (package lazyre) is valid: the
// test binary links every package tai does, so each one registered its
// expressions at init.
func TestLazyExpressionsCompile(t *testing.T) {
	exprs := lazyre.Registered()
	if len(exprs) == 0 {
		t.Fatal("no expression registered")
	}
	for _, e := range exprs {
		if _, err := regexp.Compile(e); err != nil {
			t.Errorf("%q: %v", e, err)
		}
	}
}
