package sessionstore

import "testing"

// RunStoreSuite runs the store suite (runStoreSuite, on the real clock)
// for the external tests of package sessionstore_test, which can start
// what imports this package: the Redis Cluster and Sentinel set-ups of
// internal/testenv.
func RunStoreSuite(t *testing.T, newStore func(t *testing.T, opts Options) Store) {
	runStoreSuite(t, newStore, realClock)
}
