package bus

import (
	"crypto/sha256"
	"encoding/base32"
	"strings"
)

// DefaultPrefix is the first token of every subject when Subjects.Prefix is
// empty.
const DefaultPrefix = "mcp"

// WorkerQueue is the queue group request subscribers join.
const WorkerQueue = "workers"

// Subjects builds every subject of the bus. The zero value uses
// DefaultPrefix. Variable parts (methods, names, ids) are escaped into a
// single token by [Token], so a tool named "a.b" or "x>" cannot change the
// subject's shape.
type Subjects struct {
	// Prefix is the first token; empty means DefaultPrefix. It lets several
	// deployments share one NATS account.
	Prefix string
}

func (s Subjects) p() string {
	if s.Prefix == "" {
		return DefaultPrefix
	}
	return s.Prefix
}

// Request is where a request for method (and, for tools/call, prompts/get
// and resources/read, the tool, prompt or resource name) is published:
// <prefix>.req.<method>[.<name>].
func (s Subjects) Request(method, name string) string {
	if name == "" {
		return s.p() + ".req." + Token(method)
	}
	return s.p() + ".req." + Token(method) + "." + Token(name)
}

// RequestMethod matches every request for method, named or not, for a
// worker that serves all of them: <prefix>.req.<method>.> is not enough
// (it misses the unnamed form), so workers subscribe to both
// Request(method, "") and RequestMethodNamed(method).
func (s Subjects) RequestMethodNamed(method string) string {
	return s.p() + ".req." + Token(method) + ".>"
}

// AllRequests matches every request subject.
func (s Subjects) AllRequests() string { return s.p() + ".req.>" }

// Stream is the subject a worker publishes a request's frames to: the
// frontend fe's stream id.
func (s Subjects) Stream(fe, stream string) string {
	return s.p() + ".fe." + Token(fe) + "." + Token(stream)
}

// IsStream reports whether subject is Stream(fe, stream), without making
// that string.
func (s Subjects) IsStream(subject, fe, stream string) bool {
	rest, ok := strings.CutPrefix(subject, s.p())
	if !ok {
		return false
	}
	if rest, ok = strings.CutPrefix(rest, ".fe."); !ok {
		return false
	}
	if rest, ok = strings.CutPrefix(rest, Token(fe)); !ok {
		return false
	}
	return len(rest) > 0 && rest[0] == '.' && rest[1:] == Token(stream)
}

// FrontendControl is where frontend fe answers liveness probes: a
// frontend resuming another's stream asks it before taking the stream over.
func (s Subjects) FrontendControl(fe string) string { return s.p() + ".fectl." + Token(fe) }

// FrontendStreams matches every stream subject of frontend fe.
func (s Subjects) FrontendStreams(fe string) string { return s.p() + ".fe." + Token(fe) + ".*" }

// StreamID returns the stream token of a subject built by Stream.
func StreamID(subject string) string {
	i := strings.LastIndexByte(subject, '.')
	return subject[i+1:]
}

// WorkerInbox is where answers to worker w's server-to-client requests go.
func (s Subjects) WorkerInbox(w string) string { return s.p() + ".w." + Token(w) + ".in" }

// Cancel is the broadcast subject of cancellations.
func (s Subjects) Cancel() string { return s.p() + ".cancel" }

// SessionControl is the broadcast subject of session lifecycle events
// (deletion, a new GET stream) that every holder of the session's streams
// must see.
func (s Subjects) SessionControl(id string) string { return s.p() + ".sessctl." + Token(id) }

// Live is the subject on which the frontend holding a detached legacy
// stream (its client went away, or the server closed the connection)
// publishes the stream's new events, and so does any frontend that logs
// one on its behalf (Append), so a client resuming the stream on another
// frontend gets them live after replaying the log.
func (s Subjects) Live(session, stream string) string {
	return s.p() + ".live." + Token(session) + "." + Token(stream)
}

// ListChanged is the subject of list_changed events of kind ("tools",
// "prompts" or "resources").
func (s Subjects) ListChanged(kind string) string { return s.p() + ".evt.list." + Token(kind) }

// AllListChanged matches every list_changed event.
func (s Subjects) AllListChanged() string { return s.p() + ".evt.list.*" }

// ResourceUpdated is the subject of resources/updated events for uri.
func (s Subjects) ResourceUpdated(uri string) string {
	return s.p() + ".evt.res." + Token(uri)
}

// Token escapes s into one subject token: bytes outside [A-Za-z0-9_/:-]
// (and any '~') become ~XX in upper-case hex; a result longer than
// MaxTokenLen becomes a fixed-length hash. The result is never empty.
func Token(s string) string {
	if s == "" {
		return "~"
	}
	if len(s) > MaxTokenLen {
		return hashToken(s)
	}
	clean := true
	for i := 0; i < len(s); i++ {
		if !tokenSafe(s[i]) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if tokenSafe(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('~')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	if b.Len() > MaxTokenLen {
		return hashToken(s)
	}
	return b.String()
}

// MaxTokenLen bounds a subject token: longer values (a huge tool name or
// URI, which would make NATS drop the connection for exceeding its control
// line) are replaced by "~~" and a hash, so every subject stays short.
// Hashed tokens cannot collide with escaped ones, which never contain
// "~~".
const MaxTokenLen = 96

func hashToken(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "~~" + base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(sum[:20])
}

func tokenSafe(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '_' || c == '-' || c == '/' || c == ':'
}

// TaskWrite is where workers send task state changes (creation, input
// requests, outcome); frontends, which hold the store, take them in the
// TaskWriters queue group and reply once the store has them.
func (s Subjects) TaskWrite() string { return s.p() + ".tasks.write" }

// TaskWriters is the queue group of TaskWrite.
const TaskWriters = "taskwriters"

// TaskControl is where the worker running a task listens for the client's
// input responses and cancellation (from any frontend); no responders
// means that worker is gone.
func (s Subjects) TaskControl(id string) string { return s.p() + ".task." + Token(id) }

// TaskEvent carries a task's state each time it changes (the params of
// notifications/tasks), for listen streams that watch the task.
func (s Subjects) TaskEvent(id string) string { return s.p() + ".evt.task." + Token(id) }

// Announce is the subject of worker announcements (the heartbeats of
// package fleet).
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
