package bus

// Worker announcements: how frontends learn what the cluster serves.
//
// Every worker publishes an Announcement on Subjects.Announce() every
// interval (and at once when what it serves changes, when it leaves, and
// when a frontend asks on Subjects.AnnounceQuery()). The announcement names
// the worker's pool: the hash of the catalog it serves (workers serving
// the same thing form one pool). A frontend fetches each pool's catalog
// once, by request on Subjects.Catalog(pool), and answers initialize,
// server/discover and the lists from the union of live pools.

// Announcement is a worker's heartbeat.
type Announcement struct {
	// Worker is the worker's bus id; Pool the hash of its catalog.
	Worker string `json:"w"`
	Pool   string `json:"p"`
	// IntervalMs is the heartbeat interval: a worker not heard of for
	// three intervals is gone.
	IntervalMs int64 `json:"i"`
	// Leaving says the worker is shutting down: forget it now.
	Leaving bool `json:"l,omitempty"`
	// Changed lists kinds ("tools", "prompts", "resources") whose lists
	// changed although the catalog did not (a handler raised list_changed).
	Changed []string `json:"c,omitempty"`
}

// Announce is the subject of worker heartbeats.
func (s Subjects) Announce() string { return s.p() + ".ann" }

// AnnounceQuery asks every worker to announce itself at once.
func (s Subjects) AnnounceQuery() string { return s.p() + ".annq" }

// Catalog is where a pool's workers answer requests for its catalog (queue
// group CatalogQueue).
func (s Subjects) Catalog(pool string) string { return s.p() + ".cat." + Token(pool) }

// CatalogQueue is the queue group of catalog requests.
const CatalogQueue = "cat"

// PoolRequest is where requests routed to a pool go (resources/read,
// completion/complete, resource subscriptions): the frontend resolves the
// URI or reference to the pool that serves it.
func (s Subjects) PoolRequest(pool, method string) string {
	return s.p() + ".preq." + Token(pool) + "." + Token(method)
}

// PoolRequests matches every PoolRequest subject of pool.
func (s Subjects) PoolRequests(pool string) string { return s.p() + ".preq." + Token(pool) + ".*" }

// UnnamedRequests matches every request subject without a name: methods
// any worker can serve.
func (s Subjects) UnnamedRequests() string { return s.p() + ".req.*" }
