package listen

// Hooks for the external tests (package listen_test) to look at the
// registry's internal state.

// Barrier returns once the deliveries in progress are over: every delivery
// runs under r.mu, so a message a test has read from one stream was offered
// to every other stream of the same event by the time Barrier returns.
func (r *Registry) Barrier() {
	r.mu.Lock()
	defer r.mu.Unlock()
}

// Watchers returns, per URI with a NATS subscription, how many listen
// streams watch it (legacy sessions watch none: their resources/updated
// come in their GET log).
func (r *Registry) Watchers() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]int, len(r.uris))
	for u, e := range r.uris {
		out[u] = len(e.listens)
	}
	return out
}

// SessionCount returns the number of sessions with streams here.
func (r *Registry) SessionCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.sessions)
}

// SessionStreams returns the number of streams registered for session id,
// -1 when the session is not registered.
func (r *Registry) SessionStreams(id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.sessions[id]
	if s == nil {
		return -1
	}
	return len(s.streams)
}
