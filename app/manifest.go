package app

import (
	"encoding/json"
	"io"

	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/driver/a2a"
	"github.com/tai-dev/tai/driver/pty"
	"github.com/tai-dev/tai/driver/streamjson"
	"github.com/tai-dev/tai/exitcode"
	"github.com/tai-dev/tai/policy"
	"github.com/tai-dev/tai/preset"
	"github.com/tai-dev/tai/sandbox"
)

// Manifest is what `tai --cap-manifest` prints: what this build can do.
// cap.md documents every field; its drift tests keep the two in step.
type Manifest struct {
	Name           string              `json:"name"`
	Version        string              `json:"version"`
	Protocols      map[string][]string `json:"protocols"`
	Drivers        []DriverInfo        `json:"drivers"`
	Presets        []PresetInfo        `json:"presets"`
	PolicyModes    []string            `json:"policy_modes"`
	NonInteractive []string            `json:"non_interactive"`
	Outputs        []string            `json:"outputs"`
	// Inputs are --input-format's values: stream-json is tai as an agent
	// (--cap-speak).
	Inputs     []string        `json:"inputs"`
	FrameTypes []string        `json:"frame_types"`
	ExitCodes  []exitcode.Info `json:"exit_codes"`
	// Sandbox is what --sandbox can do on this machine.
	Sandbox SandboxInfo `json:"sandbox"`
}

// SandboxInfo is the kernel confinement this build offers here.
type SandboxInfo struct {
	Modes   []string `json:"modes"`   // --sandbox's values
	Default string   `json:"default"` // auto
	// Available: the kernel supports Landlock, so auto confines.
	Available   bool `json:"available"`
	LandlockABI int  `json:"landlock_abi"` // the kernel's; 0 without Landlock
}

// DriverInfo is one driver and its features.
type DriverInfo struct {
	Name     string   `json:"name"`
	Features []string `json:"features"`
}

// PresetInfo is one known agent.
type PresetInfo struct {
	Name   string `json:"name"`
	Driver string `json:"driver"`
}

// ResultFrameType is the type of the last frame of a run.
const ResultFrameType = "result"

// BuildManifest describes this build.
func BuildManifest() Manifest {
	m := Manifest{
		Name:    "tai",
		Version: Version,
		Protocols: map[string][]string{
			"acp":                   {"1"},
			string(streamjson.Name): streamjson.Dialects(),
			string(a2a.Name):        a2a.Dialects(),
		},
		Drivers: []DriverInfo{{Name: "acp", Features: []string{
			"initialize", "authenticate", "session/new", "session/load", "session/resume", "session/list", "session/close",
			"session/prompt", "session/cancel", "session/set_mode", "session/set_config_option",
			"fs/read_text_file", "fs/write_text_file", "terminal", "request_permission", "mcp_servers",
			"resource", "resource_link", "$/cancel_request", "elicitation/create", "elicitation/complete",
			"additional_directories", "session/delete", "session/fork",
		}}, {Name: string(streamjson.Name), Features: streamjson.Features}, {Name: string(pty.Name), Features: pty.Features}, {Name: string(a2a.Name), Features: a2a.Features}},
		NonInteractive: []string{string(policy.NonInteractiveDeny), string(policy.NonInteractiveFail)},
		Outputs:        []string{OutputText, OutputJSON, OutputStreamJSON},
		Inputs:         []string{"text", "stream-json"},
		ExitCodes:      exitcode.All,
		Sandbox: SandboxInfo{Modes: []string{string(sandbox.ModeAuto), string(sandbox.ModeOn), string(sandbox.ModeOff)},
			Default: string(sandbox.ModeAuto), Available: sandbox.ABI() > 0, LandlockABI: sandbox.ABI()},
	}
	for _, p := range preset.All() {
		m.Presets = append(m.Presets, PresetInfo{Name: p.Name, Driver: string(p.Driver)})
	}
	for _, mo := range policy.Modes {
		m.PolicyModes = append(m.PolicyModes, string(mo))
	}
	for _, t := range driver.EventTypes {
		m.FrameTypes = append(m.FrameTypes, string(t))
	}
	m.FrameTypes = append(m.FrameTypes, ResultFrameType)
	return m
}

// PrintManifest writes the manifest as indented JSON.
func PrintManifest(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(BuildManifest())
	return nil
}
