//go:build linux && cgo

package sandbox

import "C" // links launcher_linux.c: the native launcher, a constructor that runs before the Go runtime starts

// Native says whether `tai __tai-launch` is the native launcher.
const Native = true
