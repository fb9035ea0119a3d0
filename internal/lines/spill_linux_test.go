package lines

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"testing"

	"github.com/tai-dev/tai/internal/testutil"
)

// TestLongLinePeakIsOneLine: taking a spilled line into the heap holds its
// bytes about once. The heap is first made to hold pages it used and
// freed, where the line's slice then begins; that is what makes a plain
// make([]byte, n) zero all n bytes, touching them while the spill still
// holds the line: twice its size, as one run in ten of a 100 MiB line
// through tai did (131 MiB over the base here, against 68). It runs in a
// process of its own, so the peak is this line's alone.
func TestLongLinePeakIsOneLine(t *testing.T) {
	const size = 64 << 20
	if testutil.Race {
		t.Skip("the race detector's shadow memory makes RSS meaningless")
	}
	if os.Getenv("LINES_PEAK_CHILD") == "" {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestLongLinePeakIsOneLine$", "-test.v")
		cmd.Env = append(os.Environ(), "LINES_PEAK_CHILD=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		m := regexp.MustCompile(`peak (\d+) base (\d+)`).FindSubmatch(out)
		if m == nil {
			t.Fatalf("no figures in\n%s", out)
		}
		peak, _ := strconv.ParseInt(string(m[1]), 10, 64)
		base, _ := strconv.ParseInt(string(m[2]), 10, 64)
		t.Logf("a %d MiB line: peak RSS %d MiB over a base of %d MiB", size>>20, (peak-base)>>20, base>>20)
		if peak-base > size*3/2 {
			t.Fatalf("a %d MiB line took %d MiB of peak RSS, over 1.5 times the line", size>>20, (peak-base)>>20)
		}
		return
	}
	junk := make([]byte, 8<<20)
	for i := range junk {
		junk[i] = 1
	}
	runtime.KeepAlive(junk)
	junk = nil
	runtime.GC()
	base := status(t, "VmRSS")
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil { // resets VmHWM to VmRSS
		t.Skip("cannot reset the peak RSS:", err)
	}
	lr := New(&repeatLine{n: size}, 64<<10, 256<<20)
	line, _, _, err := lr.Next()
	if err != nil || len(line) != size || line[0] != 'x' || line[size-1] != 'x' {
		t.Fatalf("a line of %d bytes, %v", len(line), err)
	}
	fmt.Printf("peak %d base %d\n", status(t, "VmHWM"), base)
}

// repeatLine reads as n 'x's and a newline, holding none of them.
type repeatLine struct{ n int }

func (r *repeatLine) Read(p []byte) (int, error) {
	if r.n < 0 {
		return 0, io.EOF
	}
	k := 0
	for ; k < len(p) && r.n > 0; k++ {
		p[k] = 'x'
		r.n--
	}
	if k < len(p) && r.n == 0 {
		p[k] = '\n'
		k++
		r.n = -1
	}
	return k, nil
}

// status reads a figure (bytes) from /proc/self/status.
func status(t *testing.T, key string) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^` + key + `:\s+(\d+) kB`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("no %s in /proc/self/status", key)
	}
	n, _ := strconv.ParseInt(string(m[1]), 10, 64)
	return n << 10
}
