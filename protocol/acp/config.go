package acp

import "encoding/json"

// ConfigOptionCategory hints what a config option controls. Open enum; "_"
// prefixed values are implementation-defined.
type ConfigOptionCategory string

// Config option categories.
const (
	CategoryMode         ConfigOptionCategory = "mode"
	CategoryModel        ConfigOptionCategory = "model"
	CategoryModelConfig  ConfigOptionCategory = "model_config"
	CategoryThoughtLevel ConfigOptionCategory = "thought_level"
)

// SessionConfigOption discriminator values (the "type" key).
const (
	ConfigTypeSelect  = "select"
	ConfigTypeBoolean = "boolean"
)

// SessionConfigOption is one agent setting, discriminated by "type". Array
// order is priority. Exactly one field is set; see the package doc. Clients
// ignore Unknown options but keep them so they can be relayed.
type SessionConfigOption struct {
	Select  *SelectConfigOption
	Boolean *BooleanConfigOption
	Unknown *UnknownVariant
}

// SelectConfigOption picks one of Options; CurrentValue is an option value.
type SelectConfigOption struct {
	Id           string               `json:"id"`
	Name         string               `json:"name"`
	Description  *string              `json:"description,omitempty"`
	Category     ConfigOptionCategory `json:"category,omitempty"`
	CurrentValue string               `json:"currentValue"`
	Options      SelectOptions        `json:"options"`
	Meta         map[string]any       `json:"_meta,omitempty"`
}

// BooleanConfigOption is an on/off setting. Agents send it only to clients
// that advertised session.configOptions.boolean.
type BooleanConfigOption struct {
	Id           string               `json:"id"`
	Name         string               `json:"name"`
	Description  *string              `json:"description,omitempty"`
	Category     ConfigOptionCategory `json:"category,omitempty"`
	CurrentValue bool                 `json:"currentValue"`
	Meta         map[string]any       `json:"_meta,omitempty"`
}

// SelectOptions is either a flat list or a list of groups; the wire tells
// them apart by whether items carry "group". Grouped wins when both are set.
type SelectOptions struct {
	Flat    []SelectOption
	Grouped []SelectOptionGroup
}

// SelectOption is one choice of a select option.
type SelectOption struct {
	Value       string         `json:"value"`
	Name        string         `json:"name"`
	Description *string        `json:"description,omitempty"`
	Meta        map[string]any `json:"_meta,omitempty"`
}

// SelectOptionGroup is a named group of choices.
type SelectOptionGroup struct {
	Group   string         `json:"group"`
	Name    string         `json:"name"`
	Options []SelectOption `json:"options"`
	Meta    map[string]any `json:"_meta,omitempty"`
}

// MarshalJSON writes options as [] when nil.
func (g SelectOptionGroup) MarshalJSON() ([]byte, error) {
	type plain SelectOptionGroup
	p := plain(g)
	p.Options = orEmpty(p.Options)
	return Marshal(p)
}

// UnmarshalJSON drops invalid options inside the group.
func (g *SelectOptionGroup) UnmarshalJSON(data []byte) error {
	type plain SelectOptionGroup
	var p struct {
		plain
		Options json.RawMessage `json:"options"`
	}
	if err := json.Unmarshal(data, &p); err != nil {
		return err
	}
	opts, err := decodeSkipInvalid[SelectOption](p.Options, nil)
	if err != nil {
		return err
	}
	*g = SelectOptionGroup(p.plain)
	g.Options = opts
	return nil
}

// All returns every choice, flattening groups.
func (o SelectOptions) All() []SelectOption {
	if o.Grouped == nil {
		return o.Flat
	}
	var all []SelectOption
	for _, g := range o.Grouped {
		all = append(all, g.Options...)
	}
	return all
}

// MarshalJSON implements json.Marshaler.
func (o SelectOptions) MarshalJSON() ([]byte, error) {
	if o.Grouped != nil {
		return Marshal(o.Grouped)
	}
	return marshalList(o.Flat)
}

