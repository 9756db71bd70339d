package sessionstore

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"

	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// members are a session's ClientInfo and ClientCapabilities decoded once
// from the JSON a store keeps (see encodeJSONMembers), and never modified
// after: every session handed out gets its own deep copy (copyTo), which
// is what decoding the JSON again would give, for a fraction of the cost.
type members struct {
	info protocol.Implementation
	caps protocol.ClientCapabilities
}

// decodeMembers decodes the JSON members info and caps (decodeJSONMembers'
// errors).
func decodeMembers(info, caps []byte) (*members, error) {
	var s Session
	if err := decodeJSONMembers(&s, info, caps); err != nil {
		return nil, err
	}
	return &members{info: s.ClientInfo, caps: s.ClientCapabilities}, nil
}

// copyTo sets s.ClientInfo and s.ClientCapabilities to deep copies of m:
// nothing s holds is shared with m but the zero-size values (*struct{})
// that mark a capability declared, which nothing can modify. A nil map,
// slice or raw value stays nil, an empty one empty, as decoding gives.
func (m *members) copyTo(s *Session) {
	s.ClientInfo = m.info
	if m.info.Icons != nil {
		s.ClientInfo.Icons = make([]protocol.Icon, len(m.info.Icons))
		for i, ic := range m.info.Icons {
			ic.Sizes = slices.Clone(ic.Sizes)
			s.ClientInfo.Icons[i] = ic
		}
	}
	c := m.caps
	c.Experimental = cloneRawMap(c.Experimental)
	if c.Roots != nil {
		v := *c.Roots
		c.Roots = &v
	}
	if c.Sampling != nil {
		v := *c.Sampling
		c.Sampling = &v
	}
	if c.Elicitation != nil {
		v := *c.Elicitation
		c.Elicitation = &v
	}
	c.Tasks = cloneRaw(c.Tasks)
	c.Extensions = cloneRawMap(c.Extensions)
	s.ClientCapabilities = c
}

// cloneRaw copies r (nil stays nil, empty stays empty).
func cloneRaw(r json.RawMessage) json.RawMessage {
	return bytes.Clone(r)
}

// cloneRawMap copies m and its values (nil stays nil).
func cloneRawMap(m map[string]json.RawMessage) map[string]json.RawMessage {
	if m == nil {
		return nil
	}
	out := maps.Clone(m)
	for k, v := range out {
		out[k] = cloneRaw(v)
	}
	return out
}
