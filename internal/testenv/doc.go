// Package testenv starts real mcpfleet deployments for tests: an embedded
// or external nats-server, a real redis-server (through
// internal/testutil), the mcpfleet binaries built from this checkout, and
// an in-process all-in-one. It also validates server messages against the
// official MCP JSON schemas in ../shared/spec.
//
// Missing dependencies (nats-server, redis-server, the shared spec) fail
// the test loudly with the command that fixes them; nothing is skipped.
package testenv
