// Package testenv starts real mcpfleet deployments for tests: an embedded
// or external nats-server, or a cluster of them (StartNATSCluster), a
// real redis-server (through internal/testutil), a Redis Cluster
// (StartRedisCluster) or a master behind Sentinel (StartRedisSentinel)
// whose masters a test can kill, the mcpfleet binaries built from this
// checkout, and an in-process all-in-one. It also validates server messages against the
// official MCP JSON schemas committed in testdata/spec (see
// testdata/spec/SOURCE.txt).
//
// The binaries are built in the flavour of the test binary: race-enabled
// when it is (RaceEnabled, BuildFlags), with hang guards stretched to
// match (HangGuard). Every process a test starts is checked when the test
// ends: exit status 0 (or the one declared), and no panic, fatal error or
// data race in its output (see Proc).
//
// Missing dependencies (nats-server, redis-server, a schema file) fail
// the test loudly with the command that fixes them; nothing is skipped.
package testenv
