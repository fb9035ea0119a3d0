package render

import (
	"encoding/json"
	"io"
	"sync"

	"github.com/tai-dev/tai/driver"
)

// Frames writes one JSON object per line for every event: tai's stream-json
// output, specified in cap.md.
type Frames struct {
	mu  sync.Mutex
	enc *json.Encoder
}

// NewFrames returns a frame writer.
func NewFrames(w io.Writer) *Frames {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return &Frames{enc: enc}
}

// Emit writes the event as a frame.
func (f *Frames) Emit(ev driver.Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	_ = f.enc.Encode(ev)
}

// Write writes any frame (the final result frame).
func (f *Frames) Write(v any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.enc.Encode(v)
}
