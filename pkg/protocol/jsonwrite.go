package protocol

import (
	"encoding/json"
	"unicode/utf8"
)

// The hot results (a tools/call's text content) are written by hand: a
// MarshalJSON that calls json.Marshal costs a reflection walk, a buffer
// and a validation pass per level, and a text block is two levels below
// the result. The writers below produce exactly what encoding/json
// produces for the same values (FuzzAppendJSONString, TestFastResults).

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as encoding/json encodes a string: HTML
// characters (<, >, &) and U+2028/U+2029 escaped as \u00XX/\u20XX,
// invalid UTF-8 as \ufffd, control characters as \b, \f, \n, \r, \t or
// \u00XX.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '"', '\\':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// appendJSON appends v as json.Marshal encodes it.
func appendJSON(dst []byte, v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return dst, err
	}
	return append(dst, b...), nil
}

// appendText appends a text block with no annotations and no _meta, as
// its MarshalJSON writes it.
func appendText(dst []byte, c *TextContent) []byte {
	dst = append(dst, `{"type":"text","text":`...)
	return append(appendJSONString(dst, c.Text), '}')
}

// appendContent appends one content block of a content list.
func appendContent(dst []byte, c Content) ([]byte, error) {
	if t, ok := c.(*TextContent); ok && t != nil && t.Annotations == nil && len(t.Meta) == 0 {
		return appendText(dst, t), nil
	}
	return appendJSON(dst, c)
}

// appendMeta appends m as json.Marshal encodes it. A _meta holding only
// the server's description, as every 2026-07-28 result does, is written
// without a reflection walk.
func appendMeta(dst []byte, m Meta) ([]byte, error) {
	if len(m) == 1 {
		if info, ok := m[MetaServerInfo].(*Implementation); ok && info != nil && len(info.Icons) == 0 {
			dst = append(dst, `{"`+MetaServerInfo+`":`...)
			return append(appendImplementation(dst, info), '}'), nil
		}
	}
	return appendJSON(dst, m)
}

// appendImplementation appends info, which has no icons, as json.Marshal
// encodes it.
func appendImplementation(dst []byte, info *Implementation) []byte {
	dst = append(dst, `{"name":`...)
	dst = appendJSONString(dst, info.Name)
	dst = append(dst, `,"version":`...)
	dst = appendJSONString(dst, info.Version)
	for _, f := range [...]struct{ key, v string }{
		{`,"title":`, info.Title}, {`,"description":`, info.Description}, {`,"websiteUrl":`, info.WebsiteURL},
	} {
		if f.v != "" {
			dst = appendJSONString(append(dst, f.key...), f.v)
		}
	}
	return append(dst, '}')
}

// appendCallToolResult appends r as the fields of CallToolResult encode
// (ResultBase's first), with content [] when nil.
func appendCallToolResult(dst []byte, r *CallToolResult) ([]byte, error) {
	var err error
	dst = append(dst, '{')
	if len(r.Meta) > 0 {
		dst = append(dst, `"_meta":`...)
		if dst, err = appendMeta(dst, r.Meta); err != nil {
			return nil, err
		}
		dst = append(dst, ',')
	}
	if r.ResultType != "" {
		dst = append(dst, `"resultType":`...)
		dst = append(appendJSONString(dst, r.ResultType), ',')
	}
	dst = append(dst, `"content":[`...)
	for i, c := range r.Content {
		if i > 0 {
			dst = append(dst, ',')
		}
		if dst, err = appendContent(dst, c); err != nil {
			return nil, err
		}
	}
	dst = append(dst, ']')
	if r.StructuredContent != nil {
		dst = append(dst, `,"structuredContent":`...)
		if dst, err = appendJSON(dst, r.StructuredContent); err != nil {
			return nil, err
		}
	}
	if r.IsError {
		dst = append(dst, `,"isError":true`...)
	}
	return append(dst, '}'), nil
}

// AppendResultResponse appends the response to request id with result
// res, as AppendResponse(b, id, json.Marshal(res)) would, but writes a
// tools/call result directly into b (its hand-written encoding is valid
// JSON by construction: what it does not write itself comes from
// json.Marshal). On error b is returned as it was given.
func AppendResultResponse(b []byte, id ID, res Result) ([]byte, error) {
	r, ok := res.(*CallToolResult)
	if !ok || r == nil {
		raw, err := json.Marshal(res)
		if err != nil {
			return b, err
		}
		return AppendResponse(b, id, raw), nil
	}
	n := len(b)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = id.AppendJSON(b)
	b = append(b, `,"result":`...)
	out, err := appendCallToolResult(b, r)
	if err != nil {
		return b[:n], err
	}
	return append(out, '}'), nil
}
