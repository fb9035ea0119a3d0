package acp

import (
	"encoding/json"
	"unicode/utf8"

	"github.com/tai-dev/tai/internal/jsonw"
)

// peekTagFast returns the string value of key among data's top-level
// members without decoding the object: unions call it once per message, and
// decoding into a map cost a third of tai's CPU under an update flood. It
// agrees with peekTag (FuzzPeekTag checks that) and falls back to it for
// anything unusual.
func peekTagFast(data []byte, key string) (tag string, present bool, err error) {
	i := skipWS(data, 0)
	if i >= len(data) || data[i] != '{' {
		return slowTag(data, key)
	}
	i++
	for {
		i = skipWS(data, i)
		if i >= len(data) {
			return slowTag(data, key)
		}
		if data[i] == '}' {
			return "", false, nil
		}
		if data[i] != '"' {
			return slowTag(data, key)
		}
		ks, ke, escaped, ok := scanString(data, i)
		if !ok {
			return slowTag(data, key)
		}
		i = skipWS(data, ke)
		if i >= len(data) || data[i] != ':' {
			return slowTag(data, key)
		}
		i = skipWS(data, i+1)
		vs := i
		ve, ok := skipValue(data, i)
		if !ok {
			return slowTag(data, key)
		}
		if !escaped && string(data[ks+1:ke-1]) == key {
			// Later duplicates win in encoding/json; keep looking.
			if _, _, esc, _ := scanString(data, vs); data[vs] == '"' && !esc && utf8.Valid(data[vs+1:ve-1]) {
				tag, present = knownTags[string(data[vs+1:ve-1])], true
				if tag == "" {
					tag = string(data[vs+1 : ve-1])
				}
			} else if data[vs] == '"' {
				var s string
				if err := json.Unmarshal(data[vs:ve], &s); err != nil {
					return slowTag(data, key)
				}
				tag, present = s, true
			} else {
				tag, present = "", false
			}
		} else if escaped {
			// An escaped key might spell key; let encoding/json decide.
			return slowTag(data, key)
		}
		i = skipWS(data, ve)
		if i >= len(data) {
			return slowTag(data, key)
		}
		switch data[i] {
		case ',':
			i++
		case '}':
			return tag, present, nil
		default:
			return slowTag(data, key)
		}
	}
}

// knownTags are the tags of the unions peekTagFast reads for, returned
// without a copy.
var knownTags = func() map[string]string {
	m := map[string]string{}
	for _, t := range []string{
		UpdateUserMessageChunk, UpdateAgentMessageChunk, UpdateAgentThoughtChunk, UpdateToolCall, UpdateToolCallUpdate,
		UpdatePlan, UpdateAvailableCommandsUpdate, UpdateCurrentModeUpdate, UpdateConfigOptionUpdate, UpdateSessionInfoUpdate,
		UpdateUsageUpdate, UpdateNotice, UpdateCompactionUpdate, UpdateCompactionSummaryChunk,
		ContentText, ContentImage, ContentAudio, ContentResourceLink, ContentResource, "content", "diff", "terminal",
	} {
		m[t] = t
	}
	return m
}()

func slowTag(data []byte, key string) (string, bool, error) {
	tag, present, _, err := peekTag(data, key)
	return tag, present, err
}

func skipWS(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// scanString returns the bounds of the string starting at data[i] (the
// quote), end exclusive, and whether it holds escapes.
func scanString(data []byte, i int) (start, end int, escaped, ok bool) {
	start = i
	for j := i + 1; j < len(data); j++ {
		// Skip the plain stretches word by word: a text is mostly plain.
		if j += jsonw.PlainPrefix(data[j:]); j >= len(data) {
			break
		}
		switch data[j] {
		case '\\':
			escaped = true
			j++
		case '"':
			return start, j + 1, escaped, true
		}
	}
	return 0, 0, false, false
}

// skipValue returns the end of the JSON value starting at data[i].
func skipValue(data []byte, i int) (int, bool) {
	if i >= len(data) {
		return 0, false
	}
	switch data[i] {
	case '"':
		_, end, _, ok := scanString(data, i)
		return end, ok
	case '{', '[':
		depth := 0
		for j := i; j < len(data); j++ {
			switch data[j] {
			case '"':
				_, end, _, ok := scanString(data, j)
				if !ok {
					return 0, false
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1, true
				}
			}
		}
		return 0, false
	default:
		j := i
		for j < len(data) {
			switch data[j] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return j, j > i
			}
			j++
		}
		return j, j > i
	}
}
