package realagents

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tai-dev/tai/preset"
)

// matrixEnv names the file the approve scenario appends its matrixRow to,
// one JSON line per agent: scripts/agent-matrix.sh turns them into the
// table of the README's newest-versions matrix.
const matrixEnv = "TAI_REALAGENTS_MATRIX"

// matrixRow is what one agent did in the approve scenario (read, write,
// shell, everything allowed), through tai.
type matrixRow struct {
	Agent   string `json:"agent"`
	Version string `json:"version"`
	Driver  string `json:"driver"`
	// Handshake: the session started.
	Handshake bool `json:"handshake"`
	// Asked: the agent asked tai for a permission.
	Asked bool `json:"asked"`
	// File: hello.txt landed, its edit decided by tai's policy (an
	// audited allow).
	File bool `json:"file"`
	// Command: the shell command was decided by tai's policy and its
	// output reached the model.
	Command bool `json:"command"`
	// Reply: the model's last answer is the result's message.
	Reply bool `json:"reply"`
	Exit  int  `json:"exit"`
}

// fillMatrix reads the row off the run's result, audit log, workspace and
// model log.
func (w *world) fillMatrix(row *matrixRow, r result) {
	row.Handshake = r.SessionID != ""
	audited := map[string]bool{}
	if hasAudit {
		for _, e := range w.auditEntries() {
			if e.Kind == "permission.decision" && e.Data.Decision == "allow" {
				audited[e.Data.RequestID] = true
			}
		}
	}
	var edit, execute bool
	for _, d := range r.Permissions {
		row.Asked = row.Asked || !d.Unrequested
		if d.Verdict != "allow" || !audited[d.RequestID] {
			continue
		}
		edit = edit || d.ToolKind == "edit"
		execute = execute || d.ToolKind == "execute"
	}
	b, err := os.ReadFile(filepath.Join(w.repo, "hello.txt"))
	row.File = edit && err == nil && string(b) == "hello\n"
	e, ok := w.consumedTurn(3)
	row.Command = execute && ok && bytes.Contains(e.Body, []byte(`hello\nshell-ok`))
	row.Reply = strings.Contains(r.Message, "the shell printed hello and shell-ok")
}

// writeMatrix appends the row to $TAI_REALAGENTS_MATRIX, if set.
func (w *world) writeMatrix(row *matrixRow) {
	path := os.Getenv(matrixEnv)
	if path == "" {
		return
	}
	if p, ok := preset.Lookup(row.Agent); ok {
		row.Driver = string(p.Driver)
	}
	b, err := json.Marshal(row)
	if err != nil {
		w.t.Errorf("encoding the matrix row: %v", err)
		return
	}
	// One short write with O_APPEND: agents running in parallel do not
	// interleave their lines.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		w.t.Errorf("%s: %v", matrixEnv, err)
		return
	}
	defer f.Close()
	if _, err := f.Write(append(b, '\n')); err != nil {
		w.t.Errorf("%s: %v", matrixEnv, err)
	}
}

// The suite runs the presets' own npm packages (read from each
// executable's package.json, which names the package), at the pins of
// preset/tested.tsv, unless it runs the newest releases
// (scripts/agent-matrix.sh sets TAI_AGENTS_LATEST).
func TestAgentsArePinned(t *testing.T) {
	need(t)
	latest := os.Getenv("TAI_AGENTS_LATEST") != ""
	for _, a := range agents {
		t.Run(a.name, func(t *testing.T) {
			exe, _ := a.installed(t)
			p, _ := preset.Lookup(a.name)
			r, ok := p.TestedRange()
			if !ok {
				t.Fatalf("preset %s (npm %q) has no pin in preset/tested.tsv", a.name, p.Package)
			}
			v, ok := p.InstalledVersion(exe)
			switch {
			case !ok:
				t.Errorf("%s is not of the preset's package %s (no package.json of it above the executable)", exe, p.Package)
			case !latest && v != r.Newest:
				t.Errorf("%s runs %s %s, not the pin %s", a.name, p.Package, v, r.Newest)
			default:
				t.Logf("%s: %s %s", a.name, p.Package, v)
			}
		})
	}
}
