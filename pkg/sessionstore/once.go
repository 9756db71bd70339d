package sessionstore

import "fmt"

// The types of [EventLog.AppendOnce].

// OnceAppend is one message for AppendOnce.
type OnceAppend struct {
	Session string // the session id
	Stream  string // the stream whose log gets the message
	// URI, when not "", makes the append conditional: only if the session
	// is subscribed to URI (Subscribe) at that moment.
	URI  string
	Key  string // the dedupe key (opaque, non-empty; any bytes)
	Data []byte
}

// AppendStatus says what AppendOnce did with one message.
type AppendStatus uint8

// The outcomes of one message of AppendOnce, in the order AppendOnce
// checks them (NoSession first, Appended when none applies).
const (
	Appended      AppendStatus = iota // logged now; Index is its index
	Duplicate                         // Key was logged before on this stream; Index is the index it got then
	NoLog                             // the stream has no log (never appended to, or ended and gone): nothing logged
	NotSubscribed                     // URI given and the session is not subscribed to it
	NoSession                         // the session is not live (or the id is invalid)
)

// String returns the status's name ("Appended", ...).
func (s AppendStatus) String() string {
	switch s {
	case Appended:
		return "Appended"
	case Duplicate:
		return "Duplicate"
	case NoLog:
		return "NoLog"
	case NotSubscribed:
		return "NotSubscribed"
	case NoSession:
		return "NoSession"
	}
	return fmt.Sprintf("AppendStatus(%d)", uint8(s))
}

// OnceResult is what AppendOnce did with one message: Index is the
// message's index in its stream for Appended and Duplicate, 0 otherwise.
type OnceResult struct {
	Index  uint64
	Status AppendStatus
}

// checkOnceBatch reports the first message of batch without a key.
func checkOnceBatch(batch []OnceAppend) error {
	for i, a := range batch {
		if a.Key == "" {
			return fmt.Errorf("sessionstore: append once: message %d has no key", i)
		}
	}
	return nil
}
