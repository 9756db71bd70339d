// Package e2e holds end-to-end tests of mcpfleet's HTTP transport. Every
// test runs against three deployments: the all-in-one binary, an
// in-process all-in-one (whose memory store the test can inspect), and a
// cluster of separate processes (two frontends, a worker, a real
// nats-server and a real redis-server) with each session's requests
// alternating between the two frontends.
package e2e
