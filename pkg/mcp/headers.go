package mcp

import (
	"encoding/json"
	"fmt"
	"math/big"
	"regexp"
	"strconv"
	"strings"

	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// headerArg is a tool argument mirrored into an Mcp-Param-{Name} header
// (x-mcp-header, SEP-2243).
type headerArg struct {
	header string // lower-cased name after Mcp-Param-
	prop   string
	typ    string // string, integer or boolean
}

// headerArgs reads the x-mcp-header annotations of a tool's top-level
// properties.
func headerArgs(schema json.RawMessage) ([]headerArg, error) {
	var s struct {
		Properties map[string]struct {
			Type   any     `json:"type"`
			Header *string `json:"x-mcp-header"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(schema, &s); err != nil {
		return nil, err
	}
	var out []headerArg
	seen := map[string]bool{}
	for name, p := range s.Properties {
		if p.Header == nil {
			continue
		}
		h := *p.Header
		if !protocol.IsToken(h) {
			return nil, fmt.Errorf("x-mcp-header %q of %q is not an HTTP token", h, name)
		}
		typ, _ := p.Type.(string)
		switch typ {
		case "string", "integer", "boolean":
		default:
			return nil, fmt.Errorf("x-mcp-header on %q: only string, integer and boolean properties may be mirrored", name)
		}
		lh := strings.ToLower(h)
		if seen[lh] {
			return nil, fmt.Errorf("x-mcp-header %q is used twice", h)
		}
		seen[lh] = true
		out = append(out, headerArg{header: lh, prop: name, typ: typ})
	}
	return out, nil
}

// checkParamHeaders checks the Mcp-Param-* headers of a modern HTTP
// tools/call against the arguments: a mirrored argument that is present
// (and not null) needs its header with an equal value, and a header needs
// its argument. Any failure is -32020 (HTTP 400).
func checkParamHeaders(hs []headerArg, headers map[string]string, args json.RawMessage) *protocol.Error {
	if len(hs) == 0 {
		return nil
	}
	var m map[string]json.RawMessage
	_ = json.Unmarshal(args, &m)
	for _, h := range hs {
		raw, inBody := m[h.prop]
		if inBody && string(raw) == "null" {
			inBody = false
		}
		hv, inHeader := headers[h.header]
		switch {
		case !inBody && !inHeader:
			continue
		case inBody && !inHeader:
			return protocol.ErrHeaderMismatch("the Mcp-Param-%s header is required: argument %q is set", h.header, h.prop)
		case !inBody && inHeader:
			return protocol.ErrHeaderMismatch("the Mcp-Param-%s header is set but argument %q is not", h.header, h.prop)
		}
		v, err := protocol.DecodeHeaderValue(hv)
		if err != nil {
			return protocol.ErrHeaderMismatch("Mcp-Param-%s: %v", h.header, err)
		}
		if !sameValue(h.typ, raw, v) {
			return protocol.ErrHeaderMismatch("Mcp-Param-%s does not match argument %q", h.header, h.prop)
		}
	}
	return nil
}

// sameValue compares a JSON argument with a header value: strings as is,
// integers numerically, booleans as true/false.
func sameValue(typ string, raw json.RawMessage, hv string) bool {
	switch typ {
	case "string":
		var s string
		return json.Unmarshal(raw, &s) == nil && s == hv
	case "integer":
		// The header is the integer in plain decimal (no sign but "-", no
		// leading zeros, no exponent), within ±(2^53-1); the body may
		// spell it as any JSON number with that value.
		if !decimalInt.MatchString(hv) {
			return false
		}
		h, err := strconv.ParseInt(hv, 10, 64)
		if err != nil || h > maxSafeInt || h < -maxSafeInt {
			return false
		}
		a, ok := new(big.Rat).SetString(string(raw))
		return ok && a.IsInt() && a.Num().IsInt64() && a.Num().Int64() == h
	case "boolean":
		var x bool
		return json.Unmarshal(raw, &x) == nil && ((x && hv == "true") || (!x && hv == "false"))
	}
	return false
}

var decimalInt = regexp.MustCompile(`^-?(0|[1-9][0-9]*)$`)

const maxSafeInt = 1<<53 - 1
