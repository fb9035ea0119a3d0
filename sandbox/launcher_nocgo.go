//go:build !(linux && cgo)

package sandbox

// Native says whether `tai __tai-launch` is the native launcher: not in a
// build without cgo, where the Go launcher (Main) does its job.
const Native = false
