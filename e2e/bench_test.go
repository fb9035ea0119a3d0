package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

const floodUpdates = 100000

// BenchmarkFlood drives the built-in agent's flood (100k mixed updates)
// through the real tai binary, and, in the same run, a bare NDJSON decode
// loop over the same wire lines as the baseline. Compare the two
// updates/s figures.
func BenchmarkFlood(b *testing.B) {
	dir := b.TempDir()
	trace := filepath.Join(dir, "trace.jsonl")
	// One traced run captures the agent's wire lines for the baseline.
	o := taiB(b, dir, "run", "--agent-cmd", builtinWith(script("flood.yaml")), "--trace", trace, "-o", "json", "go")
	if o.code != 0 {
		b.Fatalf("exit %d: %s", o.code, o.stderr)
	}
	wire := agentLines(b, trace)

	b.Run("tai-binary", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			o := taiB(b, dir, "run", "--agent-cmd", builtinWith(script("flood.yaml")), "-o", "json", "go")
			if o.code != 0 {
				b.Fatalf("exit %d: %s", o.code, o.stderr)
			}
		}
		b.ReportMetric(float64(floodUpdates)*float64(b.N)/b.Elapsed().Seconds(), "updates/s")
	})
	b.Run("bare-decode", func(b *testing.B) {
		b.ReportAllocs()
		type envelope struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Method  string          `json:"method"`
			Params  json.RawMessage `json:"params"`
		}
		for i := 0; i < b.N; i++ {
			rd := bufio.NewReaderSize(bytes.NewReader(wire), 64<<10)
			n := 0
			for {
				line, err := rd.ReadSlice('\n')
				if len(line) > 0 {
					var e envelope
					if json.Unmarshal(line, &e) == nil && e.Method == "session/update" {
						n++
					}
				}
				if err != nil {
					break
				}
			}
			if n < floodUpdates {
				b.Fatalf("decoded %d updates", n)
			}
		}
		b.ReportMetric(float64(floodUpdates)*float64(b.N)/b.Elapsed().Seconds(), "updates/s")
	})
}

// agentLines extracts what the agent sent from a --trace file.
func agentLines(b *testing.B, path string) []byte {
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	var out bytes.Buffer
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var rec struct {
			Dir  string          `json:"dir"`
			Line json.RawMessage `json:"line"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			b.Fatal(err)
		}
		if rec.Dir == "in" {
			out.Write(rec.Line)
			out.WriteByte('\n')
		}
	}
	return out.Bytes()
}
