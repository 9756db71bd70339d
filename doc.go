// Package mcpfleet runs an MCP server written with [mcp] as a real
// process: the all-in-one server, HTTP frontends, workers and stdio, with
// the flags, environment twins, logging, drain, health and metrics of
// mcpfleet's own binaries.
//
// The whole main of a server is
//
//	func main() {
//		srv := mcp.NewServer(protocol.Implementation{Name: "hello", Version: "1.0.0"}, nil)
//		mcp.AddTool(srv, &protocol.Tool{Name: "greet"}, greet)
//		mcpfleet.Main(srv)
//	}
//
// and the program then runs as
//
//	hello serve      the all-in-one on 127.0.0.1:8080: frontend, worker, embedded NATS, in-memory store
//	hello worker     a worker of a cluster: runs the handlers for the frontends, over NATS
//	hello frontend   an HTTP frontend of a cluster (needs no handler code)
//	hello stdio      one client over stdin/stdout
//
// Below [Main], each role is a function stopped by a context:
// [RunServe], [RunFrontend], [RunWorker] and [RunStdio]. [NewHandler]
// gives the MCP endpoint as an http.Handler to mount on a program's own
// router (gin, http.ServeMux), with an in-process worker or in front of
// workers elsewhere.
//
// # The requestState key
//
// 2026-07-28 multi-round requests carry their state sealed with a key
// that every worker of a cluster must share (any worker may get the
// retry). A worker on an external NATS therefore refuses to start
// without one ([ErrNoStateKey]): set MCPFLEET_STATE_KEY (or --state-key)
// to the same base64 of 32 random bytes on every worker, or set
// mcp.ServerOptions.StateKey in code. The all-in-one on its embedded NATS
// and stdio, which are one process, make a random key when none is set.
package mcpfleet
