package limits

import (
	"context"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// MaxURILen is the longest resource URI accepted in a subscription (and in
// a listen stream's filter).
const MaxURILen = 4096

// storeTimeout bounds one store call made for a check.
const storeTimeout = 5 * time.Second

// CheckSizes applies the string and array caps to a request or a
// notification. A client's answers (responses, and the answers and
// server-sealed state a 2026-07-28 retry carries back) are data it was
// asked for, bounded by the body cap alone: a base64 image may be long.
func (l *Limiter) CheckSizes(msg *protocol.Message, body []byte) error {
	if msg.Kind() == protocol.KindResponse {
		return nil
	}
	return protocol.CheckSizes(body, l.maxString, l.maxArray, "requestState", "inputResponses")
}

// SubscriptionRoom checks a resources/subscribe of session to uri before
// it is forwarded: uri at most MaxURILen bytes, and room in the session
// for one more subscription (a URI already subscribed needs none). A nil
// uri, or a store error, passes: the worker answers the missing uri, and
// a store error shows when the subscription is recorded.
func (l *Limiter) SubscriptionRoom(ctx context.Context, session string, uri *string) *protocol.Error {
	if uri == nil {
		return nil
	}
	if len(*uri) > MaxURILen {
		return protocol.NewError(protocol.CodeInvalidParams, "invalid params: the uri is longer than %d bytes", MaxURILen)
	}
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	uris, err := l.store.Subscriptions(ctx, session)
	if err != nil || l.maxSubsPerSess <= 0 || len(uris) < l.maxSubsPerSess {
		return nil
	}
	for _, u := range uris {
		if u == *uri {
			return nil // already subscribed
		}
	}
	return protocol.NewError(protocol.CodeInvalidParams, "invalid params: this session holds %d resource subscriptions, the most allowed; unsubscribe from one first", len(uris))
}
