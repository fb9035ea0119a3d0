//go:build !linux

package app

import "errors"

func landlockABI() (int, error) { return 0, errors.New("Landlock is Linux only") }
