package sandbox

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestSpecRoundTrip(t *testing.T) {
	for _, in := range []launchSpec{
		{Path: "/bin/sh", Args: []string{"sh", "-c", "echo 'a b'\x01", ""}, Env: []string{"A=1", "B=x=y", "É=ü"}, Restrict: 6, Ruleset: 7, CgDir: 8, CgKill: 9, Join: [2]int{-1, -1}, Home: [2]int{-1, -1}},
		{Path: "agent", Args: []string{"agent"}, Ruleset: -1, CgDir: -1, CgKill: -1, Join: [2]int{-1, -1}, Home: [2]int{-1, -1}},
		{Path: "/a", Args: []string{"a"}, Env: []string{}, Ruleset: -1, CgDir: 4, CgKill: -1, Join: [2]int{-1, -1}, Home: [2]int{-1, -1}},
		// cgroup v1 limits: pids only, both.
		{Path: "/a", Args: []string{"a"}, Env: []string{}, Ruleset: -1, CgDir: 4, CgKill: 5, Join: [2]int{6, -1}, Home: [2]int{7, -1}},
		{Path: "/a", Args: []string{"a"}, Env: []string{}, Ruleset: 3, CgDir: 4, CgKill: 5, Join: [2]int{6, 8}, Home: [2]int{7, 9}},
		{Path: "/a", Args: []string{"a"}, Env: []string{}, Ruleset: 3, CgDir: -1, CgKill: -1, Join: [2]int{-1, -1}, Home: [2]int{-1, -1}, Hide: true},
		{Path: "/a", Args: []string{"a"}, Env: []string{"A=1"}, Ruleset: 3, CgDir: -1, CgKill: -1, Join: [2]int{-1, -1}, Home: [2]int{-1, -1}, Hide: true,
			ReadOnly: []string{"/h/.gemini/settings.json", "/h/.codex/config.toml"}},
	} {
		b, fds, err := in.encode()
		if err != nil {
			t.Fatal(err)
		}
		out, err := decodeSpec(b, fds)
		if err != nil {
			t.Fatal(err)
		}
		if len(in.Env) == 0 {
			in.Env = out.Env // nil and empty alike
		}
		if !reflect.DeepEqual(in, out) {
			t.Fatalf("round trip\n in %+v\nout %+v", in, out)
		}
	}
}

func TestSpecRefusesWhatExecCannotPass(t *testing.T) {
	for _, in := range []launchSpec{
		{Path: "/bin/sh", Args: []string{"sh", "a\x00b"}},
		{Path: "/bin/sh", Args: []string{"sh"}, Env: []string{"A=\x00"}},
		{Path: "/bin/\x00sh", Args: []string{"sh"}},
		{Path: "", Args: []string{"sh"}},
		{Path: "/bin/sh"},
	} {
		in.Ruleset, in.CgDir, in.CgKill, in.Join, in.Home = -1, -1, -1, [2]int{-1, -1}, [2]int{-1, -1}
		if _, _, err := in.encode(); err == nil {
			t.Errorf("encode(%q %q %q): no error", in.Path, in.Args, in.Env)
		}
	}
}

