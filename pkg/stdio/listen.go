package stdio

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/mcpfleet/mcpfleet/pkg/listen"
	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// listenSub is one subscriptions/listen stream.
type listenSub struct {
	id     protocol.ID
	idJSON []byte
	token  string // of its claim
	filter protocol.SubscriptionFilter
}

// openListen opens a subscriptions/listen stream: the acknowledgement is
// its first message; events follow, tagged with the subscription id, until
// the client cancels it or the input ends.
func (s *session) openListen(msg *protocol.Message) {
	var p protocol.ListenParams
	if err := json.Unmarshal(msg.Params, &p); err != nil || p.Notifications == nil {
		s.writeError(msg.ID, protocol.ErrListenNeedsFilter())
		return
	}
	key := idKey(msg.ID)
	l := &listenSub{id: msg.ID, idJSON: msg.ID.AppendJSON(nil), filter: listen.Honoured(p.Notifications, false)}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, token, e := s.claim(msg.ID, key)
	if e == nil && len(s.listens) >= s.opts.MaxListen {
		s.unclaim(key, token)
		e = protocol.NewError(protocol.CodeInternalError, "too many listen streams (%d); retry later", s.opts.MaxListen)
	}
	if e != nil {
		s.writeError(msg.ID, e)
		return
	}
	l.token = token
	// Written under s.mu: no event can be written for the stream before
	// its acknowledgement.
	s.write(listen.AckMessage(msg.ID, l.filter))
	s.listens[key] = l
}

// endListens ends every listen stream with its result. The caller holds
// s.mu.
func (s *session) endListens() {
	for key, l := range s.listens {
		s.write(listen.FinalMessage(l.id))
		delete(s.listens, key)
		s.unclaim(key, l.token)
	}
}

// ListChanged implements mcp.Events: the legacy session gets
// notifications/<kind>/list_changed; modern listen streams that asked for
// it get it tagged with their subscription id.
func (s *session) ListChanged(_ context.Context, kind string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch s.era {
	case protocol.EraLegacy:
		method, _, ok := listen.ListChangedMethod(&protocol.SubscriptionFilter{}, kind)
		if !ok {
			return fmt.Errorf("stdio: unknown list kind %q", kind)
		}
		s.write(protocol.AppendNotification(nil, method, nil))
	case protocol.EraModern:
		for _, l := range s.listens {
			method, wanted, ok := listen.ListChangedMethod(&l.filter, kind)
			if !ok {
				return fmt.Errorf("stdio: unknown list kind %q", kind)
			}
			if wanted {
				s.write(listen.AppendTagged(nil, l.idJSON, method, ""))
			}
		}
	}
	return nil
}

// ResourceUpdated implements mcp.Events: to the legacy session when it
// subscribed to uri, and to the listen streams whose filter names uri.
func (s *session) ResourceUpdated(_ context.Context, uri string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch s.era {
	case protocol.EraLegacy:
		subs, err := s.store.Subscriptions(s.storeCtx, s.id)
		if err != nil {
			return fmt.Errorf("stdio: reading the resource subscriptions: %w", err)
		}
		if slices.Contains(subs, uri) {
			n, err := protocol.EncodeNotification(protocol.NotificationResourceUpdated, &protocol.ResourceUpdatedParams{URI: uri})
			if err != nil {
				return err
			}
			s.write(n)
		}
	case protocol.EraModern:
		for _, l := range s.listens {
			if slices.Contains(l.filter.ResourceSubscriptions, uri) {
				s.write(listen.AppendTagged(nil, l.idJSON, protocol.NotificationResourceUpdated, uri))
			}
		}
	}
	return nil
}

// NotifySession implements mcp.SessionNotifier for the process's legacy
// session.
func (s *session) NotifySession(_ context.Context, sessionID, method string, params any) error {
	s.mu.Lock()
	ok := s.era == protocol.EraLegacy && sessionID == s.id
	s.mu.Unlock()
	if !ok {
		return mcp.ErrNotSupported
	}
	n, err := protocol.EncodeNotification(method, params)
	if err != nil {
		return err
	}
	s.write(n)
	return nil
}
