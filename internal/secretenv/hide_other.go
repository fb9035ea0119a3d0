//go:build !linux

package secretenv

// HideProcess does nothing where there is no /proc to hide from.
func HideProcess() error { return nil }
