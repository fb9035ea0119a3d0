package fleet

import (
	"strings"
	"testing"
)

// A commit's subject is the prompt's first line, as a commit subject.
func TestSubject(t *testing.T) {
	long := strings.Repeat("word ", 30)
	tests := []struct{ prompt, want string }{
		{"Add a greeting.", "Add a greeting"},
		{"\n\n  Fix   the\tbuild:\nthen test it", "Fix the build"},
		{"", ""},
		{long, strings.TrimSpace(strings.Repeat("word ", 14)) + "…"},
	}
	for _, tt := range tests {
		if got := Subject(tt.prompt); got != tt.want {
			t.Errorf("Subject(%q) = %q, want %q", tt.prompt, got, tt.want)
		}
	}
	msg := CommitMessage("r1", "a", "", "did it")
	if !strings.HasPrefix(msg, "task a\n\ndid it\n\n") || !strings.HasSuffix(msg, "Tai-Fleet-Run: r1\nTai-Fleet-Task: a\n") {
		t.Errorf("CommitMessage:\n%s", msg)
	}
}
