package pty

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Chunk is one entry of a recording: output of the app ("o"), input sent
// to it ("i") or a marker ("m"), at an offset from the start.
type Chunk struct {
	At   time.Duration
	Kind string
	Data []byte
}

// ReadRecording parses a recording written by Config.Record or by
// internal/capture: a "#" header, then "MICROS KIND BASE64" lines.
func ReadRecording(r io.Reader) ([]Chunk, error) {
	var out []Chunk
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 64<<20)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 3 {
			return nil, fmt.Errorf("recording line %d: want 3 fields", n)
		}
		us, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("recording line %d: %w", n, err)
		}
		data, err := base64.StdEncoding.DecodeString(f[2])
		if err != nil {
			return nil, fmt.Errorf("recording line %d: %w", n, err)
		}
		out = append(out, Chunk{At: time.Duration(us) * time.Microsecond, Kind: f[1], Data: data})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading the recording: %w", err)
	}
	return out, nil
}
