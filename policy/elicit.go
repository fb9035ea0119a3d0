package policy

import (
	"fmt"
	"sort"
)

// ElicitRule is a fixed answer to an agent's elicitation, from the policy
// file's [[elicit]] tables. It is the first answerer asked:
//
//	[[elicit]]
//	id = "db"
//	message = "*database*"     # glob (or re:...) on the request's message; empty: any
//	url = "https://auth.example.com/*"   # URL mode only: the URL it answers
//	action = "accept"          # accept (default), decline or cancel
//	[elicit.answers]           # form mode: values by field name
//	name = "prod"
//	port = 5432
//
// A form rule answers only when it gives a value (or the form a default)
// for every required field; otherwise the next answerer is asked.
type ElicitRule struct {
	ID      string
	Message string
	URL     string
	Action  string
	Answers map[string]any

	message, url textPattern
}

// ElicitActions are the actions a rule may give.
var ElicitActions = []string{"accept", "decline", "cancel"}

// Matches reports whether the rule is about this request (mode "form" or
// "url").
func (r *ElicitRule) Matches(mode, message, url string) bool {
	if r.URL != "" {
		if mode != "url" || !r.url.match(url) {
			return false
		}
	} else if mode == "url" && r.Action == "accept" {
		// Accepting a URL flow needs the URL named: a rule about a message
		// must not send the user anywhere.
		return false
	}
	return r.Message == "" || r.message.match(message)
}

func (p *parser) elicitRule(i int, t map[string]any) (ElicitRule, error) {
	r := ElicitRule{ID: fmt.Sprintf("elicit-%d", i+1), Action: "accept"}
	errAt := func(key, format string, args ...any) error {
		return &ConfigError{File: p.name, Line: p.idx.topLine("elicit"), Rule: fmt.Sprintf("[[elicit]] #%d", i+1), Msg: key + ": " + fmt.Sprintf(format, args...)}
	}
	keys := make([]string, 0, len(t))
	for k := range t {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := t[k]
		switch k {
		case "id", "message", "url", "action":
			s, ok := v.(string)
			if !ok {
				return r, errAt(k, "want a string, not %s", tomlType(v))
			}
			switch k {
			case "id":
				r.ID = s
			case "message":
				r.Message = s
			case "url":
				r.URL = s
			case "action":
				if s != "accept" && s != "decline" && s != "cancel" {
					return r, errAt(k, "%q is not accept, decline or cancel", s)
				}
				r.Action = s
			}
		case "answers":
			m, ok := v.(map[string]any)
			if !ok {
				return r, errAt(k, "want a table of values by field name, not %s", tomlType(v))
			}
			for name, val := range m {
				switch x := val.(type) {
				case string, bool, int64, float64:
				case []any:
					for _, e := range x {
						if _, ok := e.(string); !ok {
							return r, errAt(k, "field %q: a list takes strings only", name)
						}
					}
				default:
					return r, errAt(k, "field %q: a %s is no form value", name, tomlType(val))
				}
			}
			r.Answers = m
		default:
			return r, errAt(k, "unknown key%s", suggest(k, []string{"id", "message", "url", "action", "answers"}))
		}
	}
	var err error
	if r.Message != "" {
		if r.message, err = compileTextPattern(r.Message, true); err != nil {
			return r, errAt("message", "%v", err)
		}
	}
	if r.URL != "" {
		if r.url, err = compileTextPattern(r.URL, false); err != nil {
			return r, errAt("url", "%v", err)
		}
	}
	return r, nil
}
