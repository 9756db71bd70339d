package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	"github.com/mcpfleet/mcpfleet/internal/jsonschema"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

func (s *Server) callTool(ctx context.Context, req *Request, r *registry, params json.RawMessage) (protocol.Result, error) {
	var p protocol.CallToolParams
	if err := req.callToolParams(params, &p); err != nil {
		return nil, err
	}
	req.setName(p.Name)
	t, ok := r.tools[p.Name]
	if !ok {
		return nil, protocol.ErrUnknownTool(p.Name)
	}
	args := p.Arguments
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	if req.in.ParamHeaders != nil {
		if e := checkParamHeaders(t.headers, req.in.ParamHeaders, args); e != nil {
			return nil, e
		}
	}
	if err := t.validator.ValidateJSON(args); err != nil {
		return ToolError(fmt.Sprintf("invalid arguments for tool %q: %v", p.Name, err)), nil
	}
	switch {
	case req.in.Era == protocol.EraModern && t.tasks != TaskForbidden:
		declared := protocol.DeclaresTasks(req.in.ClientCapabilities)
		switch {
		case declared && req.in.TaskHost != nil:
			return s.runTask(ctx, req, t, args)
		case t.tasks == TaskRequired && !declared:
			return nil, protocol.TasksRequired(fmt.Sprintf("tool %q", p.Name))
		case t.tasks == TaskRequired:
			return nil, protocol.NewError(protocol.CodeInternalError, "tool %q runs only as a task, which this transport cannot run", p.Name)
		}
	case req.in.Era == protocol.EraLegacy && req.in.TaskHost != nil:
		// 2025-11-25 task augmentation: params.task asks for a task.
		augmented := len(p.Task) > 0 && string(p.Task) != "null"
		switch {
		case augmented && t.tasks == TaskForbidden:
			return nil, protocol.NewError(protocol.CodeMethodNotFound, "tool %q does not run as a task (its execution.taskSupport is forbidden)", p.Name)
		case augmented:
			return s.runTask(ctx, req, t, args)
		case t.tasks == TaskRequired:
			return nil, protocol.NewError(protocol.CodeMethodNotFound, "tool %q runs only as a task: add params.task", p.Name)
		}
	}
	return invokeTool(ctx, req, t, args)
}

// invokeTool runs a tool's handler inside the tool middleware: a plain
// error becomes a tool error (isError), a protocol error, a cancellation
// or an MRTR round end stays an error.
func invokeTool(ctx context.Context, req *Request, t *tool, args json.RawMessage) (protocol.Result, error) {
	res, err := t.run(ctx, req, args)
	if err != nil {
		var pe *protocol.Error
		if errors.As(err, &pe) || ctx.Err() != nil || errors.Is(err, ErrInputRequired) {
			return nil, err
		}
		return ToolError(err.Error()), nil
	}
	if res == nil {
		res = &protocol.CallToolResult{}
	}
	return res, nil
}

// ToolError returns a tool-error result (isError:true) carrying msg as
// text: the way to report a failure the model should see and may correct.
func ToolError(msg string) *protocol.CallToolResult {
	return &protocol.CallToolResult{IsError: true, Content: []protocol.Content{&protocol.TextContent{Text: msg}}}
}

// TextResult returns a result with one text block.
func TextResult(text string) *protocol.CallToolResult {
	return &protocol.CallToolResult{Content: []protocol.Content{&protocol.TextContent{Text: text}}}
}

// TypedToolHandler handles a tool whose arguments decode into In and whose
// structured output is Out. Returning a nil result is allowed when Out
// carries the answer; see [AddTool].
type TypedToolHandler[In, Out any] func(ctx context.Context, req *Request, in In) (*protocol.CallToolResult, Out, error)

// AddTool registers a typed tool on s.
//
// When t.InputSchema is nil it is derived from In (a struct: json field
// names, fields without omitempty required, `jsonschema:"..."` tags as
// descriptions). When Out is not `any` and t.OutputSchema is nil, the
// output schema is derived from Out, which must then describe a JSON
// object (a struct or a map, as 2025-11-25 requires of outputSchema and
// structuredContent), and the result's structuredContent is set to the
// returned Out (with its JSON as a text block when the handler returned no
// content), as the spec asks of tools with an output schema. A nil Out (a
// nil pointer or map) adds no structuredContent.
func AddTool[In, Out any](s *Server, t *protocol.Tool, h TypedToolHandler[In, Out], opts ...ToolOption) error {
	if t == nil || h == nil {
		return errors.New("mcp: AddTool needs a tool and a handler")
	}
	def := *t
	if len(def.InputSchema) == 0 {
		schema, err := jsonschema.ForObject[In]()
		if err != nil {
			return fmt.Errorf("mcp: tool %q: deriving the input schema: %w", t.Name, err)
		}
		def.InputSchema = schema
	}
	outType := reflect.TypeFor[Out]()
	structured := outType.Kind() != reflect.Interface || outType.NumMethod() != 0
	if structured && len(def.OutputSchema) == 0 {
		schema, err := jsonschema.For(outType, &jsonschema.ForOptions{RequireObject: true})
		if err != nil {
			return fmt.Errorf("mcp: tool %q: deriving the output schema: %w", t.Name, err)
		}
		def.OutputSchema = schema
	}
	flat := newFlatArgs(reflect.TypeFor[In]())
	raw := func(ctx context.Context, req *Request, args json.RawMessage) (*protocol.CallToolResult, error) {
		var in In
		if flat == nil || !flat.decode(args, reflect.ValueOf(&in).Elem()) {
			var zero In
			in = zero
			if err := json.Unmarshal(args, &in); err != nil {
				return ToolError(fmt.Sprintf("invalid arguments for tool %q: %v", def.Name, err)), nil
			}
		}
		res, out, err := h(ctx, req, in)
		if err != nil {
			return nil, err
		}
		if res == nil {
			res = &protocol.CallToolResult{}
		}
		if structured && res.StructuredContent == nil && !res.IsError && !isNil(out) {
			res.StructuredContent = out
			if len(res.Content) == 0 {
				b, err := json.Marshal(out)
				if err != nil {
					return nil, fmt.Errorf("mcp: tool %q: marshalling output: %w", def.Name, err)
				}
				res.Content = []protocol.Content{&protocol.TextContent{Text: string(b)}}
			}
		}
		return res, nil
	}
	return s.AddTool(&def, raw, opts...)
}

// isNil reports whether v is a nil pointer, map, slice or interface: a
// value that marshals as JSON null.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Interface:
		return rv.IsNil()
	}
	return false
}
