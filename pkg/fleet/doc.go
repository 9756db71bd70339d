// Package fleet is worker-pool membership and routing: how frontends learn
// which workers are alive and what each serves, and where each request goes.
//
// Workers run an [Announcer]; frontends run a [View].
//
// Every worker publishes an [Announcement] on bus.Subjects.Announce() every
// interval (and at once when what it serves changes, when it leaves, and
// when a frontend asks on bus.Subjects.AnnounceQuery()). The announcement
// names the worker's pool: the hash of the catalog it serves (workers
// serving the same thing form one pool). A frontend fetches each pool's
// catalog once, by request on bus.Subjects.Catalog(pool) (queue group
// bus.CatalogQueue), and answers initialize, server/discover and the lists
// from the union of live pools ([View.AnswerFromCatalog]); it routes each
// request only to workers that serve it ([View.RouteFor]).
package fleet

import (
	"errors"
	"time"
)

// ErrInvalidOptions is wrapped by every validation error of [NewView] and
// [NewAnnouncer].
var ErrInvalidOptions = errors.New("fleet: invalid options")

// Announcement is a worker's heartbeat, JSON-encoded on
// bus.Subjects.Announce().
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
	// RequestFormat is the newest request header format the worker reads
	// (bus.RequestFormat); workers of earlier versions send none (0: the
	// JSON header only). Frontends write the newest format every live
	// worker reads ([View.RequestFormat]).
	RequestFormat int `json:"rf,omitempty"`
}

// missedBeats is how many announcement intervals a worker may stay silent
// before a View forgets it.
const missedBeats = 3

// defaultInterval is the announcement interval of an Announcer by default,
// and the one a View assumes for an announcement that states none.
const defaultInterval = time.Second
