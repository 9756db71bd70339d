package sessionstore

import (
	"encoding/json"
	"fmt"
	"time"
)

// encodeJSONMembers encodes the members of s that are protocol structures.
// Both stores keep them as JSON so that a stored session shares no memory
// with the caller's and both backends normalise them the same way (for
// example an empty map reads back as nil).
func encodeJSONMembers(s *Session) (info, caps []byte, err error) {
	if info, err = json.Marshal(s.ClientInfo); err != nil {
		return nil, nil, fmt.Errorf("encoding client info: %w", err)
	}
	if caps, err = json.Marshal(s.ClientCapabilities); err != nil {
		return nil, nil, fmt.Errorf("encoding client capabilities: %w", err)
	}
	return info, caps, nil
}

// decodeJSONMembers is the inverse of encodeJSONMembers.
func decodeJSONMembers(s *Session, info, caps []byte) error {
	if err := json.Unmarshal(info, &s.ClientInfo); err != nil {
		return fmt.Errorf("decoding client info: %w", err)
	}
	if err := json.Unmarshal(caps, &s.ClientCapabilities); err != nil {
		return fmt.Errorf("decoding client capabilities: %w", err)
	}
	return nil
}

// checkNew validates the argument of Create.
func checkNew(s *Session) error {
	if s == nil {
		return fmt.Errorf("sessionstore: create: nil session")
	}
	if !ValidID(s.ID) {
		return fmt.Errorf("sessionstore: create %q: invalid session id", shortID(s.ID))
	}
	return nil
}

// checkClaimTTL validates the claim lifetime given to Begin.
func checkClaimTTL(id string, ttl time.Duration) error {
	if ttl <= 0 {
		return fmt.Errorf("sessionstore: begin %q: claim ttl %v is not positive", shortID(id), ttl)
	}
	return nil
}

// window is what EventsAfter decides from a stream's newest index and the
// number of events its log still holds.
type window int

const (
	windowEmpty  window = iota // nothing newer than after
	windowPurged               // some event after `after` is gone
	windowEvents               // events after+1 .. newest are all kept
)

// eventWindow applies the rules documented on [Store.EventsAfter]. The log
// holds the contiguous indices newest-kept+1 .. newest.
func eventWindow(after, newest uint64, kept int) window {
	switch {
	case newest == 0 && after > 0:
		return windowPurged
	case after >= newest:
		return windowEmpty
	case after+1 < newest-uint64(kept)+1:
		return windowPurged
	default:
		return windowEvents
	}
}

// nowMilli is the current time at the precision stores keep: UTC,
// milliseconds, no monotonic reading.
func nowMilli() time.Time {
	return time.UnixMilli(time.Now().UnixMilli()).UTC()
}
