package listen

import (
	"encoding/json"

	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// The messages of a subscriptions/listen stream, the same on every
// transport (SSE on HTTP, lines on stdio).

// AckMessage is notifications/subscriptions/acknowledged for subscription
// id: the first message of the stream, naming the honoured filter.
func AckMessage(id protocol.ID, honoured protocol.SubscriptionFilter) []byte {
	p := protocol.SubscriptionsAckParams{
		Meta:          protocol.Meta{protocol.MetaSubscriptionID: json.RawMessage(id.AppendJSON(nil))},
		Notifications: honoured,
	}
	b, _ := protocol.EncodeNotification(protocol.NotificationSubscriptionsAck, &p)
	return b
}

// FinalMessage is the SubscriptionsListenResult, the response to the
// listen request that ends subscription id gracefully.
func FinalMessage(id protocol.ID) []byte {
	b := []byte(`{"resultType":"complete","_meta":{"` + protocol.MetaSubscriptionID + `":`)
	b = id.AppendJSON(b)
	return protocol.AppendResponse(nil, id, append(b, "}}"...))
}

// AppendTagged appends a notification of a listen stream to b: method, the
// uri (for notifications/resources/updated; "" for list changes) and the
// subscription id (idJSON, the listen request's id as JSON) in _meta.
func AppendTagged(b, idJSON []byte, method, uri string) []byte {
	b = append(b, `{"jsonrpc":"2.0","method":"`...)
	b = append(b, method...)
	b = append(b, `","params":{`...)
	if uri != "" {
		u, _ := json.Marshal(uri)
		b = append(b, `"uri":`...)
		b = append(b, u...)
		b = append(b, ',')
	}
	b = append(b, `"_meta":{"`+protocol.MetaSubscriptionID+`":`...)
	b = append(b, idJSON...)
	return append(b, "}}}"...)
}

// ListChangedMethod returns the notification method of a list_changed kind
// ("tools", "prompts" or "resources") and whether filter asks for it; ok is
// false for an unknown kind.
func ListChangedMethod(filter *protocol.SubscriptionFilter, kind string) (method string, wanted, ok bool) {
	wants, ok := listKinds[kind]
	if !ok {
		return "", false, false
	}
	return "notifications/" + kind + "/list_changed", wants(filter), true
}
