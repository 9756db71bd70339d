// Package trusttest checks the bus as a trust boundary against a real
// nats-server running the shipped deploy/nats-auth.conf: real frontend
// and worker binaries serve requests with their role's credentials, a
// worker-role or anonymous connection cannot get a request executed, and
// no subject hands out the requestState key. Its tests are the only
// content; see docs/security.md.
package trusttest