// UnmarshalJSON implements json.Unmarshaler. The first object item decides
// flat versus grouped; items that do not fit are dropped.
func (o *SelectOptions) UnmarshalJSON(data []byte) error {
	*o = SelectOptions{}
	if isNull(data) {
		return nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(data, &items); err != nil {
		return err
	}
	grouped := false
	for _, it := range items {
		var probe map[string]json.RawMessage
		if json.Unmarshal(it, &probe) != nil || probe == nil {
			continue
		}
		_, grouped = probe["group"]
		break
	}
	var err error
	if grouped {
		o.Grouped, err = decodeSkipInvalid(data, func(g *SelectOptionGroup) bool { return g.Group != "" })
	} else {
		o.Flat, err = decodeSkipInvalid[SelectOption](data, nil)
	}
	return err
}

// Kind returns "select", "boolean", the unknown type, or "" when empty.
func (c SessionConfigOption) Kind() string {
	switch {
	case c.Select != nil:
		return ConfigTypeSelect
	case c.Boolean != nil:
		return ConfigTypeBoolean
	case c.Unknown != nil:
		return c.Unknown.Kind
	}
	return ""
}

// ID returns the option id, reading it from the raw JSON for Unknown.
func (c SessionConfigOption) ID() string {
	switch {
	case c.Select != nil:
		return c.Select.Id
	case c.Boolean != nil:
		return c.Boolean.Id
	case c.Unknown != nil:
		var p struct {
			Id string `json:"id"`
		}
		_ = json.Unmarshal(c.Unknown.Raw, &p)
		return p.Id
	}
	return ""
}

// Category returns the option's category ("" if none or unknown variant).
func (c SessionConfigOption) Category() ConfigOptionCategory {
	switch {
	case c.Select != nil:
		return c.Select.Category
	case c.Boolean != nil:
		return c.Boolean.Category
	}
	return ""
}

// MarshalJSON implements json.Marshaler.
func (c SessionConfigOption) MarshalJSON() ([]byte, error) {
	switch variantCount(c.Select != nil, c.Boolean != nil, c.Unknown != nil) {
	case 0:
		return jsonNull, nil
	case 1:
	default:
		return nil, tooMany("SessionConfigOption")
	}
	switch {
	case c.Select != nil:
		return withTag("type", ConfigTypeSelect, c.Select)
	case c.Boolean != nil:
		return withTag("type", ConfigTypeBoolean, c.Boolean)
	}
	return c.Unknown.MarshalJSON()
}

// UnmarshalJSON implements json.Unmarshaler.
func (c *SessionConfigOption) UnmarshalJSON(data []byte) error {
	*c = SessionConfigOption{}
	if isNull(data) {
		return nil
	}
	tag, ok, err := peekTagFast(data, "type")
	if err != nil {
		return err
	}
	if ok {
		switch tag {
		case ConfigTypeSelect:
			return decodeInto(data, &c.Select)
		case ConfigTypeBoolean:
			return decodeInto(data, &c.Boolean)
		}
	}
	c.Unknown = newUnknown(tag, data)
	return nil
}

// ConfigOptionList drops options that fail to decode or lack an id, and
// encodes nil as [].
type ConfigOptionList []SessionConfigOption

// MarshalJSON implements json.Marshaler.
func (l ConfigOptionList) MarshalJSON() ([]byte, error) {
	return marshalList([]SessionConfigOption(l))
}

// UnmarshalJSON implements json.Unmarshaler.
func (l *ConfigOptionList) UnmarshalJSON(data []byte) error {
	v, err := decodeSkipInvalid(data, func(o *SessionConfigOption) bool {
		if o.Unknown != nil {
			return true
		}
		return o.ID() != ""
	})
	*l = v
	return err
}

// Find returns the first option with the given id.
func (l ConfigOptionList) Find(id string) (SessionConfigOption, bool) {
	for _, o := range l {
		if o.ID() == id {
			return o, true
		}
	}
	return SessionConfigOption{}, false
}

// ByCategory returns the first option of the given category, e.g.
// CategoryModel for model selection.
func (l ConfigOptionList) ByCategory(cat ConfigOptionCategory) (SessionConfigOption, bool) {
	for _, o := range l {
		if o.Category() == cat {
			return o, true
		}
	}
	return SessionConfigOption{}, false
}

// SetSessionConfigOptionRequest changes one option. Value is a JSON string
// for select options; for boolean options Type is "boolean" and Value a JSON
// bool. Use SetConfigSelect / SetConfigBoolean to build it.
type SetSessionConfigOptionRequest struct {
	SessionId string          `json:"sessionId"`
	ConfigId  string          `json:"configId"`
	Type      string          `json:"type,omitempty"`
	Value     json.RawMessage `json:"value"`
	Meta      map[string]any  `json:"_meta,omitempty"`
}

// SetConfigSelect builds a request selecting value.
func SetConfigSelect(sessionID, configID, value string) SetSessionConfigOptionRequest {
	v, _ := Marshal(value)
	return SetSessionConfigOptionRequest{SessionId: sessionID, ConfigId: configID, Value: v}
}

// SetConfigBoolean builds a request for a boolean option.
func SetConfigBoolean(sessionID, configID string, value bool) SetSessionConfigOptionRequest {
	v, _ := Marshal(value)
	return SetSessionConfigOptionRequest{SessionId: sessionID, ConfigId: configID, Type: ConfigTypeBoolean, Value: v}
}

// SetSessionConfigOptionResponse carries the full, replacing option set.
type SetSessionConfigOptionResponse struct {
	ConfigOptions ConfigOptionList `json:"configOptions"`
	Meta          map[string]any   `json:"_meta,omitempty"`
}
