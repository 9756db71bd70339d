// Package bus carries MCP traffic between frontends and workers over NATS.
//
// Every package reaches the bus through [Conn]: [NATS] wraps a nats.go
// connection (an external server or cluster, or the [Embedded] one), and
// [Local] is a bus with no server, for one process no other can join (the
// all-in-one without --nats-listen). Both keep the contract Conn states
// and pass one test suite.
//
// Every subject is built by [Subjects]; nothing else concatenates subject
// strings. The wire formats are:
//
//   - a request envelope ([RequestHeader] in a binary header + the client's
//     raw JSON-RPC message or its params, see [EncodeRequest]; workers also
//     read the JSON header of earlier versions, which frontends write while
//     a worker that reads only it is alive: [EncodeRequestAs]) published by
//     a frontend to
//     Subjects.Request(method, name) in the queue group [WorkerQueue], with
//     the NATS reply subject set to the frontend stream that waits for it;
//   - stream frames ([Frame]: one kind byte + a JSON-RPC message) published
//     by the worker to that reply subject: notifications, server-to-client
//     requests, heartbeats and finally the response; those of a legacy
//     request (but heartbeats) as NATS requests, acked, each with its
//     sequence number ([SeqHeader]), and, when the stream's frontend does
//     not ack one, in an append envelope ([EncodeAppend]) to
//     Subjects.Append, which every frontend serves (append.go).
//
// NATS preserves the order of messages from one publisher to one
// subscriber, so the frames of one request arrive in the order the worker
// sent them. When no worker listens on a request subject, NATS answers the
// reply subject at once with a "no responders" status, which [ParseFrame]
// reports as [FrameNoResponders].
package bus
