package jsonschema

import (
	"unicode/utf8"

	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// The fast path: for schemas of a simple shape, [Validator.ValidateJSON]
// decides from the instance's bytes that it is valid, without decoding it
// into an any and walking the compiled schema. It only ever says "valid":
// an instance it finds invalid, or holds something it does not handle, goes
// to the library, whose verdict and message are the answer.
//
// A schema has the simple shape (compileFast) when every schema in it,
// from the root down through "properties", "additionalProperties" and
// "items", is a boolean true or an object whose keywords are only:
//
//   - "type": one of the seven type names, or a list of them;
//   - "properties": an object of schemas of the simple shape;
//   - "required": a list of at most 64 names;
//   - "additionalProperties": true, false or a schema of the simple shape;
//   - "items": true or a schema of the simple shape;
//   - annotations, which draft 2020-12 never asserts: "title",
//     "description", "default", "examples", "deprecated", "readOnly",
//     "writeOnly", "$comment", "format", "contentEncoding" and
//     "contentMediaType";
//   - at the root only, "$schema" naming draft 2020-12 ([SchemaURI]).
//
// That covers what [For] derives from structs of plain fields, slices and
// maps of them (not recursive types, which use "$ref"). Anything else
// ("$ref", "enum", "minimum", a false schema, an unknown keyword...) leaves
// the validator without a fast path.

// fastSchema is a schema of the simple shape, compiled for the fast path.
// The zero value accepts any value.
type fastSchema struct {
	types uint8 // typeBits; 0 when "type" is absent (any type)

	// Object rules, which apply only to object instances.
	objectRules  bool       // props, required, noAdditional or additional set
	props        []fastProp // "properties" and "required" names
	byName       map[string]int
	required     uint64 // the bits of all required names
	noAdditional bool   // "additionalProperties": false
	additional   *fastSchema

	items *fastSchema // array rule; nil when "items" is absent or true
}

// fastProp is a name that "properties" or "required" mention: schema is
// nil when only "required" names it (or its schema is true), bit is 0 when
// it is not required.
type fastProp struct {
	name   string
	schema *fastSchema
	bit    uint64
	// declared is whether name is one of "properties" (else it is only
	// "required", and its value is checked as any other member's).
	declared bool
}

const (
	typeNull uint8 = 1 << iota
	typeBoolean
	typeNumber
	typeInteger
	typeString
	typeArray
	typeObject
)

// byNameMin is the number of names from which a lookup goes through a map
// rather than a scan of the names.
const byNameMin = 9

var typeBits = map[string]uint8{
	"null": typeNull, "boolean": typeBoolean, "number": typeNumber, "integer": typeInteger,
	"string": typeString, "array": typeArray, "object": typeObject,
}

var annotations = map[string]bool{
	"title": true, "description": true, "default": true, "examples": true, "deprecated": true,
	"readOnly": true, "writeOnly": true, "$comment": true, "format": true,
	"contentEncoding": true, "contentMediaType": true,
}

// compileFast returns the fast path for doc, the schema as the library
// decoded it (so with its view of duplicate keys and invalid UTF-8), or
// nil when doc does not have the simple shape. doc must have compiled as
// a draft 2020-12 schema: compileFast does not check what the library's
// compilation checked (that "required" holds strings, for instance)
// beyond what it needs not to panic.
func compileFast(doc any) *fastSchema {
	fs, ok := fastSchemaOf(doc, true)
	if !ok {
		return nil
	}
	return fs
}

func fastSchemaOf(doc any, root bool) (*fastSchema, bool) {
	switch doc := doc.(type) {
	case bool:
		return &fastSchema{}, doc
	case map[string]any:
		fs := &fastSchema{}
		var (
			props    map[string]any
			required []any
		)
		for k, v := range doc {
			ok := true
			switch k {
			case "$schema":
				ok = root && v == SchemaURI
			case "type":
				fs.types, ok = fastTypes(v)
			case "properties":
				props, ok = v.(map[string]any)
			case "required":
				required, ok = v.([]any)
			case "additionalProperties":
				if b, isBool := v.(bool); isBool && !b {
					fs.noAdditional = true
				} else {
					fs.additional, ok = fastSchemaOf(v, false)
				}
			case "items":
				fs.items, ok = fastSchemaOf(v, false)
			default:
				ok = annotations[k]
			}
			if !ok {
				return nil, false
			}
		}
		if len(required) > 64 {
			return nil, false
		}
		index := map[string]int{}
		for name, v := range props {
			s, ok := fastSchemaOf(v, false)
			if !ok {
				return nil, false
			}
			index[name] = len(fs.props)
			fs.props = append(fs.props, fastProp{name: name, schema: s.orNil(), declared: true})
		}
		for i, r := range required {
			name, ok := r.(string)
			if !ok {
				return nil, false
			}
			j, seen := index[name]
			if !seen {
				j = len(fs.props)
				index[name] = j
				fs.props = append(fs.props, fastProp{name: name})
			}
			fs.props[j].bit |= 1 << i
			fs.required |= 1 << i
		}
		if len(fs.props) >= byNameMin {
			fs.byName = index
		}
		fs.additional = fs.additional.orNil()
		fs.items = fs.items.orNil()
		fs.objectRules = len(fs.props) > 0 || fs.noAdditional || fs.additional != nil
		return fs, true
	}
	return nil, false
}

func fastTypes(v any) (uint8, bool) {
	switch v := v.(type) {
	case string:
		bit, ok := typeBits[v]
		return bit, ok
	case []any:
		var bits uint8
		for _, t := range v {
			name, ok := t.(string)
			if !ok || typeBits[name] == 0 {
				return 0, false
			}
			bits |= typeBits[name]
		}
		return bits, bits != 0
	}
	return 0, false
}

// orNil returns nil for a schema that accepts any value, so that the
// validation skips it.
func (fs *fastSchema) orNil() *fastSchema {
	if fs == nil || (fs.types == 0 && !fs.objectRules && fs.items == nil) {
		return nil
	}
	return fs
}

// validJSON reports whether raw, one JSON object, is valid against fs.
// false means "don't know": raw may be invalid JSON, invalid against the
// schema, or hold something the fast path does not handle.
func (fs *fastSchema) validJSON(raw []byte) bool {
	if fs.types != 0 && fs.types&typeObject == 0 {
		return false
	}
	if !fs.objectRules {
		return protocol.ScanObject(raw, nil)
	}
	return fs.validObject(raw)
}

// valid reports whether v, the bytes of one well-formed JSON value, is
// valid against fs (nil accepts anything).
func (fs *fastSchema) valid(v []byte) bool {
	if fs == nil {
		return true
	}
	var t uint8
	switch v[0] {
	case '{':
		t = typeObject
	case '[':
		t = typeArray
	case '"':
		t = typeString
	case 't', 'f':
		t = typeBoolean
	case 'n':
		t = typeNull
	default:
		t = typeNumber
		if fs.types&typeNumber == 0 && fs.types&typeInteger != 0 {
			// An integer written with a fraction or an exponent (1.0,
			// 1e2) is one too, for the library: it decides.
			if !plainInteger(v) {
				return false
			}
			t = typeInteger
		}
	}
	if fs.types != 0 && fs.types&t == 0 {
		return false
	}
	switch {
	case t == typeObject && fs.objectRules:
		return fs.validObject(v)
	case t == typeArray && fs.items != nil:
		return fs.items.validElements(v)
	}
	return true
}

// validObject reports whether obj is one valid JSON object whose members
// satisfy fs's object rules. A key holding an escape or invalid UTF-8
// (which decoding would change) is not handled when the rules name
// properties or forbid other ones. A name given twice is fine: decoding
// keeps the last value, and every value must be valid here.
func (fs *fastSchema) validObject(obj []byte) bool {
	ok := true
	var seen uint64
	keys := len(fs.props) > 0 || fs.noAdditional
	wellFormed := protocol.ScanObject(obj, func(key []byte, escaped bool, value []byte) {
		if !ok {
			return
		}
		if keys {
			if escaped || !utf8.Valid(key) {
				ok = false
				return
			}
			if i := fs.lookup(key); i >= 0 {
				p := &fs.props[i]
				seen |= p.bit
				if p.declared {
					ok = p.schema.valid(value)
					return
				}
			}
			if fs.noAdditional {
				ok = false
				return
			}
		}
		ok = fs.additional.valid(value)
	})
	return wellFormed && ok && seen == fs.required
}

func (fs *fastSchema) lookup(key []byte) int {
	if fs.byName != nil {
		if i, ok := fs.byName[string(key)]; ok {
			return i
		}
		return -1
	}
	for i := range fs.props {
		if fs.props[i].name == string(key) {
			return i
		}
	}
	return -1
}

// validElements reports whether every element of arr, one well-formed
// JSON array, is valid against fs.
func (fs *fastSchema) validElements(arr []byte) bool {
	i := skipSpace(arr, 1)
	if arr[i] == ']' {
		return true
	}
	for {
		end := skipValue(arr, i)
		if !fs.valid(arr[i:end]) {
			return false
		}
		i = skipSpace(arr, end)
		if arr[i] == ']' {
			return true
		}
		i = skipSpace(arr, i+1) // ','
	}
}

// plainInteger reports whether the number v is written as digits, with an
// optional minus sign.
func plainInteger(v []byte) bool {
	if v[0] == '-' {
		v = v[1:]
	}
	for _, c := range v {
		if c < '0' || c > '9' {
			return false
		}
	}
	return len(v) > 0
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the end of the well-formed JSON value that starts at
// b[i].
func skipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = skipString(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return i
	}
	for i < len(b) {
		switch b[i] {
		case ',', ']', '}', ' ', '\t', '\n', '\r':
			return i
		}
		i++
	}
	return i
}

// skipString returns the end of the well-formed JSON string that starts at
// b[i], past its closing quote.
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return i
}
