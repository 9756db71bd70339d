package listen

// Losing the bus. A frontend whose NATS connection drops can feed none of
// its streams: events raised meanwhile go to other frontends, or nowhere.
// Left open, its streams would silently miss them; and once the connection
// came back, nats.go would resend their subscriptions, so a stream the
// client had meanwhile resumed on another frontend would be fed by both
// (each message on two streams, which the transport forbids). So the
// frontend calls BusLost as soon as the connection drops: every stream
// ends at once, and their subscriptions are dropped before the connection
// is back, so nothing of them is ever fed again. BusBack, once it is back,
// lets new streams open.

// BusLost ends every stream with ReasonBusLost, drops their bus
// subscriptions (sessions' subjects, URIs, task ids; the list_changed
// subscription, which feeds only open streams, stays) and refuses new
// streams with ErrBusLost until BusBack. It returns how many legacy GET
// streams and listen streams it ended. Idempotent; a no-op after
// Shutdown.
func (r *Registry) BusLost() (gets, listens int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return 0, 0
	}
	r.lost = true
	for _, s := range r.sessions {
		for _, g := range s.streams {
			g.end(ReasonBusLost)
			gets++
		}
		s.streams = nil
		r.dropSession(s)
	}
	for _, l := range r.listens {
		l.end(ReasonBusLost)
		listens++
		r.removeListen(l)
	}
	return gets, listens
}

// BusBack lets streams open again after BusLost: the frontend calls it
// when its connection is back. Streams ended by BusLost stay ended (their
// clients resume or listen again, here or elsewhere).
func (r *Registry) BusBack() {
	r.mu.Lock()
	r.lost = false
	r.mu.Unlock()
}

// BusIsLost reports whether the registry is between BusLost and BusBack.
func (r *Registry) BusIsLost() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lost
}
