package app

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/tai-dev/tai/exitcode"
)

// BuildInfo is `tai version`: what this binary is and how it was built.
type BuildInfo struct {
	Version   string `json:"version"`            // Version
	Commit    string `json:"commit,omitempty"`   // vcs.revision
	Modified  bool   `json:"modified,omitempty"` // vcs.modified: built from a tree with uncommitted changes
	BuildTime string `json:"build_time,omitempty"`
	Go        string `json:"go"`
	OS        string `json:"os"`
	Arch      string `json:"arch"`
}

// Version becomes the module's version where go install gave one
// (…@v1.2.3), so that everything that says tai's version (tai version,
// --cap-manifest, the built-in agent's agentInfo, the hub's and the
// clients' info) says the same: they all read Version.
func init() {
	if bi, ok := debug.ReadBuildInfo(); ok {
		Version = moduleVersion(bi, Version)
	}
}

// moduleVersion is the main module's version, or def for a build from a
// checkout ("(devel)", or none).
func moduleVersion(bi *debug.BuildInfo, def string) string {
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	return def
}

// ReadBuildInfo describes this binary, from debug.ReadBuildInfo.
func ReadBuildInfo() BuildInfo {
	bi, _ := debug.ReadBuildInfo()
	return buildInfo(bi)
}

func buildInfo(bi *debug.BuildInfo) BuildInfo {
	b := BuildInfo{Version: Version, Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	if bi == nil {
		return b
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Commit = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		case "vcs.time":
			b.BuildTime = s.Value
		}
	}
	return b
}

// String is the one-line form: tai v1.2.3 (abc123def456, modified) go1.26 linux/amd64.
func (b BuildInfo) String() string {
	s := "tai " + b.Version
	switch {
	case b.Commit != "" && b.Modified:
		s += fmt.Sprintf(" (%s, modified)", short(b.Commit))
	case b.Commit != "":
		s += fmt.Sprintf(" (%s)", short(b.Commit))
	}
	return s + fmt.Sprintf(" %s %s/%s", b.Go, b.OS, b.Arch)
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// PrintVersion prints the build info as text or JSON (-o json).
func PrintVersion(w io.Writer, output string) error {
	b := ReadBuildInfo()
	if output == OutputJSON {
		return printJSON(w, b)
	}
	fmt.Fprintln(w, b.String())
	return nil
}

// printJSON is every command's -o json: indented, not HTML-escaped.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return exitcode.Said(exitcode.AgentError) // stdout is gone; nothing to say it on
	}
	return nil
}
