package protocol

import (
	"encoding/json"
	"fmt"
)

// Content is one content block: *TextContent, *ImageContent, *AudioContent,
// *ResourceLink, *EmbeddedResource, *ToolUseContent or *ToolResultContent.
type Content interface {
	contentType() string
}

// Annotations are hints about a content block or resource.
type Annotations struct {
	Audience     []string `json:"audience,omitempty"`
	Priority     *float64 `json:"priority,omitempty"`
	LastModified string   `json:"lastModified,omitempty"`
}

// TextContent is a text block.
type TextContent struct {
	Text        string       `json:"text"`
	Annotations *Annotations `json:"annotations,omitempty"`
	Meta        Meta         `json:"_meta,omitempty"`
}

// ImageContent is a base64 image.
type ImageContent struct {
	Data        string       `json:"data"`
	MimeType    string       `json:"mimeType"`
	Annotations *Annotations `json:"annotations,omitempty"`
	Meta        Meta         `json:"_meta,omitempty"`
}

// AudioContent is base64 audio.
type AudioContent struct {
	Data        string       `json:"data"`
	MimeType    string       `json:"mimeType"`
	Annotations *Annotations `json:"annotations,omitempty"`
	Meta        Meta         `json:"_meta,omitempty"`
}

// ResourceLink points at a resource the client may read.
type ResourceLink struct {
	Resource
}

// EmbeddedResource carries a resource's contents inline.
type EmbeddedResource struct {
	Resource    *ResourceContents `json:"resource"`
	Annotations *Annotations      `json:"annotations,omitempty"`
	Meta        Meta              `json:"_meta,omitempty"`
}

// ToolUseContent is a model's tool call inside sampling.
type ToolUseContent struct {
	ID    string         `json:"id"`
	Name  string         `json:"name"`
	Input map[string]any `json:"input"`
	Meta  Meta           `json:"_meta,omitempty"`
}

// ToolResultContent answers a ToolUseContent inside sampling.
type ToolResultContent struct {
	ToolUseID         string      `json:"toolUseId"`
	Content           ContentList `json:"content"`
	StructuredContent any         `json:"structuredContent,omitempty"`
	IsError           bool        `json:"isError,omitempty"`
	Meta              Meta        `json:"_meta,omitempty"`
}

func (*TextContent) contentType() string       { return "text" }
func (*ImageContent) contentType() string      { return "image" }
func (*AudioContent) contentType() string      { return "audio" }
func (*ResourceLink) contentType() string      { return "resource_link" }
func (*EmbeddedResource) contentType() string  { return "resource" }
func (*ToolUseContent) contentType() string    { return "tool_use" }
func (*ToolResultContent) contentType() string { return "tool_result" }

// typed wraps a block so it marshals with its "type" first.
func marshalTyped(typ string, v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(raw)+len(typ)+12)
	out = append(out, `{"type":`...)
	t, _ := json.Marshal(typ)
	out = append(out, t...)
	if len(raw) > 2 {
		out = append(out, ',')
		out = append(out, raw[1:]...)
	} else {
		out = append(out, '}')
	}
	return out, nil
}

// The aliases drop the MarshalJSON methods to avoid recursion.
type (
	textAlias       TextContent
	imageAlias      ImageContent
	audioAlias      AudioContent
	linkAlias       ResourceLink
	embeddedAlias   EmbeddedResource
	toolUseAlias    ToolUseContent
	toolResultAlias ToolResultContent
)

// MarshalJSON adds "type":"text".
func (c *TextContent) MarshalJSON() ([]byte, error) {
	if c.Annotations == nil && len(c.Meta) == 0 {
		return appendText(make([]byte, 0, len(c.Text)+24), c), nil
	}
	return marshalTyped("text", (*textAlias)(c))
}

// MarshalJSON adds "type":"image".
func (c *ImageContent) MarshalJSON() ([]byte, error) {
	return marshalTyped("image", (*imageAlias)(c))
}

// MarshalJSON adds "type":"audio".
func (c *AudioContent) MarshalJSON() ([]byte, error) {
	return marshalTyped("audio", (*audioAlias)(c))
}

// MarshalJSON adds "type":"resource_link".
func (c *ResourceLink) MarshalJSON() ([]byte, error) {
	return marshalTyped("resource_link", (*linkAlias)(c))
}

// MarshalJSON adds "type":"resource".
func (c *EmbeddedResource) MarshalJSON() ([]byte, error) {
	return marshalTyped("resource", (*embeddedAlias)(c))
}

// MarshalJSON adds "type":"tool_use".
func (c *ToolUseContent) MarshalJSON() ([]byte, error) {
	return marshalTyped("tool_use", (*toolUseAlias)(c))
}

// MarshalJSON adds "type":"tool_result".
func (c *ToolResultContent) MarshalJSON() ([]byte, error) {
	return marshalTyped("tool_result", (*toolResultAlias)(c))
}

// UnmarshalContent decodes one content block by its "type".
func UnmarshalContent(raw []byte) (Content, error) {
	var head struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return nil, err
	}
	var c Content
	var target any
	switch head.Type {
	case "text":
		v := &TextContent{}
		c, target = v, (*textAlias)(v)
	case "image":
		v := &ImageContent{}
		c, target = v, (*imageAlias)(v)
	case "audio":
		v := &AudioContent{}
		c, target = v, (*audioAlias)(v)
	case "resource_link":
		v := &ResourceLink{}
		c, target = v, (*linkAlias)(v)
	case "resource":
		v := &EmbeddedResource{}
		c, target = v, (*embeddedAlias)(v)
	case "tool_use":
		v := &ToolUseContent{}
		c, target = v, (*toolUseAlias)(v)
	case "tool_result":
		v := &ToolResultContent{}
		c, target = v, (*toolResultAlias)(v)
	default:
		return nil, fmt.Errorf("unknown content type %q", head.Type)
	}
	if err := json.Unmarshal(raw, target); err != nil {
		return nil, err
	}
	return c, nil
}

// ContentList is a list of content blocks that decodes by "type".
type ContentList []Content

// UnmarshalJSON decodes each block by its type.
func (l *ContentList) UnmarshalJSON(data []byte) error {
	var raws []json.RawMessage
	if err := json.Unmarshal(data, &raws); err != nil {
		return err
	}
	out := make(ContentList, 0, len(raws))
	for _, r := range raws {
		c, err := UnmarshalContent(r)
		if err != nil {
			return err
		}
		out = append(out, c)
	}
	*l = out
	return nil
}

// SingleOrList is sampling's content: one block or a list. It marshals a
// single block as an object.
type SingleOrList struct {
	Blocks []Content
	// List forces the array form even for one block.
	List bool
}

// MarshalJSON writes one block as an object and several as an array.
func (s SingleOrList) MarshalJSON() ([]byte, error) {
	if len(s.Blocks) == 1 && !s.List {
		return json.Marshal(s.Blocks[0])
	}
	if s.Blocks == nil {
		return []byte("[]"), nil
	}
	return json.Marshal(s.Blocks)
}

// UnmarshalJSON accepts an object or an array of blocks.
func (s *SingleOrList) UnmarshalJSON(data []byte) error {
	if firstByte(data) == '[' {
		var l ContentList
		if err := l.UnmarshalJSON(data); err != nil {
			return err
		}
		s.Blocks, s.List = l, true
		return nil
	}
	c, err := UnmarshalContent(data)
	if err != nil {
		return err
	}
	s.Blocks, s.List = []Content{c}, false
	return nil
}
