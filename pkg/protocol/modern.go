package protocol

import "encoding/json"

// DiscoverResult answers server/discover (2026-07-28).
type DiscoverResult struct {
	ResultBase
	CacheHints
	SupportedVersions []string           `json:"supportedVersions"`
	Capabilities      ServerCapabilities `json:"capabilities"`
	Instructions      string             `json:"instructions,omitempty"`
}

// SubscriptionFilter is what a subscriptions/listen stream asks for.
type SubscriptionFilter struct {
	ToolsListChanged      bool     `json:"toolsListChanged,omitempty"`
	PromptsListChanged    bool     `json:"promptsListChanged,omitempty"`
	ResourcesListChanged  bool     `json:"resourcesListChanged,omitempty"`
	ResourceSubscriptions []string `json:"resourceSubscriptions,omitempty"`
	TaskIDs               []string `json:"taskIds,omitempty"`
}

// ListenParams are the params of subscriptions/listen.
type ListenParams struct {
	Meta          *RequestMeta        `json:"_meta,omitempty"`
	Notifications *SubscriptionFilter `json:"notifications"`
}

// SubscriptionsAckParams are the params of
// notifications/subscriptions/acknowledged.
type SubscriptionsAckParams struct {
	Meta          Meta               `json:"_meta"`
	Notifications SubscriptionFilter `json:"notifications"`
}

// InputRequest is one MRTR input request: {method, params}.
type InputRequest struct {
	Method string `json:"method"`
	Params any    `json:"params,omitempty"`
}

// InputRequiredResult is the modern MRTR interim result.
type InputRequiredResult struct {
	ResultBase
	InputRequests map[string]*InputRequest `json:"inputRequests,omitempty"`
	RequestState  string                   `json:"requestState,omitempty"`
}

// MissingCapabilityData is the data of a -32021 error.
type MissingCapabilityData struct {
	RequiredCapabilities json.RawMessage `json:"requiredCapabilities"`
}