// badSpecs are specs both launchers must refuse with a clear error.
var badSpecs = []struct {
	name string
	spec string
	fds  int
}{
	{"empty", "", 0},
	{"truncated", "tai-launch/1\x000\x000\x00/bin/sh\x001\x00sh\x000", 0},
	{"other magic", "tai-launch/2\x000\x000\x00/bin/sh\x001\x00sh\x000\x00", 0},
	{"read-only without hiding", "tai-launch/1\x0064\x000\x00/bin/sh\x001\x00sh\x000\x001\x00/a\x00", 0},
	{"relative read-only path", "tai-launch/1\x0096\x000\x00/bin/sh\x001\x00sh\x000\x001\x00a\x00", 0},
	{"empty read-only list", "tai-launch/1\x0096\x000\x00/bin/sh\x001\x00sh\x000\x000\x00", 0},
	{"flags", "tai-launch/1\x0064\x000\x00/bin/sh\x001\x00sh\x000\x00", 0},
	{"flags not a number", "tai-launch/1\x00x\x000\x00/bin/sh\x001\x00sh\x000\x00", 0},
	{"restrict flags", "tai-launch/1\x000\x004294967296\x00/bin/sh\x001\x00sh\x000\x00", 0},
	{"no path", "tai-launch/1\x000\x000\x00\x001\x00sh\x000\x00", 0},
	{"no arguments", "tai-launch/1\x000\x000\x00/bin/sh\x000\x000\x00", 0},
	{"too many arguments", "tai-launch/1\x000\x000\x00/bin/sh\x005\x00sh\x000\x00", 0},
	{"negative count", "tai-launch/1\x000\x000\x00/bin/sh\x00-1\x00sh\x000\x00", 0},
	{"environment count", "tai-launch/1\x000\x000\x00/bin/sh\x001\x00sh\x002\x00A=1\x00", 0},
	{"trailing field", "tai-launch/1\x000\x000\x00/bin/sh\x001\x00sh\x000\x00extra\x00", 0},
	{"missing descriptor", "tai-launch/1\x003\x000\x00/bin/sh\x001\x00sh\x000\x00", 1},
	{"a cgroup v1 join without its way home", "tai-launch/1\x008\x000\x00/bin/sh\x001\x00sh\x000\x00", 1},
	{"extra descriptor", "tai-launch/1\x000\x000\x00/bin/sh\x001\x00sh\x000\x00", 1},
	{"huge count", "tai-launch/1\x000\x000\x00/bin/sh\x0099999999999999999999999\x00sh\x000\x00", 0},
}

func TestDecodeSpecRefusesBadSpecs(t *testing.T) {
	for _, tc := range badSpecs {
		fds := make([]int, tc.fds)
		for i := range fds {
			fds[i] = 100 + i
		}
		if s, err := decodeSpec([]byte(tc.spec), fds); err == nil {
			t.Errorf("%s: decoded %+v", tc.name, s)
		} else if !strings.HasPrefix(err.Error(), "launch spec: ") {
			t.Errorf("%s: error %q", tc.name, err)
		}
	}
}

func FuzzDecodeSpec(f *testing.F) {
	for _, tc := range badSpecs {
		f.Add([]byte(tc.spec), uint8(tc.fds))
	}
	good, _, _ := launchSpec{Path: "/bin/sh", Args: []string{"sh", "-c", "x"}, Env: []string{"A=1"}, Ruleset: 3, CgDir: -1, CgKill: 4, Join: [2]int{5, -1}, Home: [2]int{6, -1}}.encode()
	f.Add(good, uint8(4))
	f.Fuzz(func(t *testing.T, b []byte, n uint8) {
		fds := make([]int, n%8)
		for i := range fds {
			fds[i] = 10 + i
		}
		s, err := decodeSpec(b, fds)
		if err != nil {
			return
		}
		// What decodes encodes back to the same spec.
		again, gotFds, err := s.encode()
		if err != nil {
			t.Fatalf("decoded %+v does not encode: %v", s, err)
		}
		s2, err := decodeSpec(again, gotFds)
		if err != nil || !reflect.DeepEqual(s, s2) {
			t.Fatalf("%q decodes to %+v, which encodes to %q, which decodes to %+v (%v)", b, s, again, s2, err)
		}
	})
}

// A launcher's report reads the same by hand as by encoding/json.
func TestParseReport(t *testing.T) {
	for _, line := range []string{
		`{"pid":123,"in_cgroup":true}` + "\n", `{"pid":123,"in_cgroup":false}` + "\n", `{"pid":123}` + "\n", `{"pid":7}`,
		`{"error":"starting x: Permission denied"}` + "\n", `{"error":"a \"quoted\" \\ path"}`,
		`{"pid":123,"in_cgroup":true,"later":1}`, `{"in_cgroup":true,"pid":9}`, `{"pid":-1}`, `{"pid":0}`, `{"pid":1e3}`,
	} {
		var want report
		wantErr := json.Unmarshal([]byte(line), &want)
		got, err := parseReport([]byte(line))
		if (err != nil) != (wantErr != nil) || got != want {
			t.Errorf("parseReport(%q) = %+v, %v; encoding/json: %+v, %v", line, got, err, want, wantErr)
		}
	}
	for _, bad := range []string{"", "pid", `{"pid":12`, `{"pid":"12"}x`} {
		if _, err := parseReport([]byte(bad)); err == nil {
			t.Errorf("parseReport(%q): no error", bad)
		}
	}
}
