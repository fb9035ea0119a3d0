package acp

import "encoding/json"

// ContentBlock discriminator values (the "type" key).
const (
	ContentText         = "text"
	ContentImage        = "image"
	ContentAudio        = "audio"
	ContentResourceLink = "resource_link"
	ContentResource     = "resource"
)

// ContentBlock is a piece of prompt or message content, discriminated by
// "type". Exactly one field is set; see the package doc for union rules.
// Text and resource_link are baseline; image, audio and resource need the
// matching promptCapabilities when sent in a prompt.
type ContentBlock struct {
	Text         *TextContent
	Image        *ImageContent
	Audio        *AudioContent
	ResourceLink *ResourceLink
	Resource     *EmbeddedResource
	Unknown      *UnknownVariant
}

// Role is an Annotations audience member.
type Role string

// Roles.
const (
	RoleAssistant Role = "assistant"
	RoleUser      Role = "user"
)

// Annotations are optional display hints on any content block.
type Annotations struct {
	Audience     []Role         `json:"audience,omitempty"`
	Priority     *float64       `json:"priority,omitempty"`
	LastModified *string        `json:"lastModified,omitempty"`
	Meta         map[string]any `json:"_meta,omitempty"`
}

// TextContent is {type:"text"}.
type TextContent struct {
	Text        string         `json:"text"`
	Annotations *Annotations   `json:"annotations,omitempty"`
	Meta        map[string]any `json:"_meta,omitempty"`
}

// ImageContent is {type:"image"}; Data is base64.
type ImageContent struct {
	Data        string         `json:"data"`
	MimeType    string         `json:"mimeType"`
	Uri         *string        `json:"uri,omitempty"`
	Annotations *Annotations   `json:"annotations,omitempty"`
	Meta        map[string]any `json:"_meta,omitempty"`
}

// AudioContent is {type:"audio"}; Data is base64.
type AudioContent struct {
	Data        string         `json:"data"`
	MimeType    string         `json:"mimeType"`
	Annotations *Annotations   `json:"annotations,omitempty"`
	Meta        map[string]any `json:"_meta,omitempty"`
}

// ResourceLink is {type:"resource_link"}: a reference the agent may fetch.
type ResourceLink struct {
	Uri         string         `json:"uri"`
	Name        string         `json:"name"`
	Title       *string        `json:"title,omitempty"`
	Description *string        `json:"description,omitempty"`
	MimeType    *string        `json:"mimeType,omitempty"`
	Size        *int64         `json:"size,omitempty"`
	Annotations *Annotations   `json:"annotations,omitempty"`
	Meta        map[string]any `json:"_meta,omitempty"`
}

// EmbeddedResource is {type:"resource"}: resource contents inlined.
type EmbeddedResource struct {
	Resource    ResourceContents `json:"resource"`
	Annotations *Annotations     `json:"annotations,omitempty"`
	Meta        map[string]any   `json:"_meta,omitempty"`
}

// ResourceContents is the untagged text-or-blob union inside an embedded
// resource, told apart by which of "text" and "blob" is present. An object
// with neither is kept in Unknown (Kind "").
type ResourceContents struct {
	Text    *TextResourceContents
	Blob    *BlobResourceContents
	Unknown *UnknownVariant
}

// TextResourceContents holds a textual resource.
type TextResourceContents struct {
	Uri      string         `json:"uri"`
	Text     string         `json:"text"`
	MimeType *string        `json:"mimeType,omitempty"`
	Meta     map[string]any `json:"_meta,omitempty"`
}

// BlobResourceContents holds a binary resource, base64 in Blob.
type BlobResourceContents struct {
	Uri      string         `json:"uri"`
	Blob     string         `json:"blob"`
	MimeType *string        `json:"mimeType,omitempty"`
	Meta     map[string]any `json:"_meta,omitempty"`
}

// Kind returns "text", "blob", the unknown kind, or "" when empty.
func (r ResourceContents) Kind() string {
	switch {
	case r.Text != nil:
		return "text"
	case r.Blob != nil:
		return "blob"
	case r.Unknown != nil:
		return r.Unknown.Kind
	}
	return ""
}

