package mcp

import (
	"encoding/json"

	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// decodeCallToolParams decodes tools/call's params into p as
// decodeParams does, without a reflection walk in the common case: a
// name, arguments and at most a _meta (decoded alone). Anything else (a
// task, MRTR members, keys encoding/json would match differently, an
// escaped or non-string name: see protocol.ScanMembers) takes
// encoding/json's path, which also reports every error.
func decodeCallToolParams(params []byte, p *protocol.CallToolParams) error {
	if fastCallToolParams(params, p) {
		return nil
	}
	*p = protocol.CallToolParams{}
	return decodeParams(params, p)
}

// callToolParams is decodeCallToolParams for the params of r's tools/call,
// with the same result and error. When NewRequestParams read these very
// params (the same bytes, see headFor) and could read them plainly, p is
// built from the members that read kept, and the params and their _meta
// are not read again; otherwise (another request's params, a request made
// by NewRequest, params that needed encoding/json) it is
// decodeCallToolParams.
func (r *Request) callToolParams(params []byte, p *protocol.CallToolParams) error {
	h := r.headFor(params)
	if h == nil || h.call == nil {
		return decodeCallToolParams(params, p)
	}
	if h.call.fill(p) {
		return nil
	}
	*p = protocol.CallToolParams{}
	return decodeParams(params, p)
}

// callToolMembers are CallToolParams' json names, in the order of the
// values fastCallToolParams reads.
var callToolMembers = []string{"name", "arguments", "_meta", "task", "inputResponses", "requestState"}

func fastCallToolParams(params []byte, p *protocol.CallToolParams) bool {
	var v [6][]byte
	return protocol.ScanMembers(params, callToolMembers, v[:]) && fillCallToolParams(&v, nil, p)
}

// fillCallToolParams sets p from v, the values of callToolMembers, as
// encoding/json would, when it can read them plainly; false sends the
// caller to encoding/json (p is then partly set). meta, when not nil, is
// the _meta v[2] as protocol.ScanRequestMeta read it, so that it is not
// read again.
func fillCallToolParams(v *[6][]byte, meta *protocol.ScannedMeta, p *protocol.CallToolParams) bool {
	if v[3] != nil || v[4] != nil || v[5] != nil {
		return false
	}
	if v[0] != nil {
		name, ok := protocol.PlainString(v[0])
		if !ok {
			return false
		}
		p.Name = name
	}
	if v[1] != nil {
		p.Arguments = append(json.RawMessage(nil), v[1]...) // a copy, as encoding/json's: handlers may keep it
	}
	if v[2] != nil {
		var m *protocol.RequestMeta
		var err error
		if meta != nil {
			m, err = meta.Decode()
		} else {
			m, err = protocol.DecodeRequestMeta(v[2])
		}
		if err != nil {
			return false
		}
		p.Meta = m
	}
	return true
}

// callHead is a tools/call's head as scanCallHead read it, in one
// allocation: the head itself (whose call points back here) and what
// the tools/call decode needs besides, so that it reads the params no
// further: the raw values of callToolMembers and the _meta's members
// (when head.Meta is set). All alias the params, which nothing writes.
type callHead struct {
	head        paramsHead
	vals        [6][]byte
	meta        metaHead
	metaMembers protocol.ScannedMeta
}

// scanCallHead is scanHead for a tools/call's params: the same head, read
// in the same single pass over the params (and one over their _meta) as
// the members of CallToolParams, which it keeps. ok false sends the
// caller to encoding/json, as scanHead's does: a key that encoding/json
// could match with one of CallToolParams' members otherwise (see
// protocol.ScanMembers) is one more reason than scanHead has.
func scanCallHead(params []byte) (h *paramsHead, ok bool) {
	c := new(callHead)
	v := &c.vals
	if !protocol.ScanMembers(params, callToolMembers, v[:]) {
		return nil, false
	}
	c.head = paramsHead{RequestState: capped(v[5]), InputResponses: capped(v[4]), call: c}
	if v[2] != nil && string(v[2]) != "null" {
		if c.metaMembers, ok = scanMetaHead(v[2], &c.meta); !ok {
			return nil, false
		}
		c.head.Meta = &c.meta
	}
	return &c.head, true
}

// fill is fillCallToolParams for the members c kept.
func (c *callHead) fill(p *protocol.CallToolParams) bool {
	var meta *protocol.ScannedMeta
	if c.head.Meta != nil {
		meta = &c.metaMembers
	}
	return fillCallToolParams(&c.vals, meta, p)
}
