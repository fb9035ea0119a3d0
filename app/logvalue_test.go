package app

import (
	"bytes"
	"strings"
	"testing"
)

func TestLogValueDereferences(t *testing.T) {
	zero, sig := 0, "SIGKILL"
	var none *int
	var b bytes.Buffer
	newLogger(&b, true).Debug("terminal exited", "exit_code", &zero, "signal", &sig, "missing", none, "plain", 3)
	got := b.String()
	for _, want := range []string{"exit_code=0 ", "signal=SIGKILL ", "missing=none ", "plain=3"} {
		if !strings.Contains(got, want) {
			t.Errorf("log line lacks %q: %s", want, got)
		}
	}
	if strings.Contains(got, "0x") {
		t.Errorf("a pointer was logged: %s", got)
	}
}
