package a2a

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/tai-dev/tai/driver"
)

// Card paths: 0.3 and 1.0 serve agent-card.json, the draft and 0.2
// agent.json.
const (
	CardPath       = "/.well-known/agent-card.json"
	LegacyCardPath = "/.well-known/agent.json"
)

// Card is what tai reads of an agent card, in any version. A 1.0 server
// with the 0.3 compatibility layer serves a union of both shapes.
type Card struct {
	Name        string `json:"name"`
	Version     string `json:"version"`
	Description string `json:"description"`

	// 1.0: interfaces in preference order.
	SupportedInterfaces []CardInterface `json:"supportedInterfaces"`
	// 0.2/0.3 (url and protocolVersion) and the draft (url only).
	URL                  string `json:"url"`
	ProtocolVersion      string `json:"protocolVersion"`
	PreferredTransport   string `json:"preferredTransport"`
	AdditionalInterfaces []struct {
		URL       string `json:"url"`
		Transport string `json:"transport"`
	} `json:"additionalInterfaces"`

	Capabilities struct {
		Streaming bool `json:"streaming"`
	} `json:"capabilities"`
}

// CardInterface is one entry of a 1.0 card's supportedInterfaces.
type CardInterface struct {
	URL             string `json:"url"`
	ProtocolBinding string `json:"protocolBinding"`
	ProtocolVersion string `json:"protocolVersion"`
	Tenant          string `json:"tenant"`
}

// endpoint is where and how to talk to the agent in one dialect.
type endpoint struct {
	d      *dialect
	url    string
	tenant string
}

// Classify names the card's shape: "1.0", "0.3" or "draft".
func (c *Card) Classify() string {
	for _, in := range c.SupportedInterfaces {
		if in.ProtocolVersion != "" {
			return Dialect10
		}
	}
	if c.ProtocolVersion != "" {
		return Dialect03
	}
	return DialectDraft
}

// versionDialect maps a card's protocol version to the dialect speaking it.
func versionDialect(v string) *dialect {
	v = strings.TrimPrefix(strings.TrimSpace(v), "v")
	switch {
	case v == "1" || strings.HasPrefix(v, "1."):
		return d10
	case strings.HasPrefix(v, "0.3") || strings.HasPrefix(v, "0.2"):
		return d03
	}
	return nil
}

func jsonrpcBinding(b string) bool {
	b = strings.ToUpper(strings.ReplaceAll(b, "-", ""))
	return b == "JSONRPC" || b == ""
}

// endpoints lists the JSON-RPC endpoints to try, in the order the
// negotiation tries them: 1.0 → 0.3 → draft, starting at the newest
// dialect the card declares (a draft-only card: draft, then 0.2). A dialect
// the card does not list is tried at the URL of the one before it, since
// negotiation by error exists for cards that undersell their server.
// cardURL resolves relative URLs.
func (c *Card) endpoints(cardURL string) ([]endpoint, error) {
	abs := func(u string) string {
		base, err := url.Parse(cardURL)
		if err != nil {
			return u
		}
		ref, err := url.Parse(u)
		if err != nil {
			return u
		}
		return base.ResolveReference(ref).String()
	}
	var v1, v03 *endpoint
	var offered []string
	for _, in := range c.SupportedInterfaces {
		offered = append(offered, in.ProtocolBinding+"@"+in.ProtocolVersion)
		if in.URL == "" || !jsonrpcBinding(in.ProtocolBinding) || in.ProtocolBinding == "" {
			continue
		}
		switch versionDialect(in.ProtocolVersion) {
		case d10:
			if v1 == nil {
				v1 = &endpoint{d: d10, url: abs(in.URL), tenant: in.Tenant}
			}
		case d03:
			if v03 == nil {
				v03 = &endpoint{d: d03, url: abs(in.URL)}
			}
		}
	}
	if v03 == nil && c.URL != "" && c.ProtocolVersion != "" {
		if jsonrpcBinding(c.PreferredTransport) {
			v03 = &endpoint{d: d03, url: abs(c.URL)}
		} else {
			offered = append(offered, c.PreferredTransport)
			for _, ai := range c.AdditionalInterfaces {
				offered = append(offered, ai.Transport)
				if ai.URL != "" && jsonrpcBinding(ai.Transport) && ai.Transport != "" {
					v03 = &endpoint{d: d03, url: abs(ai.URL)}
					break
				}
			}
		}
	}
	switch {
	case v1 != nil:
		eps := []endpoint{*v1}
		if v03 != nil {
			eps = append(eps, *v03)
		} else {
			eps = append(eps, endpoint{d: d03, url: v1.url})
		}
		return append(eps, endpoint{d: dDraft, url: eps[1].url}), nil
	case v03 != nil:
		return []endpoint{*v03, {d: dDraft, url: v03.url}}, nil
	case c.URL != "" && c.ProtocolVersion == "" && len(c.SupportedInterfaces) == 0:
		u := abs(c.URL)
		return []endpoint{{d: dDraft, url: u}, {d: d03, url: u}}, nil
	}
	return nil, fmt.Errorf("%w: the agent card of %q lists no JSON-RPC interface tai speaks (it offers: %s)",
		driver.ErrUnsupported, c.Name, strings.Join(offered, ", "))
}

// parseCard decodes a card and checks it names an endpoint.
func parseCard(b []byte) (*Card, error) {
	var c Card
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("%w: the agent card is not JSON: %w", driver.ErrProtocol, err)
	}
	return &c, nil
}

// noCardEndpoints are tried when the agent serves no card: every dialect
// at the URL tai was given.
func noCardEndpoints(u string) []endpoint {
	return []endpoint{{d: d10, url: u}, {d: d03, url: u}, {d: dDraft, url: u}}
}
