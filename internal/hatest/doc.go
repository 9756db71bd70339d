//go:build ha

// Package hatest runs mcpfleet across hosts and partitions them: every
// process of a cluster on a host of its own (a network namespace of
// internal/netns), a host cut off the network or its links made lossy
// and slow while clients keep calling, then healed. Its files carry the
// build tag ha, so `go test ./...` (and `make test`, CI) leaves it out:
// `make test-ha` runs it (root, ip and iptables needed), before a release
// or by hand.
//
// The topology: nats1, nats2, nats3 (a nats-server cluster with routes,
// no_advertise: every client is given the three addresses), redis (one
// redis-server, append-only), fe1 and fe2 (frontends), w1 and w2
// (workers), each on its own host of one bridge. The clients are the test
// process itself, in the root namespace, which has an address on the
// bridge: its traffic to the frontends crosses the bridge like any host's,
// and cutting a frontend's host cuts its clients off it too.
package hatest
