//go:build !race

package testutil

// Race reports whether the race detector is built in.
const Race = false
