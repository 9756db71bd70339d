package testenv

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/jsonschema"
)

// Schemas validates messages against one version of the official MCP JSON
// schema (testdata/spec/<version>/schema.json under the module root, copied
// verbatim from the specification repository; see testdata/spec/SOURCE.txt).
type Schemas struct {
	version string
	defs    json.RawMessage
	mu      sync.Mutex
	cache   map[string]*jsonschema.Validator
}

var (
	schemasMu sync.Mutex
	schemas   = map[string]*Schemas{}
)

// SchemasFor loads the schema of version ("2025-11-25" or "2026-07-28").
// A missing or unreadable schema file fails the test.
func SchemasFor(tb testing.TB, version string) *Schemas {
	tb.Helper()
	schemasMu.Lock()
	defer schemasMu.Unlock()
	if s := schemas[version]; s != nil {
		return s
	}
	path := filepath.Join(ModuleRoot(tb), "testdata", "spec", version, "schema.json")
	raw, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("testenv: reading the %s schema (%s, recorded in testdata/spec/SOURCE.txt): %v", version, path, err)
	}
	var doc struct {
		Defs json.RawMessage `json:"$defs"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		tb.Fatalf("testenv: parsing the %s schema: %v", version, err)
	}
	s := &Schemas{version: version, defs: doc.Defs, cache: map[string]*jsonschema.Validator{}}
	schemas[version] = s
	return s
}

func (s *Schemas) validator(def string) (*jsonschema.Validator, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v := s.cache[def]; v != nil {
		return v, nil
	}
	doc := fmt.Sprintf(`{"$schema":"https://json-schema.org/draft/2020-12/schema","$ref":"#/$defs/%s","$defs":%s}`, def, s.defs)
	v, err := jsonschema.Compile(json.RawMessage(doc))
	if err != nil {
		return nil, fmt.Errorf("compiling %s#%s: %w", s.version, def, err)
	}
	s.cache[def] = v
	return v, nil
}

// Validate checks raw against the named definition (e.g. "CallToolResult").
func (s *Schemas) Validate(def string, raw []byte) error {
	v, err := s.validator(def)
	if err != nil {
		return err
	}
	if err := v.ValidateJSON(raw); err != nil {
		return fmt.Errorf("%s does not match %s schema %s: %w", truncate(raw, 300), s.version, def, err)
	}
	return nil
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}

// ResultDefs maps request methods to the schema definition of their result.
var ResultDefs = map[string]string{
	"initialize":               "InitializeResult",
	"ping":                     "EmptyResult",
	"tools/list":               "ListToolsResult",
	"tools/call":               "CallToolResult",
	"prompts/list":             "ListPromptsResult",
	"prompts/get":              "GetPromptResult",
	"resources/list":           "ListResourcesResult",
	"resources/templates/list": "ListResourceTemplatesResult",
	"resources/read":           "ReadResourceResult",
	"resources/subscribe":      "EmptyResult",
	"resources/unsubscribe":    "EmptyResult",
	"completion/complete":      "CompleteResult",
	"logging/setLevel":         "EmptyResult",
	"server/discover":          "DiscoverResult",
}

// NotificationDefs maps server notifications and requests to their schema
// definition.
var NotificationDefs = map[string]string{
	"notifications/progress":               "ProgressNotification",
	"notifications/message":                "LoggingMessageNotification",
	"notifications/cancelled":              "CancelledNotification",
	"notifications/tools/list_changed":     "ToolListChangedNotification",
	"notifications/prompts/list_changed":   "PromptListChangedNotification",
	"notifications/resources/list_changed": "ResourceListChangedNotification",
	"notifications/resources/updated":      "ResourceUpdatedNotification",
	"notifications/elicitation/complete":   "ElicitationCompleteNotification",
	"notifications/tasks/status":           "TaskStatusNotification",
	"sampling/createMessage":               "CreateMessageRequest",
	"elicitation/create":                   "ElicitRequest",
	"roots/list":                           "ListRootsRequest",
}

// ValidateMessage checks one JSON-RPC message the server sent: the
// envelope, and the result (given the request method) or the
// notification/request by its method.
func (s *Schemas) ValidateMessage(requestMethod string, raw []byte) error {
	if err := s.Validate("JSONRPCMessage", raw); err != nil {
		return err
	}
	var m struct {
		Method string          `json:"method"`
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return err
	}
	switch {
	case m.Method != "":
		if def, ok := NotificationDefs[m.Method]; ok {
			return s.Validate(def, raw)
		}
	case m.Result != nil:
		var rt struct {
			ResultType string `json:"resultType"`
		}
		_ = json.Unmarshal(m.Result, &rt)
		switch rt.ResultType {
		case "input_required":
			return s.Validate("InputRequiredResult", m.Result)
		case "task":
			// The tasks extension's CreateTaskResult is not in the core
			// schema: it is a Result (as the conformance suite checks it).
			return s.Validate("Result", m.Result)
		}
		if s.version == "2025-11-25" {
			// The experimental tasks of 2025-11-25 are in its schema.
			var task struct {
				Task json.RawMessage `json:"task"`
			}
			_ = json.Unmarshal(m.Result, &task)
			switch {
			case requestMethod == "tools/call" && task.Task != nil:
				return s.Validate("CreateTaskResult", m.Result)
			case requestMethod == "tasks/get":
				return s.Validate("GetTaskResult", m.Result)
			case requestMethod == "tasks/cancel":
				return s.Validate("CancelTaskResult", m.Result)
			case requestMethod == "tasks/result":
				return s.Validate("CallToolResult", m.Result)
			case requestMethod == "tasks/list":
				return s.Validate("ListTasksResult", m.Result)
			}
		}
		if def, ok := ResultDefs[requestMethod]; ok {
			return s.Validate(def, m.Result)
		}
	}
	return nil
}
