// Package protocol holds the wire format of MCP: JSON-RPC 2.0 envelopes, the
// message types of both protocol eras (legacy 2025-11-25 and earlier, modern
// 2026-07-28), error codes, reserved _meta keys and version negotiation.
//
// It does no I/O. Every function is safe for concurrent use; values are not
// unless stated otherwise.
//
// A body is decoded once with [Decode], which returns a [Message] whose params,
// result and error stay raw (json.RawMessage) so they can be forwarded over the
// bus without being re-marshalled; the receiver decodes params into the typed
// structs of this package when it needs them.
package protocol
