package sandbox

import (
	"slices"
	"testing"
)

func TestDeniedPaths(t *testing.T) {
	tests := []struct {
		name, stderr string
		want         []string
	}{
		{"node", "Error: EACCES: permission denied, open '/home/u/.foo/config.json'\n    at Object.openSync (node:fs:573:18)", []string{"/home/u/.foo/config.json"}},
		{"node mkdir", "Error: EACCES: permission denied, mkdir '/home/u/.bar'", []string{"/home/u/.bar"}},
		{"rust", "Error: failed to create /home/u/.codex/sessions: Permission denied (os error 13)", []string{"/home/u/.codex/sessions"}},
		{"rust without a path", "Error: Permission denied (os error 13)", nil},
		{"go", "open /home/u/.cache/x/lock: permission denied", []string{"/home/u/.cache/x/lock"}},
		{"shell", "sh: 1: cannot create /srv/out/x.txt: Permission denied", []string{"/srv/out/x.txt"}},
		{"coreutils", "mkdir: cannot create directory ‘/srv/y’: Permission denied\ntouch: cannot touch '/srv/z': Permission denied", []string{"/srv/y", "/srv/z"}},
		{"python", "PermissionError: [Errno 13] Permission denied: '/etc/tai-test'", []string{"/etc/tai-test"}},
		{"eperm", "EPERM: operation not permitted, rename '/a/b' -> '/a/c'", []string{"/a/b", "/a/c"}},
		{"home", "EACCES: permission denied, open '~/.foo'", []string{"/h/.foo"}},
		{"not a refusal", "reading /etc/hosts\nwrote /tmp/x", nil},
		{"once each", "open /x/y: permission denied\nopen /x/y: permission denied", []string{"/x/y"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := DeniedPaths(tt.stderr, "/h"); !slices.Equal(got, tt.want) {
				t.Errorf("DeniedPaths = %q, want %q", got, tt.want)
			}
		})
	}
}
