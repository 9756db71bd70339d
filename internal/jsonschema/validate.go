package jsonschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"

	lib "github.com/santhosh-tekuri/jsonschema/v6"
)

var (
	// ErrExternalRef is returned by [Compile] when a schema refers to a
	// document outside itself ("$ref", "$dynamicRef" or "$schema" naming a
	// URL that is neither inside the schema nor a JSON Schema
	// meta-schema). Nothing is ever fetched.
	ErrExternalRef = errors.New("jsonschema: external reference not allowed")

	// ErrSchemaTooLarge is returned by [Compile] for schemas larger than
	// [MaxSchemaSize] bytes.
	ErrSchemaTooLarge = errors.New("jsonschema: schema too large")

	// ErrInvalidJSON is returned by [Validator.ValidateJSON] when the
	// instance is not a single well-formed JSON value.
	ErrInvalidJSON = errors.New("jsonschema: invalid JSON")
)

const (
	// MaxSchemaSize bounds the size in bytes of a schema given to
	// [Compile].
	MaxSchemaSize = 1 << 20

	// maxPatternLen bounds each "pattern" and "patternProperties" regular
	// expression. Go's regexp runs in linear time, so only compilation
	// needs a bound.
	maxPatternLen = 4096

	// rootURL names the schema document being compiled. Relative
	// references resolve against it (unless the schema sets "$id"), and
	// anything outside the document reaches refusingLoader.
	rootURL = "mem:///schema.json"
)

// Validator checks JSON values against a compiled schema. It is immutable
// and safe for concurrent use.
type Validator struct {
	schema *lib.Schema
	fast   *fastSchema // nil unless the schema has the simple shape (fast.go)
}

// Compile compiles a JSON Schema document. Without "$schema" the document is
// read as draft 2020-12; drafts 4, 6, 7 and 2019-09 are accepted when named.
//
// All keywords of the dialect are supported, including "$defs", "$ref",
// "$anchor", "$dynamicRef", "allOf", "anyOf", "oneOf", "not" and
// "if"/"then"/"else". References must resolve within the document (or to a
// meta-schema, which the library embeds); any other reference fails with
// [ErrExternalRef] without network or file access. "format" and
// "contentEncoding" are annotations only, as draft 2020-12 specifies by
// default.
//
// Resource bounds: the schema may be at most [MaxSchemaSize] bytes, and each
// regular expression at most 4096 bytes.
func Compile(schema json.RawMessage) (v *Validator, err error) {
	if len(schema) > MaxSchemaSize {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrSchemaTooLarge, len(schema), MaxSchemaSize)
	}
	if len(bytes.TrimSpace(schema)) == 0 {
		return nil, errors.New("jsonschema: compiling schema: empty document")
	}
	doc, err := lib.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return nil, fmt.Errorf("jsonschema: parsing schema: %w", err)
	}
	// The library is third-party code fed with caller-supplied documents;
	// a panic in it must not take down the server.
	defer func() {
		if r := recover(); r != nil {
			v, err = nil, fmt.Errorf("jsonschema: compiling schema: internal error: %v", r)
		}
	}()
	c := lib.NewCompiler()
	c.DefaultDraft(lib.Draft2020)
	c.UseLoader(refusingLoader{})
	c.UseRegexpEngine(compileRegexp)
	if err := c.AddResource(rootURL, doc); err != nil {
		return nil, fmt.Errorf("jsonschema: compiling schema: %w", err)
	}
	s, err := c.Compile(rootURL)
	if err != nil {
		if le, ok := errors.AsType[*lib.LoadURLError](err); ok && errors.Is(le.Err, ErrExternalRef) {
			return nil, le.Err
		}
		return nil, fmt.Errorf("jsonschema: compiling schema: %w", err)
	}
	return &Validator{schema: s, fast: compileFast(doc)}, nil
}

// refusingLoader is the only loader the compiler gets: schemas are
// self-contained, and fetching URLs named by a caller would be a
// server-side request forgery vector.
type refusingLoader struct{}

func (refusingLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("%w: %q", ErrExternalRef, url)
}

func compileRegexp(s string) (lib.Regexp, error) {
	if len(s) > maxPatternLen {
		return nil, fmt.Errorf("regular expression longer than %d bytes", maxPatternLen)
	}
	return regexp.Compile(s)
}

// Validate checks instance, a value decoded from JSON by encoding/json into
// an any (with or without [json.Decoder.UseNumber]): nil, bool, float64,
// json.Number, string, []any or map[string]any, nested. Go integers are
// accepted as numbers too; any other Go type is reported as a problem.
//
// It returns nil if instance satisfies the schema and a [*ValidationError]
// otherwise.
func (v *Validator) Validate(instance any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("jsonschema: validating: internal error: %v", r)
		}
	}()
	verr := v.schema.Validate(instance)
	if verr == nil {
		return nil
	}
	if ve, ok := errors.AsType[*lib.ValidationError](verr); ok {
		return newValidationError(ve)
	}
	return fmt.Errorf("jsonschema: validating: %w", verr)
}

// ValidateJSON decodes raw and validates it like [Validator.Validate]. Empty
// or all-whitespace raw (including nil) is taken as {}, the arguments of a
// call that sent none; an explicit null is validated as null. Numbers are
// decoded without loss of precision. raw that is not exactly one JSON value
// fails with [ErrInvalidJSON].
//
// For schemas of a simple shape (types, properties, required,
// additionalProperties, items and annotations: see fast.go) a valid object
// is recognised from its bytes without being decoded; every other instance
// gets the same verdict and message as without that shortcut.
func (v *Validator) ValidateJSON(raw json.RawMessage) error {
	if v.fast != nil {
		b := []byte(raw)
		if isBlank(b) {
			b = emptyObject
		}
		if v.fast.validJSON(b) {
			return nil
		}
	}
	return v.validateJSON(raw)
}

var emptyObject = []byte("{}")

func isBlank(b []byte) bool {
	return skipSpace(b, 0) == len(b)
}

// validateJSON is ValidateJSON without the fast path.
func (v *Validator) validateJSON(raw json.RawMessage) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		return v.Validate(map[string]any{})
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var x any
	if err := dec.Decode(&x); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidJSON, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("%w: unexpected data after the top-level value", ErrInvalidJSON)
	}
	return v.Validate(x)
}
