// Package jsonschema derives JSON Schema (draft 2020-12) documents from Go
// types and validates decoded JSON values against schemas.
//
// It has two halves that meet at tool registration in the MCP server:
//
//   - [For], [ForType] and [ForObject] describe the input of a typed tool
//     handler. The output follows the rules of encoding/json, so a value that
//     satisfies the schema decodes into the Go type. Derivation is
//     deterministic: the same type always yields the same bytes.
//   - [Compile] turns a schema (derived or written by hand) into a
//     [Validator], and [Validator.Validate] / [Validator.ValidateJSON] check
//     the arguments of a call before the handler runs. Failures are reported
//     as a [*ValidationError] whose message is short, sorted and written for a
//     language model to correct its call, for example
//     `missing required property "text"` or `/ms: got string, want integer`.
//
// Validation is done by github.com/santhosh-tekuri/jsonschema/v6. Compile
// never reads the network or the file system: every reference must resolve
// inside the schema document itself (or to one of the JSON Schema
// meta-schemas, which are embedded in the library); anything else fails with
// [ErrExternalRef].
//
// Concurrency: all functions are safe to call from multiple goroutines, and a
// compiled [Validator] is immutable and safe for concurrent use.
package jsonschema
