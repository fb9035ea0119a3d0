package preset

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/tai-dev/tai/internal/readlimit"
)

// testedTSV is the one list of the agents' npm packages at the versions
// tai's suites run (scripts/install-agents.sh installs from it).
//
//go:embed tested.tsv
var testedTSV string

// Pin is one row of tested.tsv: an install of scripts/install-agents.sh.
type Pin struct {
	Name    string // the install's name: qwen, qwen-old, node22, ...
	Package string // npm package
	Version string
	Exe     string // the executable, relative to the install directory
}

// Pins returns tested.tsv's rows, in order.
func Pins() ([]Pin, error) {
	pins, err := embeddedPins()
	return slices.Clone(pins), err
}

var embeddedPins = sync.OnceValues(func() ([]Pin, error) { return parsePins(testedTSV) })

func parsePins(src string) ([]Pin, error) {
	var out []Pin
	for i, line := range strings.Split(src, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) != 4 || f[0] == "" || f[1] == "" || f[3] == "" {
			return nil, fmt.Errorf("tested.tsv:%d: want 4 tab-separated fields (name, package, version, executable), got %q", i+1, line)
		}
		if _, ok := parseVersion(f[2]); !ok {
			return nil, fmt.Errorf("tested.tsv:%d: version %q is not MAJOR.MINOR.PATCH", i+1, f[2])
		}
		out = append(out, Pin{Name: f[0], Package: f[1], Version: f[2], Exe: f[3]})
	}
	return out, nil
}

// Range is the releases of a package tai's suites run, oldest to newest.
type Range struct {
	Oldest string `json:"oldest"`
	Newest string `json:"newest"`
}

func (r Range) String() string {
	if r.Oldest == r.Newest {
		return r.Newest
	}
	return r.Oldest + "–" + r.Newest
}

// TestedRange is the range of the preset's npm package in tested.tsv;
// false for an agent tai does not test (no package, or none pinned).
func (p Preset) TestedRange() (Range, bool) {
	pins, err := embeddedPins()
	if err != nil || p.Package == "" {
		return Range{}, false
	}
	return rangeOf(pins, p.Package)
}

func rangeOf(pins []Pin, pkg string) (Range, bool) {
	var r Range
	for _, pin := range pins {
		if pin.Package != pkg {
			continue
		}
		if r.Oldest == "" || compareVersions(pin.Version, r.Oldest) < 0 {
			r.Oldest = pin.Version
		}
		if r.Newest == "" || compareVersions(pin.Version, r.Newest) > 0 {
			r.Newest = pin.Version
		}
	}
	return r, r.Newest != ""
}

// VersionStatus is how an installed version stands to the tested range.
type VersionStatus string

// The version statuses.
const (
	VersionTested  VersionStatus = "tested"            // within the range
	VersionOlder   VersionStatus = "older than tested" // before its oldest
	VersionNewer   VersionStatus = "newer than tested" // after its newest
	VersionUnknown VersionStatus = "unknown"           // not read, or not a release number
)

// Status places version in the range.
func (r Range) Status(version string) VersionStatus {
	if _, ok := parseVersion(version); !ok || r.Newest == "" {
		return VersionUnknown
	}
	switch {
	case compareVersions(version, r.Oldest) < 0:
		return VersionOlder
	case compareVersions(version, r.Newest) > 0:
		return VersionNewer
	}
	return VersionTested
}

// parseVersion reads MAJOR.MINOR.PATCH, optionally with npm semver's
// prerelease and build suffixes; a prerelease sorts before its release.
func parseVersion(v string) ([4]int, bool) {
	var out [4]int
	core, _, _ := strings.Cut(v, "+")
	core, pre, hasPre := strings.Cut(core, "-")
	parts := strings.Split(core, ".")
	if len(parts) != 3 {
		return out, false
	}
	for i, s := range parts {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return out, false
		}
		out[i] = n
	}
	// A release sorts after its prereleases: 1 for none, 0 for any.
	out[3] = 1
	if hasPre && pre != "" {
		out[3] = 0
	}
	return out, true
}

// compareVersions orders two versions parseVersion reads (-1, 0, 1);
// prereleases of one release compare equal to each other.
func compareVersions(a, b string) int {
	va, _ := parseVersion(a)
	vb, _ := parseVersion(b)
	for i := range va {
		switch {
		case va[i] < vb[i]:
			return -1
		case va[i] > vb[i]:
			return 1
		}
	}
	return 0
}

// maxPackageJSON bounds the package.json read for a version.
const maxPackageJSON = 1 << 20

// InstalledVersion reads the version of the preset's npm package that
// the executable at path belongs to, as npm installed it: from the
// package.json of that package found walking up from the executable's
// real path (a global install's bin is a link into the package), or in a
// node_modules beside a directory on that way (a platform binary, such as
// opencode's or Copilot's, lives in a package of its own next to the
// main one). Nothing is run: an agent's --version would run it
// unconfined. False when no such package.json is found.
func (p Preset) InstalledVersion(path string) (string, bool) {
	if p.Package == "" || path == "" {
		return "", false
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", false
	}
	for dir := filepath.Dir(real); ; dir = filepath.Dir(dir) {
		for _, pj := range []string{
			filepath.Join(dir, "package.json"),
			filepath.Join(dir, "node_modules", filepath.FromSlash(p.Package), "package.json"),
		} {
			if v, ok := packageVersion(pj, p.Package); ok {
				return v, true
			}
		}
		if dir == filepath.Dir(dir) {
			return "", false
		}
	}
}

// packageVersion is the version in the package.json at path when it is
// the named package's.
func packageVersion(path, name string) (string, bool) {
	b, err := readlimit.ReadRegularFile(path, maxPackageJSON)
	if err != nil {
		return "", false
	}
	var pj struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	}
	if err := json.Unmarshal(b, &pj); err != nil || pj.Name != name || pj.Version == "" {
		return "", false
	}
	return pj.Version, true
}
