// Package listen is the stream registry of a frontend: it tracks the
// long-lived client streams that receive events from the bus and feeds
// them. Two kinds of streams exist:
//
//   - legacy GET streams ([SessionStream], 2025-11-25): each relays the
//     live events of its session's GET log (whichever frontend logged
//     them: session events, see package bus), and gets every list_changed
//     event this frontend raises; a session has one GET stream (a newer
//     one, on any frontend, supersedes the others);
//   - modern listen streams ([ListenStream], 2026-07-28
//     subscriptions/listen): each gets the events its acknowledged filter
//     asked for, tagged with its subscription id.
//
// Events arrive once per frontend from NATS: one subscription for
// list_changed, one per session with a GET stream here (its log's live
// subject), and one refcounted subscription per URI listen streams watch,
// so NATS interest routing only sends a frontend what its clients watch. A
// [Registry] subscribes to the bus before a stream is handed out, so
// nothing raised after Open returns is lost.
//
// When the frontend loses its bus connection it calls [Registry.BusLost]:
// every stream ends at once and their subscriptions are dropped, so the
// reconnected connection feeds none of them (a stream the client resumed on
// another frontend is fed there only); opens fail with ErrBusLost until
// [Registry.BusBack].
//
// Delivery never blocks: each stream has a bounded buffer, and a stream
// whose reader falls behind is ended (Done closes; Reason says why). The
// registry's lock is never held while writing to a client: streams are
// written by their own goroutines (the HTTP handlers), which read C.
package listen
