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

// callToolMembers are CallToolParams' json names, in the order of the
// values fastCallToolParams reads.
var callToolMembers = []string{"name", "arguments", "_meta", "task", "inputResponses", "requestState"}

func fastCallToolParams(params []byte, p *protocol.CallToolParams) bool {
	var v [6][]byte
	if !protocol.ScanMembers(params, callToolMembers, v[:]) || v[3] != nil || v[4] != nil || v[5] != nil {
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
		m, err := protocol.DecodeRequestMeta(v[2])
		if err != nil {
			return false
		}
		p.Meta = m
	}
	return true
}
