package policy

import (
	"fmt"

	"github.com/tai-dev/tai/sandbox"
)

// Limits are the policy's caps on each process tree tai launches for an
// agent (file: limits = {pids = 512, memory = "4GiB"}). A nil field is
// tai's default (sandbox.DefaultLimits), 0 no limit.
type Limits struct {
	Pids   *int64
	Memory *int64 // bytes
}

// Resolve is the limits a run gets: the policy's, tai's defaults for what
// it leaves out.
func (l Limits) Resolve() sandbox.Limits {
	out := sandbox.DefaultLimits()
	if l.Pids != nil {
		out.Pids = *l.Pids
	}
	if l.Memory != nil {
		out.Memory = *l.Memory
	}
	return out
}

// parseLimits reads the limits table: pids a count, memory a size
// (sandbox.ParseSize) or bytes; either 0 or "off" for none.
func parseLimits(v any, errAt func(string, ...any) error) (Limits, error) {
	var l Limits
	t, ok := v.(map[string]any)
	if !ok {
		return l, errAt("limits must be a table: limits = {pids = 512, memory = \"4GiB\"}, not %s", tomlType(v))
	}
	for k, x := range t {
		var n int64
		switch x := x.(type) {
		case int64:
			n = x
		case string:
			var err error
			if k == "pids" && x == "off" {
				break
			}
			if k == "memory" {
				n, err = sandbox.ParseSize(x)
			} else {
				err = fmt.Errorf("want a number or \"off\", not %q", x)
			}
			if err != nil {
				return l, errAt("limits.%s: %v", k, err)
			}
		default:
			return l, errAt("limits.%s: want a number or a string, not %s", k, tomlType(x))
		}
		if n < 0 {
			return l, errAt("limits.%s: %d is negative (0 or \"off\" is no limit)", k, n)
		}
		switch k {
		case "pids":
			l.Pids = &n
		case "memory":
			l.Memory = &n
		default:
			return l, errAt("limits: unknown key %q (have pids, memory)", k)
		}
	}
	return l, nil
}
