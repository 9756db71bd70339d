package jsonschema

import (
	"bytes"
	"encoding/json"
)

// node is a derived schema. Fields are written in declaration order.
type node struct {
	schema               string
	ref                  string
	typ                  string
	description          string
	format               string
	contentEncoding      string
	items                *node
	properties           *properties // non-nil (possibly empty) for structs
	required             []string
	additionalProperties *node
	defs                 *properties
}

type property struct {
	name   string
	schema *node
}

type properties []property

func (n *node) write(b *bytes.Buffer) {
	b.WriteByte('{')
	first := true
	key := func(k string) {
		if !first {
			b.WriteByte(',')
		}
		first = false
		writeString(b, k)
		b.WriteByte(':')
	}
	str := func(k, v string) {
		if v != "" {
			key(k)
			writeString(b, v)
		}
	}
	str("$schema", n.schema)
	str("$ref", n.ref)
	str("type", n.typ)
	str("description", n.description)
	str("format", n.format)
	str("contentEncoding", n.contentEncoding)
	if n.items != nil {
		key("items")
		n.items.write(b)
	}
	if n.properties != nil {
		key("properties")
		n.properties.write(b)
	}
	if len(n.required) > 0 {
		key("required")
		b.WriteByte('[')
		for i, r := range n.required {
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, r)
		}
		b.WriteByte(']')
	}
	if n.additionalProperties != nil {
		key("additionalProperties")
		n.additionalProperties.write(b)
	}
	if n.defs != nil {
		key("$defs")
		n.defs.write(b)
	}
	b.WriteByte('}')
}

func (ps properties) write(b *bytes.Buffer) {
	b.WriteByte('{')
	for i, p := range ps {
		if i > 0 {
			b.WriteByte(',')
		}
		writeString(b, p.name)
		b.WriteByte(':')
		p.schema.write(b)
	}
	b.WriteByte('}')
}

// writeString writes s as a JSON string without HTML escaping, so that
// descriptions stay readable.
func writeString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	// Encoding a string cannot fail. Encode appends a newline; drop it.
	_ = enc.Encode(s)
	b.Truncate(b.Len() - 1)
}
