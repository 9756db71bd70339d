package protocol

import "encoding/json"

// Tool describes a tool in tools/list. InputSchema and OutputSchema are kept
// raw so a hand-written schema is served verbatim.
type Tool struct {
	Name         string           `json:"name"`
	Title        string           `json:"title,omitempty"`
	Description  string           `json:"description,omitempty"`
	InputSchema  json.RawMessage  `json:"inputSchema"`
	OutputSchema json.RawMessage  `json:"outputSchema,omitempty"`
	Annotations  *ToolAnnotations `json:"annotations,omitempty"`
	Execution    *ToolExecution   `json:"execution,omitempty"`
	Icons        []Icon           `json:"icons,omitempty"`
	Meta         Meta             `json:"_meta,omitempty"`
}

// ToolAnnotations are untrusted hints about a tool's behaviour. Nil pointers
// take the spec defaults (readOnly false, destructive true, idempotent
// false, openWorld true).
type ToolAnnotations struct {
	Title           string `json:"title,omitempty"`
	ReadOnlyHint    *bool  `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool  `json:"destructiveHint,omitempty"`
	IdempotentHint  *bool  `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool  `json:"openWorldHint,omitempty"`
}

// ToolExecution is the legacy (2025-11-25) execution hints of a tool.
type ToolExecution struct {
	TaskSupport string `json:"taskSupport,omitempty"`
}

// ListToolsResult answers tools/list.
type ListToolsResult struct {
	ResultBase
	CacheHints
	Tools      []*Tool `json:"tools"`
	NextCursor *string `json:"nextCursor,omitempty"`
}

// CallToolParams are the params of tools/call.
type CallToolParams struct {
	Meta      *RequestMeta    `json:"_meta,omitempty"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Task      json.RawMessage `json:"task,omitempty"`
	// Modern MRTR retry members.
	InputResponses map[string]json.RawMessage `json:"inputResponses,omitempty"`
	RequestState   *string                    `json:"requestState,omitempty"`
}

// CallToolResult answers tools/call.
type CallToolResult struct {
	ResultBase
	Content           []Content `json:"content"`
	StructuredContent any       `json:"structuredContent,omitempty"`
	IsError           bool      `json:"isError,omitempty"`
}

// MarshalJSON writes content as [] when nil: the member is required.
func (r *CallToolResult) MarshalJSON() ([]byte, error) {
	return appendCallToolResult(make([]byte, 0, 64+r.textLen()), r)
}

// textLen is the length of the text blocks' texts: most of a result's
// encoding, for sizing its buffer.
func (r *CallToolResult) textLen() int {
	n := 0
	for _, c := range r.Content {
		if t, ok := c.(*TextContent); ok && t != nil {
			n += len(t.Text) + 24
		}
	}
	return n
}

// UnmarshalJSON decodes content blocks by type.
func (r *CallToolResult) UnmarshalJSON(data []byte) error {
	type alias CallToolResult
	var w struct {
		alias
		Content ContentList `json:"content"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*r = CallToolResult(w.alias)
	r.Content = w.Content
	return nil
}

// Prompt describes a prompt in prompts/list.
type Prompt struct {
	Name        string            `json:"name"`
	Title       string            `json:"title,omitempty"`
	Description string            `json:"description,omitempty"`
	Arguments   []*PromptArgument `json:"arguments,omitempty"`
	Icons       []Icon            `json:"icons,omitempty"`
	Meta        Meta              `json:"_meta,omitempty"`
}

// PromptArgument is one argument a prompt takes.
type PromptArgument struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Required    bool   `json:"required,omitempty"`
}

// ListPromptsResult answers prompts/list.
type ListPromptsResult struct {
	ResultBase
	CacheHints
	Prompts    []*Prompt `json:"prompts"`
	NextCursor *string   `json:"nextCursor,omitempty"`
}

// GetPromptParams are the params of prompts/get.
type GetPromptParams struct {
	Meta           *RequestMeta               `json:"_meta,omitempty"`
	Name           string                     `json:"name"`
	Arguments      map[string]string          `json:"arguments,omitempty"`
	InputResponses map[string]json.RawMessage `json:"inputResponses,omitempty"`
	RequestState   *string                    `json:"requestState,omitempty"`
}

// PromptMessage is one message of a prompt.
type PromptMessage struct {
	Role    string  `json:"role"`
	Content Content `json:"content"`
}

// UnmarshalJSON decodes the content block by type.
func (m *PromptMessage) UnmarshalJSON(data []byte) error {
	var w struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	c, err := UnmarshalContent(w.Content)
	if err != nil {
		return err
	}
	m.Role, m.Content = w.Role, c
	return nil
}

