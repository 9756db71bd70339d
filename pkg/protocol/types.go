package protocol

import (
	"encoding/json"
	"slices"
)

// Method names.
const (
	MethodInitialize             = "initialize"
	MethodPing                   = "ping"
	MethodToolsList              = "tools/list"
	MethodToolsCall              = "tools/call"
	MethodPromptsList            = "prompts/list"
	MethodPromptsGet             = "prompts/get"
	MethodResourcesList          = "resources/list"
	MethodResourcesTemplatesList = "resources/templates/list"
	MethodResourcesRead          = "resources/read"
	MethodResourcesSubscribe     = "resources/subscribe"
	MethodResourcesUnsubscribe   = "resources/unsubscribe"
	MethodCompletionComplete     = "completion/complete"
	MethodLoggingSetLevel        = "logging/setLevel"
	MethodServerDiscover         = "server/discover"
	MethodSubscriptionsListen    = "subscriptions/listen"
	MethodTasksGet               = "tasks/get"
	MethodTasksResult            = "tasks/result"
	MethodTasksList              = "tasks/list"
	MethodTasksCancel            = "tasks/cancel"
	MethodTasksUpdate            = "tasks/update"

	// Server to client.
	MethodSamplingCreateMessage = "sampling/createMessage"
	MethodElicitationCreate     = "elicitation/create"
	MethodRootsList             = "roots/list"

	NotificationInitialized          = "notifications/initialized"
	NotificationCancelled            = "notifications/cancelled"
	NotificationProgress             = "notifications/progress"
	NotificationMessage              = "notifications/message"
	NotificationToolsListChanged     = "notifications/tools/list_changed"
	NotificationPromptsListChanged   = "notifications/prompts/list_changed"
	NotificationResourcesListChanged = "notifications/resources/list_changed"
	NotificationResourceUpdated      = "notifications/resources/updated"
	NotificationRootsListChanged     = "notifications/roots/list_changed"
	NotificationElicitationComplete  = "notifications/elicitation/complete"
	NotificationSubscriptionsAck     = "notifications/subscriptions/acknowledged"
	NotificationTaskStatus           = "notifications/tasks/status"
	NotificationTasks                = "notifications/tasks"
)

