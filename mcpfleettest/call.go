package mcpfleettest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"

	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// maxBody bounds a JSON answer read into memory.
const maxBody = 64 << 20

// CallOption changes one call.
type CallOption func(*callOptions)

type callOptions struct {
	progress func(*protocol.ProgressParams)
	meta     protocol.Meta
	header   http.Header
}

// WithProgress makes the call carry a progressToken and sends its
// notifications/progress to f (instead of ClientOptions.OnProgress), on the
// goroutine of the call, before it returns.
func WithProgress(f func(p *protocol.ProgressParams)) CallOption {
	return func(o *callOptions) { o.progress = f }
}

// WithMeta adds members to the request's params._meta; they win over the
// ones the client sets (protocolVersion, clientCapabilities, …), so a test
// can send a request the server must refuse.
func WithMeta(m protocol.Meta) CallOption {
	return func(o *callOptions) {
		if o.meta == nil {
			o.meta = protocol.Meta{}
		}
		for k, v := range m {
			o.meta[k] = v
		}
	}
}

// WithHeader adds HTTP headers to the call's requests.
func WithHeader(h http.Header) CallOption {
	return func(o *callOptions) {
		if o.header == nil {
			o.header = http.Header{}
		}
		for k, vs := range h {
			o.header[k] = append(o.header[k], vs...)
		}
	}
}

// Call sends one request and decodes its result into result (nil
// discards it). params is marshalled and must be a JSON object (or nil);
// the client adds the _meta members its era needs. On modern, an
// input_required result is answered with the option handlers and retried
// until the result is complete.
func (c *Client) Call(ctx context.Context, method string, params, result any, opts ...CallOption) error {
	var co callOptions
	for _, o := range opts {
		o(&co)
	}
	_, err := c.exchange(ctx, method, params, result, &co)
	return err
}

