package mcp

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// ErrInputRequired is returned by Input, Inputs, Elicit, Sample and
// ListRoots on a modern (2026-07-28) request when the client has not
// answered yet: the handler should return it (or any error wrapping it);
// the server then ends the round with an InputRequiredResult, and the
// client's retry runs the handler again with the answers available.
var ErrInputRequired = errors.New("mcp: input required from the client (MRTR round ends)")

// mrtrMethods may answer with input_required.
var mrtrMethods = map[string]bool{
	protocol.MethodToolsCall: true, protocol.MethodPromptsGet: true, protocol.MethodResourcesRead: true,
}

// mrtr is a modern request's multi-round state. Guarded by Request.mrtrMu.
type mrtr struct {
	answers map[string]json.RawMessage // earlier rounds (from requestState) and this retry's inputResponses
	app     []byte                     // handler state from requestState
	newApp  []byte
	appSet  bool
	pending map[string]*protocol.InputRequest // asked in this round
	counts  map[string]int                    // auto key counters per method
	retry   bool                              // the request carried inputResponses or requestState
	stateID string                            // the id of the requestState this retry carried
}

// mrtrParams are the MRTR members of a retry's params.
type mrtrParams struct {
	InputResponses map[string]json.RawMessage `json:"inputResponses"`
	RequestState   *string                    `json:"requestState"`
}

// decode fills p from the raw members of params' head (nil: none).
func (p *mrtrParams) decode(head *paramsHead) error {
	if head == nil {
		return nil
	}
	if len(head.InputResponses) > 0 {
		if err := json.Unmarshal(head.InputResponses, &p.InputResponses); err != nil {
			return err
		}
	}
	if len(head.RequestState) > 0 {
		return json.Unmarshal(head.RequestState, &p.RequestState)
	}
	return nil
}

// startMRTR prepares a modern request of a method that may return
// input_required: it verifies requestState and gathers the answers.
func (s *Server) startMRTR(req *Request, params json.RawMessage, head *paramsHead) error {
	var p mrtrParams
	if err := p.decode(head); err != nil {
		return protocol.ErrBadParams(err)
	}
	m := &mrtr{} // its maps are made when first written: most requests ask nothing
	var asked []string
	if p.RequestState != nil {
		digest, err := paramsDigest(params)
		if err != nil {
			return protocol.ErrBadParams(err)
		}
		st, err := s.sealer.Load().openState(*p.RequestState, req.in.Method, digest, req.in.Principal, time.Now())
		if err != nil {
			return protocol.ErrBadParams(err)
		}
		m.answers = maps.Clone(st.Answers)
		m.app = st.App
		m.stateID = st.ID
		asked = st.Asked
	}
	// A retry with a requestState may only answer what its round asked:
	// earlier answers (sealed) cannot be replaced and unasked keys are
	// ignored. Without a state (a first round, or a server that sent
	// none) the responses are taken as they come.
	if p.RequestState == nil {
		m.answers = maps.Clone(p.InputResponses)
	}
	for _, k := range asked {
		if a, ok := p.InputResponses[k]; ok {
			if _, sealed := m.answers[k]; !sealed {
				if m.answers == nil {
					m.answers = map[string]json.RawMessage{}
				}
				m.answers[k] = a
			}
		}
	}
	m.retry = p.RequestState != nil || p.InputResponses != nil
	req.mrtr = m
	return nil
}

// answersOrEmpty is answers, or an empty map for none: a sealed state
// holds an object (as it did when the map was always made).
func answersOrEmpty(answers map[string]json.RawMessage) map[string]json.RawMessage {
	if answers == nil {
		return map[string]json.RawMessage{}
	}
	return answers
}

// finishMRTR turns a round that asked for input into an
// InputRequiredResult; ok is false when nothing is pending.
func (s *Server) finishMRTR(req *Request, params json.RawMessage, herr error) (protocol.Result, bool, error) {
	req.mrtrMu.Lock()
	m := req.mrtr
	defer req.mrtrMu.Unlock()
	// Only a round the handler ended by asking turns into input_required:
	// a handler that treated an input as optional and answered, or failed
	// otherwise, keeps its own outcome.
	if m == nil || len(m.pending) == 0 || !errors.Is(herr, ErrInputRequired) {
		return nil, false, nil
	}
	digest, err := paramsDigest(params)
	if err != nil {
		return nil, true, err
	}
	app := m.app
	if m.appSet {
		app = m.newApp
	}
	st := sealedState{
		ID:     randomID(),
		Method: req.in.Method, Digest: digest, Principal: req.in.Principal,
		Expires: time.Now().Add(s.opts.StateTTL).UnixMilli(), Answers: answersOrEmpty(m.answers), App: app,
		Asked: slices.Sorted(maps.Keys(m.pending)),
	}
	plain, err := json.Marshal(&st)
	if err != nil {
		return nil, true, err
	}
	res := &protocol.InputRequiredResult{InputRequests: m.pending, RequestState: s.sealer.Load().seal(plain)}
	res.ResultType = protocol.ResultTypeInputRequired
	return res, true, nil
}

// State returns the handler state of an MRTR retry: what the handler passed
// to SetState in the previous round (nil in the first round and on legacy
// requests). It arrived sealed in requestState, so it can be trusted.
func (r *Request) State() []byte {
	r.mrtrMu.Lock()
	defer r.mrtrMu.Unlock()
	if r.mrtr == nil {
		return nil
	}
	return r.mrtr.app
}

// SetState sets the handler state carried (sealed) to the next round when
// this round ends with input_required.
func (r *Request) SetState(b []byte) {
	r.mrtrMu.Lock()
	defer r.mrtrMu.Unlock()
	if r.mrtr != nil {
		r.mrtr.newApp, r.mrtr.appSet = slices.Clone(b), true
	}
}

