package acp

// ReadTextFileRequest (fs/read_text_file) reads a file through the client,
// which may serve unsaved editor buffers. Path is absolute; Line is 1-based.
// Gated by clientCapabilities.fs.readTextFile.
type ReadTextFileRequest struct {
	SessionId string         `json:"sessionId"`
	Path      string         `json:"path"`
	Line      *int           `json:"line,omitempty"`
	Limit     *int           `json:"limit,omitempty"`
	Meta      map[string]any `json:"_meta,omitempty"`
}

// ReadTextFileResponse holds the selected text.
type ReadTextFileResponse struct {
	Content string         `json:"content"`
	Meta    map[string]any `json:"_meta,omitempty"`
}

// WriteTextFileRequest (fs/write_text_file) writes, creating the file if
// needed. Gated by clientCapabilities.fs.writeTextFile.
type WriteTextFileRequest struct {
	SessionId string         `json:"sessionId"`
	Path      string         `json:"path"`
	Content   string         `json:"content"`
	Meta      map[string]any `json:"_meta,omitempty"`
}

// WriteTextFileResponse is empty.
type WriteTextFileResponse struct {
	Meta map[string]any `json:"_meta,omitempty"`
}
