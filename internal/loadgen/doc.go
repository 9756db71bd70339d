// Package loadgen is mcpfleet's load generator: the library behind
// `mcpfleet bench` and `make bench`.
//
// Run drives tools/call requests at an MCP Streamable HTTP endpoint (one
// or several frontends, round-robin per request, or with Config.Alternate
// each session's request on the next frontend after its last) for a
// bounded time and reports throughput, latency percentiles, errors by kind
// and, given server PIDs, server CPU per request and RSS, in total and per
// kind of process (Config.PIDKinds); given a Redis URL, the Redis commands
// per request. Two wire shapes:
//
//   - legacy (2025-11-25): initialize + notifications/initialized per
//     session, then requests carrying Mcp-Session-Id and
//     MCP-Protocol-Version;
//   - modern (2026-07-28): no handshake; every request carries the
//     per-request _meta (protocolVersion, clientCapabilities, clientInfo)
//     and the MCP-Protocol-Version, Mcp-Method and Mcp-Name headers.
//
// Replies may be application/json or text/event-stream (read until the
// response with the request's id).
//
// The scale helpers measure what idle clients cost a server:
// MeasureIdleSessions (initialized legacy sessions with nothing left
// open), MeasureIdleListens (idle subscriptions/listen streams) and
// MeasureFanOut (one notifications/resources/updated delivered to many
// listen streams).
//
// Records (ReadRecords of -jsonl files) make the report: the table with
// ratios to a reference, the per-kind breakdown, the scale figures, the
// targets with PASS/FAIL (Targets) and the chart (WriteSVG).
//
// Everything is bounded: only loopback URLs are accepted, every HTTP
// exchange has a timeout and a run lasts at most MaxDuration.
package loadgen
