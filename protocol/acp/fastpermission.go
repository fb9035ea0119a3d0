package acp

import "encoding/json"

// DecodeRequestPermission decodes the params of a session/request_permission
// as json.Unmarshal does. The common request (a session id, a tool call of
// plain members, options of plain members) is read in one pass without
// reflection; anything else (a _meta, tool call content or locations, a
// null, a duplicate object member, escaped or case-folded names) by
// encoding/json. Long strings may share data's memory, which must not be
// modified afterwards.
func DecodeRequestPermission(data []byte, r *RequestPermissionRequest) error {
	if fastPermission(data, r) {
		return nil
	}
	var m RequestPermissionRequest
	err := json.Unmarshal(data, &m)
	*r = m
	return err
}

// The members the fast path reads, by index, and those it leaves to
// encoding/json.
var (
	permissionNames       = []string{"sessionId", "toolCall", "options"}
	permissionToolNames   = []string{"toolCallId", "title", "kind", "status", "name", "rawInput", "rawOutput"}
	permissionOptionNames = []string{"optionId", "name", "kind"}
	optionKinds           = []string{string(PermissionAllowOnce), string(PermissionAllowAlways), string(PermissionRejectOnce), string(PermissionRejectAlways)}
)

func fastPermission(data []byte, r *RequestPermissionRequest) bool {
	*r = RequestPermissionRequest{}
	// encoding/json decodes a repeated object member into what the first
	// left (a merge) and a repeated array into the same elements: such a
	// request goes the slow way rather than copying those rules here.
	var seenTool, seenOptions bool
	end, ok := fields(data, permissionNames, metaSlow, func(i int, val []byte) (end int, ok bool) {
		switch i {
		case 0:
			r.SessionId, end, ok = stringValue(val)
		case 1:
			if seenTool {
				return 0, false
			}
			seenTool = true
			end, ok = permissionToolCall(val, &r.ToolCall)
		case 2:
			if seenOptions {
				return 0, false
			}
			seenOptions = true
			r.Options, end, ok = permissionOptions(val)
		}
		return end, ok
	})
	return ok && skipWS(data, end) == len(data)
}

// permissionToolCall reads the plain tool call update at the start of val.
func permissionToolCall(val []byte, tu *ToolCallUpdate) (int, bool) {
	return fields(val, permissionToolNames, toolCallSlow, func(i int, val []byte) (end int, ok bool) {
		switch i {
		case 0:
			tu.ToolCallId, end, ok = stringValue(val)
		case 1:
			var s string
			s, end, ok = stringValue(val)
			tu.Title = &s
		case 2:
			var k string
			k, end, ok = knownString(val, toolKinds)
			kind := ToolKind(k)
			tu.Kind = &kind
		case 3:
			var st string
			st, end, ok = knownString(val, toolStatuses)
			status := ToolCallStatus(st)
			tu.Status = &status
		case 4:
			var s string
			s, end, ok = stringValue(val)
			tu.Name = &s
		case 5:
			tu.RawInput, end, ok = rawValue(val)
		case 6:
			tu.RawOutput, end, ok = rawValue(val)
		}
		return end, ok
	})
}

// permissionOptions reads the array of plain options at the start of val
// (not null: encoding/json leaves the slice nil for that).
func permissionOptions(val []byte) ([]PermissionOption, int, bool) {
	if len(val) == 0 || val[0] != '[' {
		return nil, 0, false
	}
	list := make([]PermissionOption, 0, 4)
	i := skipWS(val, 1)
	if i < len(val) && val[i] == ']' {
		return list, i + 1, true
	}
	for {
		var o PermissionOption
		n, ok := fields(val[i:], permissionOptionNames, metaSlow, func(k int, v []byte) (end int, ok bool) {
			switch k {
			case 0:
				o.OptionId, end, ok = stringValue(v)
			case 1:
				o.Name, end, ok = stringValue(v)
			case 2:
				var kind string
				kind, end, ok = knownString(v, optionKinds)
				o.Kind = PermissionOptionKind(kind)
			}
			return end, ok
		})
		if !ok {
			return nil, 0, false
		}
		list = append(list, o)
		i = skipWS(val, i+n)
		if i >= len(val) {
			return nil, 0, false
		}
		switch val[i] {
		case ',':
			i = skipWS(val, i+1)
		case ']':
			return list, i + 1, true
		default:
			return nil, 0, false
		}
	}
}
