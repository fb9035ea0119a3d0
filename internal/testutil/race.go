//go:build race

package testutil

// Race reports whether the race detector is built in: it makes code some
// 15x slower and shadows memory, so RSS says nothing of the code.
const Race = true
