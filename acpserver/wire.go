package acpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strconv"

	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/internal/jsonw"
)

// updateParams is a session/update notification's params.
type updateParams struct {
	SessionID string `json:"sessionId"`
	Update    update `json:"update"`
}

// maxWriteDepth bounds the nesting writeValue follows; anything deeper
// goes to encoding/json.
const maxWriteDepth = 8

// WriteParams implements jsonrpc.ParamsWriter. An update is a map, and
// encoding/json sorted each one's keys by reflection: a flood of updates
// through tai acp spent most of its time there. The values updates hold
// are written by hand, byte for byte as encoding/json (SetEscapeHTML off)
// writes them; a value of another type declines, and encoding/json
// writes the whole.
func (p updateParams) WriteParams(buf *bytes.Buffer) bool {
	buf.WriteString(`{"sessionId":`)
	_ = jsonw.String(buf, p.SessionID)
	buf.WriteString(`,"update":`)
	if !writeValue(buf, p.Update, 0) {
		return false
	}
	buf.WriteByte('}')
	return true
}

func writeValue(buf *bytes.Buffer, v any, depth int) bool {
	if depth > maxWriteDepth {
		return false
	}
	switch v := v.(type) {
	case nil:
		return writeNull(buf)
	case string:
		_ = jsonw.String(buf, v)
	case driver.ToolKind:
		_ = jsonw.String(buf, string(v))
	case bool:
		buf.WriteString(strconv.FormatBool(v))
	case int:
		buf.Write(strconv.AppendInt(buf.AvailableBuffer(), int64(v), 10))
	case int64:
		buf.Write(strconv.AppendInt(buf.AvailableBuffer(), v, 10))
	case json.RawMessage:
		if v == nil {
			return writeNull(buf)
		}
		if !jsonw.Compact(v) {
			return false // encoding/json compacts it
		}
		buf.Write(v)
	case map[string]any:
		return writeMap(buf, v, depth)
	case []map[string]any:
		if v == nil {
			return writeNull(buf)
		}
		return jsonw.Array(buf, v, func(e *map[string]any) error {
			return declined(writeMap(buf, *e, depth+1))
		}) == nil
	case []any:
		if v == nil {
			return writeNull(buf)
		}
		return jsonw.Array(buf, v, func(e *any) error {
			return declined(writeValue(buf, *e, depth+1))
		}) == nil
	default:
		return false
	}
	return true
}

// errDeclined stops jsonw.Array at a value writeValue declines.
var errDeclined = errors.New("declined")

func declined(wrote bool) error {
	if wrote {
		return nil
	}
	return errDeclined
}

func writeNull(buf *bytes.Buffer) bool {
	buf.WriteString("null")
	return true
}

// writeMap writes m with its keys sorted, as encoding/json does.
func writeMap(buf *bytes.Buffer, m map[string]any, depth int) bool {
	if m == nil {
		return writeNull(buf)
	}
	var stack [16]string
	keys := stack[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	buf.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			buf.WriteByte(',')
		}
		_ = jsonw.String(buf, k)
		buf.WriteByte(':')
		if !writeValue(buf, m[k], depth+1) {
			return false
		}
	}
	buf.WriteByte('}')
	return true
}
