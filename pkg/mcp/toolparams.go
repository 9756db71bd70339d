package mcp

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// decodeCallToolParams decodes tools/call's params into p as
// decodeParams does, without a reflection walk in the common case: a
// name, arguments and at most a _meta (decoded alone). Anything else (a
// task, MRTR members, keys that encoding/json would match only by case
// folding, escaped or non-ASCII keys, duplicates, an escaped or non-string
// name) takes encoding/json's path, which also reports every error.
func decodeCallToolParams(params []byte, p *protocol.CallToolParams) error {
	if fastCallToolParams(params, p) {
		return nil
	}
	*p = protocol.CallToolParams{}
	return decodeParams(params, p)
}

// callToolKeys are the members of CallToolParams, as encoding/json
// matches them.
var callToolKeys = [][]byte{[]byte("name"), []byte("arguments"), []byte("_meta"), []byte("task"), []byte("inputResponses"), []byte("requestState")}

func fastCallToolParams(params []byte, p *protocol.CallToolParams) bool {
	var name, args, meta []byte
	fast := true
	valid := protocol.ScanObject(params, func(key []byte, escaped bool, value []byte) {
		if escaped || !asciiKey(key) {
			fast = false
			return
		}
		switch string(key) {
		case "name":
			fast = fast && name == nil
			name = value
		case "arguments":
			fast = fast && args == nil
			args = value
		case "_meta":
			fast = fast && meta == nil
			meta = value
		default:
			for _, k := range callToolKeys {
				if bytes.EqualFold(key, k) {
					fast = false // task, MRTR members, or a name in another case
				}
			}
		}
	})
	if !valid || !fast {
		return false
	}
	if name != nil {
		if len(name) < 2 || name[0] != '"' || bytes.IndexByte(name, '\\') >= 0 || !utf8.Valid(name) {
			return false // null, another type, escapes, or invalid UTF-8 (which encoding/json mends)
		}
		p.Name = string(name[1 : len(name)-1])
	}
	if args != nil {
		p.Arguments = append(json.RawMessage(nil), args...) // a copy, as encoding/json's: handlers may keep it
	}
	if meta != nil && json.Unmarshal(meta, &p.Meta) != nil {
		return false
	}
	return true
}

func asciiKey(k []byte) bool {
	for _, c := range k {
		if c >= 0x80 {
			return false
		}
	}
	return true
}
