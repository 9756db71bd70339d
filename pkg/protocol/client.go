package protocol

import "encoding/json"

// SamplingMessage is one message of a sampling conversation.
type SamplingMessage struct {
	Role    string       `json:"role"`
	Content SingleOrList `json:"content"`
	Meta    Meta         `json:"_meta,omitempty"`
}

// ModelHint suggests a model by name.
type ModelHint struct {
	Name string `json:"name,omitempty"`
}

// ModelPreferences guide the client's model choice.
type ModelPreferences struct {
	Hints                []ModelHint `json:"hints,omitempty"`
	CostPriority         *float64    `json:"costPriority,omitempty"`
	SpeedPriority        *float64    `json:"speedPriority,omitempty"`
	IntelligencePriority *float64    `json:"intelligencePriority,omitempty"`
}

// ToolChoice controls tool use in sampling.
type ToolChoice struct {
	Mode string `json:"mode,omitempty"`
}

// CreateMessageParams are the params of sampling/createMessage.
type CreateMessageParams struct {
	Meta             Meta               `json:"_meta,omitempty"`
	Messages         []*SamplingMessage `json:"messages"`
	ModelPreferences *ModelPreferences  `json:"modelPreferences,omitempty"`
	SystemPrompt     string             `json:"systemPrompt,omitempty"`
	IncludeContext   string             `json:"includeContext,omitempty"`
	Temperature      *float64           `json:"temperature,omitempty"`
	MaxTokens        int64              `json:"maxTokens"`
	StopSequences    []string           `json:"stopSequences,omitempty"`
	Metadata         map[string]any     `json:"metadata,omitempty"`
	Tools            []*Tool            `json:"tools,omitempty"`
	ToolChoice       *ToolChoice        `json:"toolChoice,omitempty"`
}

// CreateMessageResult is the client's answer to sampling/createMessage.
type CreateMessageResult struct {
	ResultBase
	Role       string       `json:"role"`
	Content    SingleOrList `json:"content"`
	Model      string       `json:"model"`
	StopReason string       `json:"stopReason,omitempty"`
}

// Elicitation modes.
const (
	ElicitModeForm = "form"
	ElicitModeURL  = "url"
)

// ElicitParams are the params of elicitation/create: form mode (Message +
// RequestedSchema) or URL mode (Message + URL, plus ElicitationID on
// 2025-11-25).
type ElicitParams struct {
	Meta            Meta            `json:"_meta,omitempty"`
	Mode            string          `json:"mode,omitempty"`
	Message         string          `json:"message"`
	RequestedSchema json.RawMessage `json:"requestedSchema,omitempty"`
	URL             string          `json:"url,omitempty"`
	ElicitationID   string          `json:"elicitationId,omitempty"`
}

// Elicitation actions.
const (
	ElicitAccept  = "accept"
	ElicitDecline = "decline"
	ElicitCancel  = "cancel"
)

// ElicitResult is the client's answer to elicitation/create.
type ElicitResult struct {
	ResultBase
	Action  string         `json:"action"`
	Content map[string]any `json:"content,omitempty"`
}

// ElicitationCompleteParams are the params of
// notifications/elicitation/complete.
type ElicitationCompleteParams struct {
	ElicitationID string `json:"elicitationId"`
}

// URLElicitationRequiredData is the data of a -32042 error.
type URLElicitationRequiredData struct {
	Elicitations []*ElicitParams `json:"elicitations"`
}

// Root is one client root.
type Root struct {
	URI  string `json:"uri"`
	Name string `json:"name,omitempty"`
	Meta Meta   `json:"_meta,omitempty"`
}

// ListRootsResult is the client's answer to roots/list.
type ListRootsResult struct {
	ResultBase
	Roots []*Root `json:"roots"`
}
