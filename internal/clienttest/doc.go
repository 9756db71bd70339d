// Package clienttest drives mcpfleet with the MCP clients people actually
// run, in every era each client supports, against the all-in-one binary and
// against make cluster's topology (nginx round robin in front of two
// frontends, two workers, nats-server, redis-server), and, over stdio, the
// TypeScript SDK client spawning `mcpfleet stdio`:
//
//   - TypeScript SDK v1 (@modelcontextprotocol/sdk): 2025-11-25 only;
//   - TypeScript SDK v2 (@modelcontextprotocol/client): versionNegotiation
//     legacy, pinned 2026-07-28 ("modern") and auto;
//   - the Go SDK client (github.com/modelcontextprotocol/go-sdk v1.8.0):
//     ProtocolVersion 2025-11-25 ("legacy") and its default, which probes
//     server/discover and uses 2026-07-28 ("modern");
//   - the MCP Inspector v2 CLI with --protocol-era legacy, auto and modern.
//
// The TypeScript scenarios live in tools/clients/*.mjs and print one JSON
// line per scenario; the tests run them with the Node 22 and the packages
// that `make deps` installs into .cache/ from the committed lockfiles, and
// turn each line into a subtest. The Go SDK scenarios are written here, in
// Go. A missing Node or package fails the tests with the fix (`make deps`);
// nothing is skipped.
//
// Client runs that watch server-wide notifications (tools list_changed,
// resource updates) or count server-side cancellations share one server per
// deployment and therefore run one after another; the Inspector runs, which
// only read, run in parallel with them, and the two deployments run in
// parallel with each other.
package clienttest