// Input asks the client for one input: on a legacy session it sends method
// (sampling/createMessage, elicitation/create, roots/list) as a
// server-to-client request and waits for the answer; on a modern request
// it returns the answer named key from the retry's inputResponses, or
// ErrInputRequired after recording the input request under key. The
// result is the client's raw answer.
func (r *Request) Input(ctx context.Context, key, method string, params any) (json.RawMessage, error) {
	got, err := r.Inputs(ctx, map[string]*protocol.InputRequest{key: {Method: method, Params: params}})
	if err != nil {
		return nil, err
	}
	return got[key], nil
}

// Inputs asks for several inputs at once: on a modern request every
// missing one goes into the same InputRequiredResult; on a legacy session
// they are sent one after the other (in key order).
func (r *Request) Inputs(ctx context.Context, reqs map[string]*protocol.InputRequest) (map[string]json.RawMessage, error) {
	keys := slices.Sorted(maps.Keys(reqs))
	for _, k := range keys {
		if err := r.inputCapability(reqs[k].Method); err != nil {
			return nil, err
		}
	}
	if t := r.task; t != nil && t.hasBegun() {
		// A running task asks through its host: the task goes to
		// input_required and the answers come with tasks/update.
		return t.host.Inputs(ctx, t.id(), reqs)
	}
	out := make(map[string]json.RawMessage, len(reqs))
	if r.in.Era != protocol.EraModern {
		for _, k := range keys {
			raw, err := r.callRaw(ctx, reqs[k].Method, reqs[k].Params)
			if err != nil {
				return nil, err
			}
			out[k] = raw
		}
		return out, nil
	}
	r.mrtrMu.Lock()
	defer r.mrtrMu.Unlock()
	if r.mrtr == nil {
		return nil, fmt.Errorf("mcp: %s cannot ask the client for input in 2026-07-28 (only tools/call, prompts/get and resources/read can)", r.in.Method)
	}
	missing := false
	for _, k := range keys {
		if a, ok := r.mrtr.answers[k]; ok {
			if len(a) == 0 || a[0] != '{' {
				return nil, protocol.NewError(protocol.CodeInvalidParams, "invalid params: inputResponses[%q] must be an object (the client's %s result)", k, reqs[k].Method)
			}
			out[k] = a
			continue
		}
		if r.mrtr.pending == nil {
			r.mrtr.pending = map[string]*protocol.InputRequest{}
		}
		r.mrtr.pending[k] = reqs[k]
		missing = true
	}
	if missing {
		return nil, ErrInputRequired
	}
	return out, nil
}

// autoKey names the n-th input of a kind a handler asks for; the same
// handler code asks in the same order on every round, so keys match.
func (r *Request) autoKey(kind string) string {
	r.mrtrMu.Lock()
	defer r.mrtrMu.Unlock()
	if r.mrtr == nil {
		return kind
	}
	if r.mrtr.counts == nil {
		r.mrtr.counts = map[string]int{}
	}
	r.mrtr.counts[kind]++
	return kind + "-" + strconv.Itoa(r.mrtr.counts[kind])
}

func (r *Request) callRaw(ctx context.Context, method string, params any) (json.RawMessage, error) {
	if r.in.Out == nil {
		return nil, ErrNoOutbound
	}
	return r.in.Out.Call(ctx, method, params)
}

// capabilityError reports a capability the client did not declare: on
// legacy a plain error (the handler decides), on modern the
// MissingRequiredClientCapability error (-32021, HTTP 400) carrying
// requiredCapabilities. Both match errors.Is(err, ErrCapability).
func (r *Request) capabilityError(name string, required any) error {
	if r.in.Era != protocol.EraModern {
		return fmt.Errorf("%w: %s", ErrCapability, name)
	}
	return &capError{pe: MissingCapabilityError(name, required), name: name}
}

// MissingCapabilityError returns the 2026-07-28 error -32021
// (MissingRequiredClientCapability, HTTP 400) a handler returns when the
// request needs a client capability it did not declare. required is the
// capabilities object, e.g. map[string]any{"sampling": struct{}{}}.
func MissingCapabilityError(name string, required any) *protocol.Error {
	return protocol.NewError(protocol.CodeMissingRequiredClientCapability, "the client did not declare the %s capability this request needs", name).
		WithData(map[string]any{"requiredCapabilities": required})
}

type capError struct {
	pe   *protocol.Error
	name string
}

func (e *capError) Error() string   { return fmt.Sprintf("%v: %s", ErrCapability, e.name) }
func (e *capError) Unwrap() []error { return []error{ErrCapability, e.pe} }

func randomID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// inputCapability checks that the client declared the capability an input
// request needs (elicitation, sampling, roots), as Elicit, Sample and
// ListRoots do: a server never asks a client for what it cannot answer.
func (r *Request) inputCapability(method string) error {
	caps := r.in.ClientCapabilities
	if caps == nil {
		caps = &protocol.ClientCapabilities{}
	}
	switch method {
	case protocol.MethodElicitationCreate:
		if caps.Elicitation == nil {
			return r.capabilityError("elicitation", map[string]any{"elicitation": struct{}{}})
		}
	case protocol.MethodSamplingCreateMessage:
		if caps.Sampling == nil {
			return r.capabilityError("sampling", map[string]any{"sampling": struct{}{}})
		}
	case protocol.MethodRootsList:
		if caps.Roots == nil {
			return r.capabilityError("roots", map[string]any{"roots": struct{}{}})
		}
	}
	return nil
}
