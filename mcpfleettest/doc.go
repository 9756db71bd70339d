// Package mcpfleettest tests an MCP server written with [mcp] over the
// wire, in both protocol eras, as net/http/httptest tests an HTTP handler.
//
// [NewServer] serves an *mcp.Server with the all-in-one of `serve`
// (mcpfleet.NewHandler: in-process bus, in-process worker, in-memory store)
// on a random loopback port until the test ends. [Server.Connect] (or
// [Dial], for any endpoint URL) returns a [Client] in the era
// [ClientOptions] ask for: legacy (2025-11-25, the zero value: an
// initialized session) or modern (2026-07-28: stateless requests with
// their _meta). The same test code then runs in both:
//
//	func TestGreet(t *testing.T) {
//		srv := mcp.NewServer(protocol.Implementation{Name: "hello", Version: "1.0.0"}, nil)
//		mcp.AddTool(srv, &protocol.Tool{Name: "greet"}, greet)
//		ts := mcpfleettest.NewServer(t, srv, nil)
//		for _, era := range mcpfleettest.Eras() {
//			t.Run(era.String(), func(t *testing.T) {
//				c := ts.Connect(t, &mcpfleettest.ClientOptions{
//					Era: era,
//					Elicit: func(ctx context.Context, p *protocol.ElicitParams) (*protocol.ElicitResult, error) {
//						return &protocol.ElicitResult{Action: protocol.ElicitAccept, Content: map[string]any{"ok": true}}, nil
//					},
//				})
//				res, err := c.CallTool(t.Context(), "greet", map[string]any{"name": "Ada"})
//				if err != nil {
//					t.Fatal(err)
//				}
//				// check res.Content, res.StructuredContent …
//			})
//		}
//	}
//
// What a handler asks of the client — req.Elicit, req.Sample,
// req.ListRoots — is answered by the ClientOptions handlers in both eras:
// a legacy server-to-client request on the POST's stream gets a POST of
// the response; a modern input_required result gets a retry carrying the
// inputResponses and the requestState, round after round. Progress and
// log notifications of a call reach ClientOptions.OnProgress and OnLog
// (or [WithProgress]) before the call returns. Change notifications
// (list_changed, resources/updated) arrive on a [Client.Listen] stream:
// the session's GET stream (legacy) or a subscriptions/listen stream
// (modern).
//
// Client methods never fail the test: they return errors, so they can be
// called from other goroutines. A JSON-RPC error response is a
// *protocol.Error; an HTTP status that is not 2xx is a [*StatusError]
// carrying the body's JSON-RPC error, which errors.As also finds.
//
// [StartServer] and [NewClient] are the variants without a testing.TB
// (examples, TestMain): their caller closes what they return.
package mcpfleettest