// Implementation identifies a client or a server.
type Implementation struct {
	Name        string `json:"name"`
	Version     string `json:"version"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	WebsiteURL  string `json:"websiteUrl,omitempty"`
	Icons       []Icon `json:"icons,omitempty"`
}

// Icon is a displayable icon.
type Icon struct {
	Src      string   `json:"src"`
	MimeType string   `json:"mimeType,omitempty"`
	Sizes    []string `json:"sizes,omitempty"`
	Theme    string   `json:"theme,omitempty"`
}

// ClientCapabilities are what a client declares (legacy: in initialize;
// modern: in every request's _meta). A nil pointer means "not declared".
type ClientCapabilities struct {
	Experimental map[string]json.RawMessage `json:"experimental,omitempty"`
	Roots        *RootsCapability           `json:"roots,omitempty"`
	Sampling     *SamplingCapability        `json:"sampling,omitempty"`
	Elicitation  *ElicitationCapability     `json:"elicitation,omitempty"`
	Tasks        json.RawMessage            `json:"tasks,omitempty"`
	Extensions   map[string]json.RawMessage `json:"extensions,omitempty"`
}

// RootsCapability is the client's roots capability.
type RootsCapability struct {
	ListChanged bool `json:"listChanged,omitempty"`
}

// SamplingCapability is the client's sampling capability.
type SamplingCapability struct {
	Context *struct{} `json:"context,omitempty"`
	Tools   *struct{} `json:"tools,omitempty"`
}

// ElicitationCapability is the client's elicitation capability. Both nil
// means form mode only.
type ElicitationCapability struct {
	Form *struct{} `json:"form,omitempty"`
	URL  *struct{} `json:"url,omitempty"`
}

// SupportsForm reports whether form-mode elicitation may be used.
func (e *ElicitationCapability) SupportsForm() bool {
	return e != nil && (e.Form != nil || e.URL == nil)
}

// SupportsURL reports whether URL-mode elicitation may be used.
func (e *ElicitationCapability) SupportsURL() bool { return e != nil && e.URL != nil }

// ServerCapabilities are what the server declares.
type ServerCapabilities struct {
	Experimental map[string]json.RawMessage `json:"experimental,omitempty"`
	Logging      *struct{}                  `json:"logging,omitempty"`
	Completions  *struct{}                  `json:"completions,omitempty"`
	Prompts      *PromptsCapability         `json:"prompts,omitempty"`
	Resources    *ResourcesCapability       `json:"resources,omitempty"`
	Tools        *ToolsCapability           `json:"tools,omitempty"`
	Tasks        json.RawMessage            `json:"tasks,omitempty"`
	Extensions   map[string]json.RawMessage `json:"extensions,omitempty"`
}

// PromptsCapability is the server's prompts capability.
type PromptsCapability struct {
	ListChanged bool `json:"listChanged,omitempty"`
}

// ResourcesCapability is the server's resources capability.
type ResourcesCapability struct {
	Subscribe   bool `json:"subscribe,omitempty"`
	ListChanged bool `json:"listChanged,omitempty"`
}

// ToolsCapability is the server's tools capability.
type ToolsCapability struct {
	ListChanged bool `json:"listChanged,omitempty"`
}

// InitializeParams are the params of initialize. The pointers tell a missing
// member from an empty one.
type InitializeParams struct {
	Meta            Meta                `json:"_meta,omitempty"`
	ProtocolVersion string              `json:"protocolVersion"`
	Capabilities    *ClientCapabilities `json:"capabilities"`
	ClientInfo      *Implementation     `json:"clientInfo"`
}

// Validate reports the first missing required member as a -32602 error.
func (p *InitializeParams) Validate() *Error {
	switch {
	case p.ProtocolVersion == "":
		return NewError(CodeInvalidParams, "invalid params: initialize requires protocolVersion")
	case p.Capabilities == nil:
		return NewError(CodeInvalidParams, "invalid params: initialize requires capabilities")
	case p.ClientInfo == nil:
		return NewError(CodeInvalidParams, "invalid params: initialize requires clientInfo")
	case p.ClientInfo.Name == "" || p.ClientInfo.Version == "":
		return NewError(CodeInvalidParams, "invalid params: clientInfo requires name and version")
	}
	return nil
}

// ResultBase holds the members every result may carry. Modern results set
// ResultType; legacy results leave it empty (omitted).
type ResultBase struct {
	Meta       Meta   `json:"_meta,omitempty"`
	ResultType string `json:"resultType,omitempty"`
}

// Base returns the embedded ResultBase; it makes every result a [Result].
func (r *ResultBase) Base() *ResultBase { return r }

// Result is implemented by every result type.
type Result interface{ Base() *ResultBase }

// Cacheable is implemented by results that carry caching hints (modern).
type Cacheable interface {
	Result
	Cache() *CacheHints
}

// CacheHints are the modern caching members of list, read and discover
// results. Nil/empty fields are omitted, as legacy results need.
type CacheHints struct {
	TTLMs      *int64 `json:"ttlMs,omitempty"`
	CacheScope string `json:"cacheScope,omitempty"`
}

// Cache returns the hints; it makes a result [Cacheable].
func (c *CacheHints) Cache() *CacheHints { return c }

// Result types (modern resultType values).
const (
	ResultTypeComplete      = "complete"
	ResultTypeInputRequired = "input_required"
	ResultTypeTask          = "task"
)

// Cache scopes.
const (
	CacheScopePublic  = "public"
	CacheScopePrivate = "private"
)

// EmptyResult is {} (or {"resultType":"complete"} on modern).
type EmptyResult struct {
	ResultBase
}

// InitializeResult answers initialize.
type InitializeResult struct {
	ResultBase
	ProtocolVersion string             `json:"protocolVersion"`
	Capabilities    ServerCapabilities `json:"capabilities"`
	ServerInfo      Implementation     `json:"serverInfo"`
	Instructions    string             `json:"instructions,omitempty"`
}

// LoggingLevel is an RFC 5424 severity.
type LoggingLevel string

// The logging levels, lowest first.
const (
	LevelDebug     LoggingLevel = "debug"
	LevelInfo      LoggingLevel = "info"
	LevelNotice    LoggingLevel = "notice"
	LevelWarning   LoggingLevel = "warning"
	LevelError     LoggingLevel = "error"
	LevelCritical  LoggingLevel = "critical"
	LevelAlert     LoggingLevel = "alert"
	LevelEmergency LoggingLevel = "emergency"
)

var levelRank = map[LoggingLevel]int{
	LevelDebug: 1, LevelInfo: 2, LevelNotice: 3, LevelWarning: 4,
	LevelError: 5, LevelCritical: 6, LevelAlert: 7, LevelEmergency: 8,
}

// Valid reports whether l is one of the eight levels.
func (l LoggingLevel) Valid() bool { _, ok := levelRank[l]; return ok }

// Enabled reports whether a message at level msg passes the threshold l.
// An empty threshold passes nothing.
func (l LoggingLevel) Enabled(msg LoggingLevel) bool {
	t, ok := levelRank[l]
	if !ok {
		return false
	}
	return levelRank[msg] >= t
}

// SetLevelParams are the params of logging/setLevel.
type SetLevelParams struct {
	Level LoggingLevel `json:"level"`
}

// LoggingMessageParams are the params of notifications/message.
type LoggingMessageParams struct {
	Meta   Meta         `json:"_meta,omitempty"`
	Level  LoggingLevel `json:"level"`
	Logger string       `json:"logger,omitempty"`
	Data   any          `json:"data"`
}

// ProgressParams are the params of notifications/progress.
type ProgressParams struct {
	Meta          Meta            `json:"_meta,omitempty"`
	ProgressToken json.RawMessage `json:"progressToken"`
	Progress      float64         `json:"progress"`
	Total         *float64        `json:"total,omitempty"`
	Message       string          `json:"message,omitempty"`
}

// CancelledParams are the params of notifications/cancelled.
type CancelledParams struct {
	RequestID ID     `json:"requestId"`
	Reason    string `json:"reason,omitempty"`
}

// PaginatedParams are the params of list methods.
type PaginatedParams struct {
	Meta   *RequestMeta `json:"_meta,omitempty"`
	Cursor *string      `json:"cursor,omitempty"`
}

// eraMethods are the client requests each era serves.
var eraMethods = map[Era]map[string]bool{
	EraLegacy: {
		MethodInitialize: true, MethodPing: true,
		MethodToolsList: true, MethodToolsCall: true,
		MethodPromptsList: true, MethodPromptsGet: true,
		MethodResourcesList: true, MethodResourcesTemplatesList: true,
		MethodResourcesRead: true, MethodResourcesSubscribe: true,
		MethodResourcesUnsubscribe: true, MethodCompletionComplete: true,
		MethodLoggingSetLevel: true,
		MethodTasksGet:        true, MethodTasksResult: true,
		MethodTasksList: true, MethodTasksCancel: true,
	},
	EraModern: {
		MethodServerDiscover: true,
		// The tasks extension (tasks/result and tasks/list are gone).
		MethodTasksGet: true, MethodTasksUpdate: true, MethodTasksCancel: true,
		MethodToolsList: true, MethodToolsCall: true,
		MethodPromptsList: true, MethodPromptsGet: true,
		MethodResourcesList: true, MethodResourcesTemplatesList: true,
		MethodResourcesRead: true, MethodCompletionComplete: true,
		MethodSubscriptionsListen: true,
	},
}

// IsEraMethod reports whether method is a client request the era serves
// (every other method is -32601 in that era, whatever the transport).
func IsEraMethod(era Era, method string) bool { return eraMethods[era][method] }

// EraMethods returns the client request methods the era serves, sorted.
func EraMethods(era Era) []string {
	out := make([]string, 0, len(eraMethods[era]))
	for m := range eraMethods[era] {
		out = append(out, m)
	}
	slices.Sort(out)
	return out
}
