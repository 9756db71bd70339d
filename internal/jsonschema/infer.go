package jsonschema

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// SchemaURI is the dialect of every schema this package derives, and the
// dialect [Compile] assumes when a schema has no "$schema" keyword.
const SchemaURI = "https://json-schema.org/draft/2020-12/schema"

var (
	// ErrUnsupportedType is returned by [For] for types that encoding/json
	// cannot decode into: channels, functions, complex numbers,
	// unsafe.Pointer, and maps whose keys are not strings, integers or
	// encoding.TextUnmarshaler.
	ErrUnsupportedType = errors.New("jsonschema: unsupported type")

	// ErrNotObject is returned by [For] with [ForOptions.RequireObject] (and
	// by [ForObject]) when the root schema would not be a JSON object.
	ErrNotObject = errors.New("jsonschema: root schema is not an object")
)

// ForOptions configures [For]. A nil *ForOptions is the same as the zero
// value.
type ForOptions struct {
	// IncludeSchemaURI adds "$schema": [SchemaURI] to the root. Default:
	// omitted, because MCP tool schemas are embedded in other documents.
	IncludeSchemaURI bool

	// RequireObject makes For fail with [ErrNotObject] unless the root type
	// is a struct or a map (or a pointer to one), i.e. unless the schema
	// has "type": "object". Tool input schemas must be objects. Default:
	// any root type is accepted.
	RequireObject bool
}

// For derives a JSON Schema 2020-12 document from t, following the rules
// encoding/json uses to decode into t, so that any instance the schema
// accepts can be unmarshalled into a value of type t.
//
// The mapping is:
//
//   - bool → "boolean"; signed and unsigned integers → "integer"; floats and
//     json.Number → "number"; string → "string".
//   - Structs → "object" with "properties" in field order and "required" in
//     field order. Field names, "-", unexported fields, embedded (promoted)
//     fields and the ",string" option follow encoding/json exactly,
//     including its rules for name conflicts. A field is optional when it is
//     tagged omitempty or omitzero, has pointer type, or is promoted through
//     an embedded pointer; every other field is required. The
//     `jsonschema:"..."` tag becomes the property's "description". No
//     "additionalProperties": false is added: unknown arguments are
//     accepted, as encoding/json ignores them.
//   - Slices and arrays → "array" with "items"; []byte → "string" with
//     "contentEncoding": "base64".
//   - Maps with string, integer or encoding.TextUnmarshaler keys → "object"
//     with "additionalProperties" set to the value schema.
//   - Pointers → the schema of the element type (null is not accepted).
//   - Interfaces (including any), json.RawMessage and other
//     json.Unmarshaler implementations → {} (any value).
//     encoding.TextUnmarshaler implementations → "string".
//   - time.Time → "string" with "format": "date-time".
//
// Recursive types are supported: a named type that contains itself is
// described once under "$defs" and referenced with "$ref":
// "#/$defs/<TypeName>"; a reference back to the root type is "$ref": "#".
// Types that are not recursive are always inlined.
//
// The output is deterministic. For returns [ErrUnsupportedType] (wrapped with
// the location of the offending field) for types encoding/json cannot
// decode.
func For(t reflect.Type, opts *ForOptions) (json.RawMessage, error) {
	if opts == nil {
		opts = &ForOptions{}
	}
	if t == nil {
		return nil, fmt.Errorf("%w: nil reflect.Type", ErrUnsupportedType)
	}
	root := t
	for root.Kind() == reflect.Pointer {
		root = root.Elem()
	}
	g := &generator{root: root, recursive: map[reflect.Type]bool{}}
	var (
		n   *node
		err error
	)
	// Recursion is discovered while walking; each discovery restarts the
	// walk with one more type emitted as a definition. The set only grows
	// and is bounded by the number of named types reachable from t.
	for {
		g.reset()
		n, err = g.schemaFor(root, "", true)
		if err != nil {
			return nil, err
		}
		if !g.found {
			break
		}
	}
	if opts.RequireObject && n.typ != "object" {
		return nil, fmt.Errorf("%w: %s", ErrNotObject, t)
	}
	if opts.IncludeSchemaURI {
		n.schema = SchemaURI
	}
	if len(g.defOrder) > 0 {
		defs := make(properties, 0, len(g.defOrder))
		for _, dt := range g.defOrder {
			d := g.defs[dt]
			defs = append(defs, property{name: d.name, schema: d.schema})
		}
		n.defs = &defs
	}
	var b bytes.Buffer
	n.write(&b)
	return json.RawMessage(b.Bytes()), nil
}

// ForType is [For] of the type T with default options.
func ForType[T any]() (json.RawMessage, error) {
	return For(reflect.TypeFor[T](), nil)
}

// ForObject is [For] of the type T with [ForOptions.RequireObject] set: it
// fails with [ErrNotObject] unless T describes a JSON object, as a tool input
// must.
func ForObject[T any]() (json.RawMessage, error) {
	return For(reflect.TypeFor[T](), &ForOptions{RequireObject: true})
}

