package bus

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Session events. The messages for legacy sessions' GET streams
// (resources/updated for a subscribed URI, and the notifications and
// server-to-client requests a worker sends to one session outside any
// request) do not go to the frontend holding the stream: that frontend may
// be dead or cut off. They go to Subjects.SessionEvents as NATS requests
// (a batch of SessionEvent, in order), which every frontend serves in
// queue group AppendQueue. The frontend that takes a batch logs each event
// into the GET log (stream SessionLog) of each session it is for, once per
// session whatever the retries (by the event's Key), publishes it on that
// log's live subject (Subjects.Live), where the frontend holding the
// session's GET stream relays it, then replies with one result byte per
// event. A sender resends a batch that got no such reply (no responder,
// no reply in time, SessionEventsRetry) until it does or the events'
// deadline passes.

// SessionLog is the stream name of a legacy session's GET log: one per
// session, continued by each of its GET streams in turn, so event ids
// ("gs:<index>") are valid at any frontend and across reconnections.
const SessionLog = "gs"

// SessionEvents is where session events go: <prefix>.sevt.
func (s Subjects) SessionEvents() string { return s.p() + ".sevt" }

// SessionEvent is one message for legacy GET streams: for one session
// (Session) or for every session subscribed to a resource (URI).
type SessionEvent struct {
	// Key identifies the event among all events of all senders (a sender
	// id and a sequence number): a session logs an event with a key it has
	// logged already only once.
	Key string `json:"k"`
	// Session is the one session the event is for ("" with URI).
	Session string `json:"s,omitempty"`
	// URI makes the event a resources/updated for each session subscribed
	// to it ("" with Session).
	URI string `json:"u,omitempty"`
	// Kind is FrameNotification or FrameServerRequest.
	Kind FrameKind `json:"t"`
	// Msg is the JSON-RPC message as written on the stream.
	Msg json.RawMessage `json:"m"`
}

// Per-event results of a session-events reply.
const (
	// SessionEventLogged: the event is in the GET log of at least one of
	// its sessions.
	SessionEventLogged = 'L'
	// SessionEventDropped: no session had a GET log to take it (never
	// opened a GET stream, gone, or not subscribed to the URI).
	SessionEventDropped = '-'
)

// SessionEventsRetry is the reply of a frontend that could not log a
// batch (the store failed): the sender resends it.
const SessionEventsRetry = "retry"

// MaxSessionEventsBatch bounds the events of one batch.
const MaxSessionEventsBatch = 256

// ErrBadSessionEvents is returned by DecodeSessionEvents for a malformed
// batch.
var ErrBadSessionEvents = errors.New("bus: malformed session events")

// EncodeSessionEvents encodes a batch.
func EncodeSessionEvents(evs []SessionEvent) ([]byte, error) {
	return json.Marshal(evs)
}

// DecodeSessionEvents decodes a batch: 1 to MaxSessionEventsBatch events,
// each with a key, exactly one of Session and URI, a notification or
// server-to-client request kind (a request only for one session), and a
// message. The messages alias data.
func DecodeSessionEvents(data []byte) ([]SessionEvent, error) {
	var evs []SessionEvent
	if err := json.Unmarshal(data, &evs); err != nil {
		return nil, errors.Join(ErrBadSessionEvents, err)
	}
	if len(evs) == 0 || len(evs) > MaxSessionEventsBatch {
		return nil, fmt.Errorf("%w: %d events", ErrBadSessionEvents, len(evs))
	}
	for i := range evs {
		e := &evs[i]
		ok := e.Key != "" && len(e.Msg) > 0 && (e.Session == "") != (e.URI == "")
		switch e.Kind {
		case FrameNotification:
		case FrameServerRequest:
			ok = ok && e.Session != ""
		default:
			ok = false
		}
		if !ok {
			return nil, fmt.Errorf("%w: event %d", ErrBadSessionEvents, i)
		}
	}
	return evs, nil
}

// MarshalJSON writes a frame kind as a one-letter string.
func (k FrameKind) MarshalJSON() ([]byte, error) {
	return []byte{'"', byte(k), '"'}, nil
}

// UnmarshalJSON reads a one-letter string; anything else is FrameInvalid.
func (k *FrameKind) UnmarshalJSON(b []byte) error {
	if len(b) == 3 && b[0] == '"' && b[2] == '"' {
		*k = FrameKind(b[1])
		return nil
	}
	*k = FrameInvalid
	return nil
}