// exchange runs a request (every round of it) and returns the last
// answer's HTTP header.
func (c *Client) exchange(ctx context.Context, method string, params, result any, co *callOptions) (http.Header, error) {
	ctx, done, err := c.enter(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	if co == nil {
		co = &callOptions{}
	}
	p, err := c.buildParams(method, params, co)
	if err != nil {
		return nil, fmt.Errorf("mcpfleettest: %s: %w", method, err)
	}
	for round := 1; ; round++ {
		raw, hdr, err := c.roundTrip(ctx, method, p, co)
		if err != nil {
			return nil, err
		}
		var head struct {
			ResultType    string                  `json:"resultType"`
			InputRequests map[string]inputRequest `json:"inputRequests"`
			RequestState  *string                 `json:"requestState"`
		}
		if c.era == protocol.EraModern {
			if err := json.Unmarshal(raw, &head); err != nil {
				return nil, fmt.Errorf("mcpfleettest: %s: decoding the result: %w", method, err)
			}
		}
		if head.ResultType == protocol.ResultTypeInputRequired {
			if round > c.opts.MaxInputRounds {
				return nil, fmt.Errorf("mcpfleettest: %s: still input_required after %d rounds (ClientOptions.MaxInputRounds)", method, c.opts.MaxInputRounds)
			}
			if err := c.answerInputs(ctx, method, p, head.InputRequests, head.RequestState); err != nil {
				return nil, err
			}
			continue
		}
		if result != nil {
			if err := json.Unmarshal(raw, result); err != nil {
				return nil, fmt.Errorf("mcpfleettest: %s: decoding the result: %w", method, err)
			}
		}
		return hdr, nil
	}
}

type inputRequest struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// answerInputs sets the next round's inputResponses and requestState.
func (c *Client) answerInputs(ctx context.Context, method string, p map[string]json.RawMessage, reqs map[string]inputRequest, state *string) error {
	if len(reqs) == 0 {
		return fmt.Errorf("mcpfleettest: %s: an input_required result without inputRequests", method)
	}
	answers := make(map[string]json.RawMessage, len(reqs))
	for _, key := range slices.Sorted(maps.Keys(reqs)) { // handlers called in a stable order
		r := reqs[key]
		res, err := c.serve(ctx, r.Method, r.Params)
		if err != nil {
			return fmt.Errorf("mcpfleettest: %s: answering input %q (%s): %w", method, key, r.Method, err)
		}
		if answers[key], err = json.Marshal(res); err != nil {
			return fmt.Errorf("mcpfleettest: %s: input %q: %w", method, key, err)
		}
	}
	p["inputResponses"], _ = json.Marshal(answers)
	delete(p, "requestState")
	if state != nil {
		p["requestState"], _ = json.Marshal(*state)
	}
	return nil
}

// serve answers a server-to-client request with the option handlers.
func (c *Client) serve(ctx context.Context, method string, params json.RawMessage) (any, error) {
	noHandler := func(field string) error {
		return protocol.NewError(protocol.CodeMethodNotFound, "mcpfleettest: the client has no %s handler for %s (ClientOptions.%s)", field, method, field)
	}
	switch method {
	case protocol.MethodElicitationCreate:
		if c.opts.Elicit == nil {
			return nil, noHandler("Elicit")
		}
		var p protocol.ElicitParams
		if err := unmarshalParams(params, &p); err != nil {
			return nil, err
		}
		return result(c.opts.Elicit(ctx, &p))
	case protocol.MethodSamplingCreateMessage:
		if c.opts.Sample == nil {
			return nil, noHandler("Sample")
		}
		var p protocol.CreateMessageParams
		if err := unmarshalParams(params, &p); err != nil {
			return nil, err
		}
		return result(c.opts.Sample(ctx, &p))
	case protocol.MethodRootsList:
		if c.opts.Roots == nil {
			return nil, noHandler("Roots")
		}
		return &protocol.ListRootsResult{Roots: append([]*protocol.Root{}, c.opts.Roots...)}, nil
	case protocol.MethodPing:
		return &protocol.EmptyResult{}, nil
	}
	return nil, protocol.NewError(protocol.CodeMethodNotFound, "mcpfleettest: the client does not serve %q", method)
}

// result returns a handler's answer, refusing a nil result without an
// error (it would marshal as null).
func result[R any](res *R, err error) (any, error) {
	if err == nil && res == nil {
		err = errors.New("the handler returned neither a result nor an error")
	}
	if err != nil {
		return nil, err
	}
	return res, nil
}

func unmarshalParams(raw json.RawMessage, v any) error {
	if len(raw) == 0 {
		raw = json.RawMessage("{}")
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return protocol.NewError(protocol.CodeInvalidParams, "invalid params: %v", err)
	}
	return nil
}

// buildParams returns the params object with the era's _meta.
func (c *Client) buildParams(method string, params any, co *callOptions) (map[string]json.RawMessage, error) {
	p := map[string]json.RawMessage{}
	if params != nil {
		b, err := json.Marshal(params)
		if err != nil {
			return nil, fmt.Errorf("marshalling params: %w", err)
		}
		if string(b) != "null" {
			if err := json.Unmarshal(b, &p); err != nil {
				return nil, fmt.Errorf("params must marshal to a JSON object: %s", truncate(b))
			}
		}
	}
	meta := map[string]json.RawMessage{}
	if raw, ok := p["_meta"]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &meta); err != nil {
			return nil, fmt.Errorf("params._meta must be a JSON object: %s", truncate(raw))
		}
	}
	set := func(k string, v any) {
		if _, ok := meta[k]; !ok {
			meta[k], _ = json.Marshal(v)
		}
	}
	for k, v := range co.meta {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("_meta %q: %w", k, err)
		}
		meta[k] = b
	}
	if (co.progress != nil || c.opts.OnProgress != nil) && method != protocol.MethodInitialize {
		set(protocol.MetaProgressToken, c.prefix+"-"+strconv.FormatInt(c.nextID.Add(1), 10))
	}
	if c.era == protocol.EraModern {
		set(protocol.MetaProtocolVersion, c.version)
		set(protocol.MetaClientCapabilities, &c.caps)
		set(protocol.MetaClientInfo, &c.info)
		if c.opts.LogLevel != "" {
			set(protocol.MetaLogLevel, c.opts.LogLevel)
		}
	}
	delete(p, "_meta")
	if len(meta) > 0 {
		p["_meta"], _ = json.Marshal(meta)
	}
	return p, nil
}