// MarshalJSON implements json.Marshaler.
func (r ResourceContents) MarshalJSON() ([]byte, error) {
	switch variantCount(r.Text != nil, r.Blob != nil, r.Unknown != nil) {
	case 0:
		return jsonNull, nil
	case 1:
	default:
		return nil, tooMany("ResourceContents")
	}
	switch {
	case r.Text != nil:
		return Marshal(r.Text)
	case r.Blob != nil:
		return Marshal(r.Blob)
	}
	return r.Unknown.MarshalJSON()
}

// UnmarshalJSON implements json.Unmarshaler.
func (r *ResourceContents) UnmarshalJSON(data []byte) error {
	*r = ResourceContents{}
	if isNull(data) {
		return nil
	}
	_, _, fields, err := peekTag(data, "text")
	if err != nil {
		return err
	}
	if _, ok := fields["text"]; ok {
		r.Text = new(TextResourceContents)
		return json.Unmarshal(data, r.Text)
	}
	if _, ok := fields["blob"]; ok {
		r.Blob = new(BlobResourceContents)
		return json.Unmarshal(data, r.Blob)
	}
	r.Unknown = newUnknown("", data)
	return nil
}

// Kind returns the "type" discriminator, or "" for a zero block.
func (b ContentBlock) Kind() string {
	switch {
	case b.Text != nil:
		return ContentText
	case b.Image != nil:
		return ContentImage
	case b.Audio != nil:
		return ContentAudio
	case b.ResourceLink != nil:
		return ContentResourceLink
	case b.Resource != nil:
		return ContentResource
	case b.Unknown != nil:
		return b.Unknown.Kind
	}
	return ""
}

// MarshalJSON implements json.Marshaler.
func (b ContentBlock) MarshalJSON() ([]byte, error) {
	switch variantCount(b.Text != nil, b.Image != nil, b.Audio != nil, b.ResourceLink != nil, b.Resource != nil, b.Unknown != nil) {
	case 0:
		return jsonNull, nil
	case 1:
	default:
		return nil, tooMany("ContentBlock")
	}
	switch {
	case b.Text != nil:
		return withTag("type", ContentText, b.Text)
	case b.Image != nil:
		return withTag("type", ContentImage, b.Image)
	case b.Audio != nil:
		return withTag("type", ContentAudio, b.Audio)
	case b.ResourceLink != nil:
		return withTag("type", ContentResourceLink, b.ResourceLink)
	case b.Resource != nil:
		return withTag("type", ContentResource, b.Resource)
	}
	return b.Unknown.MarshalJSON()
}

// UnmarshalJSON implements json.Unmarshaler.
func (b *ContentBlock) UnmarshalJSON(data []byte) error {
	*b = ContentBlock{}
	if isNull(data) {
		return nil
	}
	tag, ok, err := peekTagFast(data, "type")
	if err != nil {
		return err
	}
	if !ok {
		b.Unknown = newUnknown("", data)
		return nil
	}
	switch tag {
	case ContentText:
		b.Text = new(TextContent)
		return json.Unmarshal(data, b.Text)
	case ContentImage:
		b.Image = new(ImageContent)
		return json.Unmarshal(data, b.Image)
	case ContentAudio:
		b.Audio = new(AudioContent)
		return json.Unmarshal(data, b.Audio)
	case ContentResourceLink:
		b.ResourceLink = new(ResourceLink)
		return json.Unmarshal(data, b.ResourceLink)
	case ContentResource:
		b.Resource = new(EmbeddedResource)
		return json.Unmarshal(data, b.Resource)
	}
	b.Unknown = newUnknown(tag, data)
	return nil
}

// TextBlock returns a text content block.
func TextBlock(text string) ContentBlock {
	return ContentBlock{Text: &TextContent{Text: text}}
}

// ImageBlock returns an image content block; data is base64.
func ImageBlock(data, mimeType string) ContentBlock {
	return ContentBlock{Image: &ImageContent{Data: data, MimeType: mimeType}}
}

// ResourceLinkBlock returns a resource_link content block.
func ResourceLinkBlock(uri, name string) ContentBlock {
	return ContentBlock{ResourceLink: &ResourceLink{Uri: uri, Name: name}}
}

// TextResourceBlock returns a resource content block embedding text.
func TextResourceBlock(uri, text string) ContentBlock {
	return ContentBlock{Resource: &EmbeddedResource{
		Resource: ResourceContents{Text: &TextResourceContents{Uri: uri, Text: text}},
	}}
}
