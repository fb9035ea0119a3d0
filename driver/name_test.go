package driver

import "testing"

func TestNameKnown(t *testing.T) {
	for _, tt := range []struct {
		n    Name
		want bool
	}{
		{ACP, true}, {StreamJSON, true}, {PTY, true}, {A2A, true},
		{"", false}, {"ACP", false}, {"xyz", false},
	} {
		if got := tt.n.Known(); got != tt.want {
			t.Errorf("%q.Known() = %v, want %v", tt.n, got, tt.want)
		}
	}
	if Names()[0] != ACP {
		t.Errorf("the default driver is %q, not first", Names()[0])
	}
}
