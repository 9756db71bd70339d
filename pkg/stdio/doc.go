// Package stdio serves an [mcp.Server] over the stdio transport:
// newline-delimited JSON-RPC on a reader (the process's stdin) and a writer
// (its stdout), one client and one session for the life of the process,
// with no NATS and no shared store: the session record, the claims on the
// request ids in flight and the used requestStates live in a private
// [sessionstore.Memory], by the same rules as on HTTP.
//
// Both protocol eras are served. The client's opening picks the era, which
// is then locked for the process: initialize selects 2025-11-25 (a
// session: server-to-client requests, logging/setLevel, resource
// subscriptions, unsolicited notifications on stdout); server/discover or
// a request with 2026-07-28 _meta selects 2026-07-28 (stateless requests,
// subscriptions/listen streams multiplexed on stdout by subscription id,
// multi-round-trip input requests). ping is answered in any state.
//
// Requests run concurrently; the reader goes on reading while handlers
// run, so client responses to server-to-client requests and
// notifications/cancelled arrive. A cancelled request's response is not
// sent. Malformed lines are answered with -32700 or -32600 and serving
// goes on; a line over the size cap is answered with -32600 without being
// read whole into memory.
//
// The files follow the jobs: serve.go (Serve and the read loop),
// options.go, session.go (the opening, the era and the session record),
// requests.go (running, cancelling and claiming requests), listen.go
// (listen streams and notifications out), writer.go (stdout and the
// server-to-client requests), lines.go (the capped line reader).
package stdio