// GetPromptResult answers prompts/get.
type GetPromptResult struct {
	ResultBase
	Description string           `json:"description,omitempty"`
	Messages    []*PromptMessage `json:"messages"`
}

// Resource describes a resource in resources/list.
type Resource struct {
	URI         string       `json:"uri"`
	Name        string       `json:"name"`
	Title       string       `json:"title,omitempty"`
	Description string       `json:"description,omitempty"`
	MimeType    string       `json:"mimeType,omitempty"`
	Size        *int64       `json:"size,omitempty"`
	Annotations *Annotations `json:"annotations,omitempty"`
	Icons       []Icon       `json:"icons,omitempty"`
	Meta        Meta         `json:"_meta,omitempty"`
}

// ResourceTemplate describes an RFC 6570 family of resources.
type ResourceTemplate struct {
	URITemplate string       `json:"uriTemplate"`
	Name        string       `json:"name"`
	Title       string       `json:"title,omitempty"`
	Description string       `json:"description,omitempty"`
	MimeType    string       `json:"mimeType,omitempty"`
	Annotations *Annotations `json:"annotations,omitempty"`
	Icons       []Icon       `json:"icons,omitempty"`
	Meta        Meta         `json:"_meta,omitempty"`
}

// ListResourcesResult answers resources/list.
type ListResourcesResult struct {
	ResultBase
	CacheHints
	Resources  []*Resource `json:"resources"`
	NextCursor *string     `json:"nextCursor,omitempty"`
}

// ListResourceTemplatesResult answers resources/templates/list.
type ListResourceTemplatesResult struct {
	ResultBase
	CacheHints
	ResourceTemplates []*ResourceTemplate `json:"resourceTemplates"`
	NextCursor        *string             `json:"nextCursor,omitempty"`
}

// ReadResourceParams are the params of resources/read (and of subscribe and
// unsubscribe).
type ReadResourceParams struct {
	Meta           *RequestMeta               `json:"_meta,omitempty"`
	URI            string                     `json:"uri"`
	InputResponses map[string]json.RawMessage `json:"inputResponses,omitempty"`
	RequestState   *string                    `json:"requestState,omitempty"`
}

// ResourceContents is text or binary contents of a resource. Blob non-nil
// makes it a blob (base64 on the wire); otherwise it is text.
type ResourceContents struct {
	URI      string `json:"uri"`
	MimeType string `json:"mimeType,omitempty"`
	Text     string `json:"text"`
	Blob     []byte `json:"blob,omitempty"`
	Meta     Meta   `json:"_meta,omitempty"`
}

// MarshalJSON writes either text or blob, never both.
func (c *ResourceContents) MarshalJSON() ([]byte, error) {
	if c.Blob != nil {
		return json.Marshal(struct {
			URI      string `json:"uri"`
			MimeType string `json:"mimeType,omitempty"`
			Blob     []byte `json:"blob"`
			Meta     Meta   `json:"_meta,omitempty"`
		}{c.URI, c.MimeType, c.Blob, c.Meta})
	}
	return json.Marshal(struct {
		URI      string `json:"uri"`
		MimeType string `json:"mimeType,omitempty"`
		Text     string `json:"text"`
		Meta     Meta   `json:"_meta,omitempty"`
	}{c.URI, c.MimeType, c.Text, c.Meta})
}

// ReadResourceResult answers resources/read.
type ReadResourceResult struct {
	ResultBase
	CacheHints
	Contents []*ResourceContents `json:"contents"`
}

// ResourceUpdatedParams are the params of notifications/resources/updated.
type ResourceUpdatedParams struct {
	Meta Meta   `json:"_meta,omitempty"`
	URI  string `json:"uri"`
}

// CompleteParams are the params of completion/complete.
type CompleteParams struct {
	Meta     *RequestMeta      `json:"_meta,omitempty"`
	Ref      CompleteReference `json:"ref"`
	Argument CompleteArgument  `json:"argument"`
	Context  *CompleteContext  `json:"context,omitempty"`
}

// CompleteReference names a prompt (type ref/prompt, Name) or a resource
// template (type ref/resource, URI).
type CompleteReference struct {
	Type string `json:"type"`
	Name string `json:"name,omitempty"`
	URI  string `json:"uri,omitempty"`
}

// CompleteArgument is the argument being completed.
type CompleteArgument struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// CompleteContext carries already-resolved arguments.
type CompleteContext struct {
	Arguments map[string]string `json:"arguments,omitempty"`
}

// CompleteResult answers completion/complete.
type CompleteResult struct {
	ResultBase
	Completion Completion `json:"completion"`
}

// Completion is the list of suggestions (at most 100).
type Completion struct {
	Values  []string `json:"values"`
	Total   *int     `json:"total,omitempty"`
	HasMore bool     `json:"hasMore,omitempty"`
}
