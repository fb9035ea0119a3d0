package shell

import (
	"testing"
)

func TestHasOutputRedirect(t *testing.T) {
	for in, want := range map[string]bool{
		"go test ./...":                false,
		"go test 2>&1":                 false,
		"go test >/dev/null 2>&1":      false,
		"go test &> /dev/null":         false,
		"go test > out.txt":            true,
		"go test >> out.txt":           true,
		"go test 2> err.txt":           true,
		"echo '>' x":                   false,
		`echo ">" x`:                   false,
		"tee >(cat)":                   false,
		"cat > /etc/passwd":            true,
		"go test >| out":               true,
		"go test 1>&2 > /dev/null":     false,
		"go test > /dev/null > real":   true,
		`printf 'a\>b' > /dev/null`:    false,
		"go test >/dev/nullx":          true,
		"cmd 3>&-":                     false,
		"cmd <input.txt":               false,
		"cmd < in > /dev/null 2>&1 &&": false,
	} {
		if got := HasOutputRedirect(in); got != want {
			t.Errorf("hasOutputRedirect(%q) = %v, want %v", in, got, want)
		}
	}
}