var (
	timeType            = reflect.TypeFor[time.Time]()
	rawMessageType      = reflect.TypeFor[json.RawMessage]()
	numberType          = reflect.TypeFor[json.Number]()
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// generator walks a type graph. It is used by a single call of For.
type generator struct {
	root reflect.Type
	// recursive holds the named types that contain themselves. They are
	// emitted under $defs (or as "#" for the root). Survives across passes.
	recursive map[reflect.Type]bool
	// found is set when a pass discovered a new recursive type.
	found bool

	// Per-pass state.
	expanding map[reflect.Type]bool // named types on the current path
	defs      map[reflect.Type]*definition
	defOrder  []reflect.Type
	defNames  map[string]bool
}

type definition struct {
	name   string
	schema *node
}

func (g *generator) reset() {
	g.found = false
	g.expanding = map[reflect.Type]bool{}
	g.defs = map[reflect.Type]*definition{}
	g.defOrder = nil
	g.defNames = map[string]bool{}
}

// schemaFor returns a fresh node for t; callers may modify it. path is the
// JSON pointer of the property being described, for error messages. top is
// true only for the root call.
func (g *generator) schemaFor(t reflect.Type, path string, top bool) (*node, error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t {
	case timeType:
		return &node{typ: "string", format: "date-time"}, nil
	case rawMessageType:
		return &node{}, nil
	case numberType:
		return &node{typ: "number"}, nil
	}
	if t.Name() != "" {
		if g.recursive[t] && !top {
			if t == g.root {
				return &node{ref: "#"}, nil
			}
			return g.definitionRef(t, path)
		}
		if g.expanding[t] {
			g.recursive[t] = true
			g.found = true
			return &node{}, nil
		}
		g.expanding[t] = true
		defer delete(g.expanding, t)
	}
	return g.expand(t, path)
}

// definitionRef returns a $ref to the definition of the recursive type t,
// building the definition on first use.
func (g *generator) definitionRef(t reflect.Type, path string) (*node, error) {
	d, ok := g.defs[t]
	if !ok {
		d = &definition{name: g.defName(t)}
		// Register before expanding so that self references find it.
		g.defs[t] = d
		g.defOrder = append(g.defOrder, t)
		g.expanding[t] = true
		s, err := g.expand(t, path)
		delete(g.expanding, t)
		if err != nil {
			return nil, err
		}
		d.schema = s
	}
	return &node{ref: "#/$defs/" + d.name}, nil
}

// defName returns a unique $defs key for t made of letters, digits, '_',
// '-' and '.', so it needs no escaping in a JSON pointer.
func (g *generator) defName(t reflect.Type) string {
	base := strings.Map(func(r rune) rune {
		if r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || r == '-' || r == '.') {
			return r
		}
		return '_'
	}, t.Name())
	name := base
	for i := 2; g.defNames[name]; i++ {
		name = base + strconv.Itoa(i)
	}
	g.defNames[name] = true
	return name
}

func (g *generator) expand(t reflect.Type, path string) (*node, error) {
	if t.Implements(jsonUnmarshalerType) || reflect.PointerTo(t).Implements(jsonUnmarshalerType) {
		return &node{}, nil
	}
	if t.Implements(textUnmarshalerType) || reflect.PointerTo(t).Implements(textUnmarshalerType) {
		return &node{typ: "string"}, nil
	}
	switch t.Kind() {
	case reflect.Bool:
		return &node{typ: "boolean"}, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return &node{typ: "integer"}, nil
	case reflect.Float32, reflect.Float64:
		return &node{typ: "number"}, nil
	case reflect.String:
		return &node{typ: "string"}, nil
	case reflect.Interface:
		return &node{}, nil
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 && !reflect.PointerTo(t.Elem()).Implements(jsonUnmarshalerType) &&
			!reflect.PointerTo(t.Elem()).Implements(textUnmarshalerType) {
			return &node{typ: "string", contentEncoding: "base64"}, nil
		}
		fallthrough
	case reflect.Array:
		items, err := g.schemaFor(t.Elem(), path+"/items", false)
		if err != nil {
			return nil, err
		}
		return &node{typ: "array", items: items}, nil
	case reflect.Map:
		if !validMapKey(t.Key()) {
			return nil, fmt.Errorf("%w: %s (map key type) at %q", ErrUnsupportedType, t, pathOrRoot(path))
		}
		values, err := g.schemaFor(t.Elem(), path+"/additionalProperties", false)
		if err != nil {
			return nil, err
		}
		return &node{typ: "object", additionalProperties: values}, nil
	case reflect.Struct:
		return g.structSchema(t, path)
	default:
		return nil, fmt.Errorf("%w: %s at %q", ErrUnsupportedType, t, pathOrRoot(path))
	}
}

func pathOrRoot(path string) string {
	if path == "" {
		return "/"
	}
	return path
}

func validMapKey(k reflect.Type) bool {
	switch k.Kind() {
	case reflect.String,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return true
	}
	return reflect.PointerTo(k).Implements(textUnmarshalerType)
}

func (g *generator) structSchema(t reflect.Type, path string) (*node, error) {
	props := properties{}
	var required []string
	for _, f := range jsonFields(t) {
		var (
			s   *node
			err error
		)
		fpath := path + "/properties/" + escapePointer(f.name)
		if f.quoted {
			s = &node{typ: "string"}
		} else if s, err = g.schemaFor(f.typ, fpath, false); err != nil {
			return nil, err
		}
		if f.description != "" {
			s.description = f.description
		}
		props = append(props, property{name: f.name, schema: s})
		if !f.optional {
			required = append(required, f.name)
		}
	}
	return &node{typ: "object", properties: &props, required: required}, nil
}

func escapePointer(s string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}
