package app

import (
	"bytes"
	"encoding/json"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestBuildInfo(t *testing.T) {
	for _, tc := range []struct {
		name string
		bi   *debug.BuildInfo
		want string // String() without the Go version and platform
	}{
		{"no build info", nil, "tai " + Version},
		{"devel", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "tai " + Version},
		{"from git", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "true"}}}, "tai " + Version + " (0123456789ab, modified)"},
	} {
		b := buildInfo(tc.bi)
		suffix := " " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH
		if got := b.String(); got != tc.want+suffix {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want+suffix)
		}
	}
	var out bytes.Buffer
	if err := PrintVersion(&out, OutputJSON); err != nil {
		t.Fatal(err)
	}
	var b BuildInfo
	if err := json.Unmarshal(out.Bytes(), &b); err != nil || b.Go != runtime.Version() || b.OS == "" || b.Arch == "" || b.Version == "" {
		t.Fatalf("version -o json: %v %s", err, out.String())
	}
	if strings.Contains(out.String(), `\u003c`) {
		t.Error("HTML-escaped")
	}
}

// Every place that says tai's version says the same one, also when go
// install stamped a module version (which tai version alone used to say).
func TestVersionsAgree(t *testing.T) {
	for _, tc := range []struct {
		name string
		bi   *debug.BuildInfo
		want string
	}{
		{"devel", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, Version},
		{"no module version", &debug.BuildInfo{}, Version},
		{"go install @v1.2.3", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, "v1.2.3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			def := Version
			t.Cleanup(func() { Version = def })
			Version = moduleVersion(tc.bi, def) // as init does with the binary's own
			got := map[string]string{
				"tai version":    buildInfo(tc.bi).Version,
				"--cap-manifest": BuildManifest().Version,
				"builtin agent":  builtinOptions(IO{Err: io.Discard, LookupEnv: func(string) (string, bool) { return "", false }}, 0).Version,
			}
			for who, v := range got {
				if v != tc.want {
					t.Errorf("%s says %q, want %q", who, v, tc.want)
				}
			}
		})
	}
}
