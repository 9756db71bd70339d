// Package sessionstore keeps what must outlive one frontend process for
// legacy (2025-11-25) sessions: the session record (with its initialized
// flag), the session's resource subscriptions, the bounded per-stream
// event logs used for SSE resumption, and the registry of the session's
// in-flight request ids (a request id must not be reused while a request
// with that id is still running, whichever frontend or worker serves it).
//
// Two implementations exist: [Memory] (the all-in-one default; one process)
// and [Redis] (shared by every frontend of a cluster). Both pass the same test
// suite and honour the same contract, stated on [Store].
//
// [Store] is composed of small interfaces, one per job: [Sessions] (the
// records and their subscriptions), [Claims] (in-flight request ids),
// [EventLog] (SSE resumption), [OnceSet] (single-use MRTR states) and
// [Records] (versioned documents such as tasks). A consumer depends on the
// one it needs. Each store implements them in a file per interface
// (memory_sessions.go, redis_claims.go, ...); the Redis store's Lua
// scripts are in lua/, one file per script, embedded.
package sessionstore

import (
	"context"
	"errors"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// Errors callers branch on.
var (
	// ErrNotFound means the session does not exist or has expired.
	ErrNotFound = errors.New("sessionstore: session not found")
	// ErrExists means Create was given an id that is already in use.
	ErrExists = errors.New("sessionstore: session already exists")
	// ErrFull means Create found the store at its capacity (a Memory
	// store's MaxSessions or MaxSessionBytes).
	ErrFull = errors.New("sessionstore: the store holds the most sessions it may")
	// ErrUsed means UseOnce was already called with the key.
	ErrUsed = errors.New("sessionstore: already used")
	// ErrEventsPurged means the events after the given index are no longer
	// all in the log (the log was trimmed or expired): the caller must not
	// replay a partial history.
	ErrEventsPurged = errors.New("sessionstore: events purged")
	// ErrInFlight means Begin found the request id already claimed by a
	// request of the same session that has not ended (and whose claim has
	// not expired).
	ErrInFlight = errors.New("sessionstore: request id already in flight")
	// ErrConflict means SetRecord lost a race: the record changed since
	// the version the caller read.
	ErrConflict = errors.New("sessionstore: record changed")
	// ErrInvalidConfig means a constructor was given options it cannot
	// honour (a negative TTL, a malformed Redis URL, ...).
	ErrInvalidConfig = errors.New("sessionstore: invalid config")
)

// Session is a legacy session record.
type Session struct {
	// ID is the Mcp-Session-Id: CSPRNG, visible ASCII (see NewID).
	ID string
	// ProtocolVersion is the negotiated version.
	ProtocolVersion string
	// ClientInfo and ClientCapabilities are what initialize declared.
	ClientInfo         protocol.Implementation
	ClientCapabilities protocol.ClientCapabilities
	// LogLevel is the threshold set by logging/setLevel; "" means the client
	// never set one (no log messages are sent).
	LogLevel protocol.LoggingLevel
	// Initialized is true once the server's InitializeResult succeeded; a
	// record is only ever stored after that success, so stored records are
	// initialized.
	Initialized bool
	// ClientInitialized is true once notifications/initialized arrived.
	ClientInitialized bool
	// Principal is the authenticated subject that owns the session ("" when
	// authentication is off).
	Principal string
	// CreatedAt is when the record was created; LastSeen when it was last
	// read or written (UTC, millisecond precision).
	CreatedAt time.Time
	LastSeen  time.Time
}

// Patch changes some fields of a session; nil fields are left alone.
type Patch struct {
	LogLevel          *protocol.LoggingLevel
	ClientInitialized *bool
}

// Event is one entry of a stream's event log.
type Event struct {
	// Index is the position in the stream, from 1, strictly increasing.
	Index uint64
	// Data is the JSON-RPC message as written on the stream.
	Data []byte
}

// Store is the whole store: the small interfaces below, each of which a
// consumer may depend on alone, and Close. All methods are safe for concurrent use, take a
// context that bounds the call, and fail with a wrapped error when the
// backend is unreachable or the context is done. Errors wrap the sentinels
// above, so callers branch with errors.Is; they name a session by the first
// 8 bytes of its id only, so they are safe to log.
//
// An id that fails [ValidID] can never name a live session: every method
// but Create that names a session reports ErrNotFound for it, but for
// those documented otherwise (AppendOnce: NoSession; End, EndStream and
// DropSubscriber: no error).
type Store interface {
	Sessions
	Claims
	EventLog
	OnceSet
	Records

	// Close releases the store's resources (background goroutines,
	// connections it owns), waiting for them at most until ctx is done. It
	// is idempotent. The store must not be used after Close.
	Close(ctx context.Context) error
}

// Immediate is implemented by a store whose Get, Begin and End return
// without waiting: no I/O, no other process, no lock held across either
// ([Memory]). Their callers may leave out a deadline of their own (a
// timer per call); the context's cancellation is still honoured. Other
// methods (the waits on a stream's events) are not covered.
type Immediate interface {
	ImmediateSessions()
}

// Sessions are the legacy session records and their resource
// subscriptions (the contract on [Store] applies).
type Sessions interface {
	// Create stores a new session. It fails with ErrExists if the id is in
	// use, and with a plain error if s is nil, s.ID fails [ValidID] or the
	// client info or capabilities do not encode as JSON. CreatedAt and
	// LastSeen are set by the store (also in *s on success). The session
	// starts with no subscriptions, no event logs and no in-flight claims,
	// even if the id was used before.
	Create(ctx context.Context, s *Session) error
	// Get returns a copy of the session (the caller may modify it freely)
	// and extends its idle TTL; LastSeen in the copy is the time of this
	// call. It fails with ErrNotFound when the session is unknown or
	// expired; an expired record is evicted.
	Get(ctx context.Context, id string) (*Session, error)
	// Update applies p to a live session and extends its TTL. It never
	// recreates a deleted or expired session: ErrNotFound then.
	Update(ctx context.Context, id string, p Patch) error
	// Delete removes the session with its subscriptions and event logs,
	// and releases its in-flight claims (a Redis store leaves their keys
	// to End or to their expiry: see [Redis]). It fails with ErrNotFound
	// if there was nothing to delete.
	Delete(ctx context.Context, id string) error

	// Subscribe adds uri to the session's resource subscriptions
	// (idempotent). ErrNotFound if the session is not live.
	Subscribe(ctx context.Context, id, uri string) error
	// Unsubscribe removes uri (idempotent). ErrNotFound if the session is
	// not live.
	Unsubscribe(ctx context.Context, id, uri string) error
	// Subscriptions returns the session's subscribed URIs, sorted.
	// ErrNotFound if the session is not live.
	Subscriptions(ctx context.Context, id string) ([]string, error)

	// Subscribers returns the ids of the sessions that may be subscribed
	// to uri, in no particular order (an empty slice if none): every live
	// session subscribed to it and possibly sessions that are no longer
	// (deleted, expired, or unsubscribed in a race): the caller checks
	// each (AppendOnce's URI does) and removes stale ones with
	// DropSubscriber. Subscribe adds the session to uri's index before it
	// subscribes it and Unsubscribe removes it after, so a failure
	// between the two steps leaves a stale entry, never a subscription
	// missing from the index. Delete and expiry may leave entries behind
	// (a Redis store keeps them until DropSubscriber; a Memory store drops
	// them at once). The index is not tied to a session: it has no TTL.
	Subscribers(ctx context.Context, uri string) ([]string, error)
	// DropSubscriber removes id from uri's index (idempotent, no error for
	// unknown ones). It is meant for the stale entries Subscribers
	// reports: when id is still (or again, in a race with Subscribe)
	// subscribed to uri, it stays in the index.
	DropSubscriber(ctx context.Context, uri, id string) error
}

// Claims register a session's in-flight request ids, so an id is not
// reused while a request with it still runs anywhere in the cluster.
type Claims interface {
	// Begin is Get plus a claim on (session, requestID) for a request that is
	// about to run: in one atomic step it returns the session (sliding its TTL
	// like Get) and records that requestID is in flight, for at most ttl
	// (a crashed frontend cannot leave a claim behind for longer). token
	// identifies this claim (the caller passes a unique value). It fails with
	// ErrNotFound for an unknown or expired session, and with ErrInFlight when
	// requestID is already claimed by a claim that has not ended or expired;
	// in that case the returned session is still valid (non-nil) so the caller
	// can answer in the session's terms.
	//
	// More precisely: requestID is any string, compared byte for byte (the
	// caller passes the JSON form of the JSON-RPC id, so 1 and "1" differ);
	// claims of different sessions never conflict. The TTL is slid on
	// ErrInFlight too (the client is active). ttl must be positive (a plain
	// error otherwise, and nothing is claimed or slid); a backend may round
	// it to its precision (Redis: whole milliseconds, at least 1). Begin
	// costs what Get costs: one round trip to a shared backend. On any
	// other error the claim may or may not have been made: calling End with
	// the same token is always safe, whatever Begin returned.
	Begin(ctx context.Context, id, requestID, token string, ttl time.Duration) (*Session, error)
	// End releases the claim made by Begin with the same token. It is a no-op
	// when the claim is gone or belongs to another token (a later request that
	// reused the id after this claim expired). Deleting the session releases
	// all its claims.
	//
	// End neither checks that the session is live nor extends its TTL: for
	// an unknown, expired or invalid session id it is a no-op too. It fails
	// only when the backend is unreachable or ctx is done.
	End(ctx context.Context, id, requestID, token string) error
}

// EventLog is the bounded per-stream event log used for SSE resumption.
type EventLog interface {
	// AppendEvent appends a copy of data to the log of (session, stream),
	// extends the session's TTL and returns the event's index: 1 for the
	// first event of a stream, then strictly increasing without gaps for
	// as long as the session lives (concurrent appends get distinct
	// indices). The log keeps the last MaxEvents events and never outlives
	// the session. ErrNotFound if the session is not live: a log is never
	// created for a dead session.
	AppendEvent(ctx context.Context, id, stream string, data []byte) (uint64, error)
	// AppendEventSeq is AppendEvent for a stream's acked messages, each
	// with its sender's sequence number seq (at least 1, increasing by
	// one per message): it appends only when the stream's log already
	// exists (something was appended to it; its events may have been
	// trimmed since) and seq is greater than the last seq appended to it,
	// all in one atomic step. appended reports whether it did; when it did
	// not (a duplicate, or a stream never started), index is 0 and err
	// nil. Several senders delivering the same message (the frontend
	// holding the stream and any other on its behalf) so log it once.
	// ErrNotFound if the session is not live.
	AppendEventSeq(ctx context.Context, id, stream string, seq uint64, data []byte) (index uint64, appended bool, err error)
	// AppendOnce appends messages to existing stream logs, each at most
	// once per (session, stream, Key): several frontends delivering the
	// same message on behalf of one that may be dead (the session
	// messages and resources/updated notifications of a legacy GET
	// stream) log it once. results[i] says what became of batch[i];
	// len(results) == len(batch) when err is nil. The messages are
	// handled in batch order, each in one atomic step that does the first
	// of these that applies:
	//   - the session is not live, or its id is invalid: NoSession;
	//   - URI is not "" and the session is not subscribed to it
	//     (Subscribe): NotSubscribed;
	//   - the stream has no log (nothing was ever appended to it, or it
	//     ended and its grace passed; as for AppendEventSeq): NoLog;
	//   - Key was logged on this (session, stream) and is still
	//     remembered: Duplicate, with the index it was logged at (the
	//     event itself may have been trimmed since);
	//   - otherwise the message is appended as AppendEvent appends (the
	//     next index, the log trimmed to MaxEvents, the session's TTL
	//     extended, an ended stream in its grace reopened) and Key is
	//     recorded: Appended, with its index.
	//
	// Only Appended changes anything (the other outcomes neither log nor
	// extend a TTL). A stream remembers the keys of its last MaxEvents
	// appends made with AppendOnce, whatever AppendEvent appended in
	// between; they go with the stream's log (Delete, Create, EndStream
	// and its grace, the MaxStreamsPerSession eviction, expiry) and never
	// outlive the session. Key must not be empty (a plain error, before
	// anything is appended); it is opaque, any bytes (stores keep a
	// fixed-size hash of it). An empty batch does nothing.
	//
	// Otherwise err is not nil only when the backend failed or ctx is
	// done; some messages may have been appended then, and calling AppendOnce again
	// with the same batch is safe: the keys make the ones already logged
	// Duplicate. A Redis store sends a whole batch in one round trip (a
	// second one when the server had not loaded the script yet).
	AppendOnce(ctx context.Context, batch []OnceAppend) ([]OnceResult, error)
	// EventsAfter returns every event of (session, stream) with an index
	// greater than after, in order, never a partial result. It does not
	// extend the TTL. Precisely, with newest the index of the stream's last
	// appended event (0 if none) and oldest the index of its oldest kept
	// event:
	//   - after >= newest > 0, or after == newest == 0: an empty slice
	//     (nothing newer; a client ahead of the store is told so, not
	//     failed);
	//   - newest == 0 < after: ErrEventsPurged (the client saw events the
	//     store no longer knows about);
	//   - after+1 < oldest, including a log that is gone entirely:
	//     ErrEventsPurged;
	//   - otherwise: the events after+1 .. newest.
	//
	// ErrNotFound if the session is not live. A backend may drop the log
	// of a stream that has had no append for TTL while the session is kept
	// alive by other calls; EventsAfter then reports ErrEventsPurged to
	// anyone who has not seen its newest event, never a silent gap.
	EventsAfter(ctx context.Context, id, stream string, after uint64) ([]Event, error)
	// EndStream says that (session, stream) is over (a POST stream whose
	// response was delivered): its log stays resumable for
	// Options.EndedStreamGrace, then it and the stream's bookkeeping go
	// (EventsAfter then gives ErrEventsPurged to a client behind its
	// newest event). An append reopens an ended stream. Unknown sessions
	// and streams are a no-op; it fails only when the backend is
	// unreachable or ctx is done. Besides, a session keeps event logs for
	// at most Options.MaxStreamsPerSession streams (a Redis store: once
	// each AppendEvent has returned, see [Redis.AppendEvent]).
	EndStream(ctx context.Context, id, stream string) error
}

// OnceSet is a cluster-wide single-use set (MRTR requestState).
type OnceSet interface {
	// UseOnce records that key (an opaque string, e.g. the hash of an MRTR
	// requestState) has been used, for ttl. It fails with ErrUsed when the
	// key was already used and has not expired: single-use enforcement
	// shared by every frontend. It is not tied to any session. Stores keep
	// a fixed-size hash of key, whatever its length; a Memory store keeps
	// at most about a million and then fails with ErrFull.
	UseOnce(ctx context.Context, key string, ttl time.Duration) error
}

// Records are small versioned documents not tied to a session (tasks), for
// read-modify-write by any frontend. A key is an opaque string.
type Records interface {
	// CreateRecord stores data under key for ttl; ErrExists if the key is
	// live. GetRecord returns a copy of the data and its version (1 after
	// CreateRecord, one more per SetRecord); ErrNotFound when the key is
	// unknown or expired. SetRecord replaces the data if the version is
	// still ver, keeping the expiry set at creation; ErrConflict when
	// another write came first, ErrNotFound when the record is gone.
	CreateRecord(ctx context.Context, key string, data []byte, ttl time.Duration) error
	GetRecord(ctx context.Context, key string) (data []byte, ver int64, err error)
	SetRecord(ctx context.Context, key string, ver int64, data []byte) error
}

// Pinger is an optional capability of a [Store]: Ping reports whether the
// backend is reachable, for readiness probes. Check for it with a type
// assertion; both [Memory] and [Redis] implement it.
type Pinger interface {
	Ping(ctx context.Context) error
}

// Counter is an optional capability of a [Store]: CountSessions returns
// the number of live legacy sessions in the whole store (every
// frontend's), for the sessions gauge. Check for it with a type
// assertion; [Memory] (exact, a pass over its sessions) and [Redis]
// (cached, a SCAN at most every RedisOptions.CountInterval across all
// the frontends sharing it; see [Redis.CountSessions]) implement it.
type Counter interface {
	CountSessions(ctx context.Context) (int, error)
}
