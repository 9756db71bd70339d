package listen

import "github.com/mcpfleet/mcpfleet/pkg/protocol"

// listenKey names a listen stream for duplicate detection: the client (as
// the transport identifies it) and the subscription id.
type listenKey struct {
	client string
	id     string
}

// ListenStream is one modern subscriptions/listen stream. C delivers the
// JSON-RPC notifications to write, already tagged with the subscription
// id; the first message to write is Ack, the last (on graceful shutdown)
// Final.
type ListenStream struct {
	stream
	// ID is the subscription id: the listen request's JSON-RPC id.
	ID     protocol.ID
	filter protocol.SubscriptionFilter
	key    listenKey
	reg    *Registry
	idJSON []byte
}

// Honoured returns the part of a requested filter this registry delivers:
// list changes, resource subscriptions and, when the transport runs tasks
// and the request declared the tasks extension (tasks), task status
// (notifications/tasks for the named task ids).
func Honoured(f *protocol.SubscriptionFilter, tasks bool) protocol.SubscriptionFilter {
	h := protocol.SubscriptionFilter{
		ToolsListChanged:     f.ToolsListChanged,
		PromptsListChanged:   f.PromptsListChanged,
		ResourcesListChanged: f.ResourcesListChanged,
	}
	h.ResourceSubscriptions = dedup(f.ResourceSubscriptions)
	if tasks {
		h.TaskIDs = dedup(f.TaskIDs)
	}
	return h
}

func dedup(in []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, u := range in {
		if u != "" && !seen[u] {
			seen[u] = true
			out = append(out, u)
		}
	}
	return out
}

// OpenListen registers a listen stream for client (the transport's name for
// the client: its principal or connection) with subscription id and the
// honoured filter. Its bus subscriptions are in place before it returns,
// so the caller may write the Ack and nothing raised afterwards is lost.
// It fails with ErrTooMany past the cap, ErrDuplicate when the client
// already listens with this id, ErrClosed after Shutdown, ErrBusLost while
// the bus is lost (see [Registry.BusLost]).
func (r *Registry) OpenListen(client string, id protocol.ID, filter protocol.SubscriptionFilter) (*ListenStream, error) {
	l := &ListenStream{stream: newStream(r.opts.ListenBuffer), ID: id, filter: filter, reg: r,
		key: listenKey{client: client, id: id.String()}, idJSON: id.AppendJSON(nil)}
	r.mu.Lock()
	switch {
	case r.closed:
		r.mu.Unlock()
		return nil, ErrClosed
	case r.lost || !r.nc.IsConnected():
		r.mu.Unlock()
		return nil, ErrBusLost
	case r.listens[l.key] != nil:
		r.mu.Unlock()
		return nil, ErrDuplicate
	case r.opts.MaxListen > 0 && len(r.listens) >= r.opts.MaxListen:
		r.mu.Unlock()
		return nil, ErrTooMany
	case r.opts.MaxListenPerClient > 0 && r.perClient[client] >= r.opts.MaxListenPerClient:
		r.mu.Unlock()
		return nil, ErrTooManyForClient
	}
	r.listens[l.key] = l
	r.perClient[client]++
	var err error
	for _, u := range filter.ResourceSubscriptions {
		if err = r.addURI(u, l); err != nil {
			break
		}
	}
	for _, id := range filter.TaskIDs {
		if err != nil {
			break
		}
		err = r.addTask(id, l)
	}
	r.mu.Unlock()
	if err == nil {
		err = r.flush()
	}
	if err == nil && l.Reason() == ReasonBusLost {
		err = ErrBusLost // lost while it was being opened
	}
	if err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

// Close unregisters the stream. Idempotent.
func (l *ListenStream) Close() {
	r := l.reg
	l.end(ReasonClosed)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.listens[l.key] != l {
		return
	}
	r.removeListen(l)
}

// removeListen forgets listen stream l and drops its bus subscriptions;
// the caller holds r.mu.
func (r *Registry) removeListen(l *ListenStream) {
	delete(r.listens, l.key)
	if r.perClient[l.key.client]--; r.perClient[l.key.client] <= 0 {
		delete(r.perClient, l.key.client)
	}
	for _, u := range l.filter.ResourceSubscriptions {
		r.dropURI(u, l)
	}
	for _, id := range l.filter.TaskIDs {
		r.dropTask(id, l)
	}
}

// Ack is notifications/subscriptions/acknowledged for this stream.
func (l *ListenStream) Ack() []byte { return AckMessage(l.ID, l.filter) }

// Final is the SubscriptionsListenResult that ends the stream gracefully.
func (l *ListenStream) Final() []byte { return FinalMessage(l.ID) }

// tag builds a notification for this stream.
func (l *ListenStream) tag(method, uri string) []byte {
	return AppendTagged(nil, l.idJSON, method, uri)
}
