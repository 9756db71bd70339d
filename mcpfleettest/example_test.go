package mcpfleettest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mcpfleet/mcpfleet/mcpfleettest"
	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

type orderIn struct {
	Item string `json:"item"`
}

// newShop is the server under test: a tool that asks the user to confirm.
func newShop() *mcp.Server {
	srv := mcp.NewServer(protocol.Implementation{Name: "shop", Version: "1.0.0"}, nil)
	_ = mcp.AddTool(srv, &protocol.Tool{Name: "order"}, func(ctx context.Context, req *mcp.Request, in orderIn) (*protocol.CallToolResult, any, error) {
		res, err := req.Elicit(ctx, &protocol.ElicitParams{
			Message:         "Order " + in.Item + "?",
			RequestedSchema: json.RawMessage(`{"type":"object","properties":{}}`),
		})
		if err != nil {
			return nil, nil, err // on 2026-07-28, this ends the round: the client answers and retries
		}
		return mcp.TextResult(res.Action + ": " + in.Item), nil, nil
	})
	return srv
}

// A server tested in both eras with the same code. In a test, use
// NewServer(t, srv, nil) and ts.Connect(t, opts): they fail the test on
// error and close at cleanup. StartServer and NewClient, used here, are
// their variants without a testing.TB.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ts, err := mcpfleettest.StartServer(ctx, newShop(), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ts.Close()
	for _, era := range mcpfleettest.Eras() {
		c, err := mcpfleettest.NewClient(ctx, ts.URL, &mcpfleettest.ClientOptions{
			Era: era,
			// Answers the tool's req.Elicit: a server-to-client request
			// on legacy, an input_required round on modern.
			Elicit: func(ctx context.Context, p *protocol.ElicitParams) (*protocol.ElicitResult, error) {
				fmt.Println("asked:", p.Message)
				return &protocol.ElicitResult{Action: protocol.ElicitAccept, Content: map[string]any{}}, nil
			},
		})
		if err != nil {
			fmt.Println(err)
			return
		}
		res, err := c.CallTool(ctx, "order", orderIn{Item: "tea"})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%s: %s\n", era, res.Content[0].(*protocol.TextContent).Text)
		_ = c.Close(ctx)
	}
	// Output:
	// asked: Order tea?
	// legacy: accept: tea
	// asked: Order tea?
	// modern: accept: tea
}

// Waiting for a change notification: Listen returns once the stream is
// active, so nothing raised afterwards is missed.
func ExampleClient_Listen() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv := newShop()
	ts, err := mcpfleettest.StartServer(ctx, srv, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ts.Close()
	c, err := mcpfleettest.NewClient(ctx, ts.URL, &mcpfleettest.ClientOptions{Era: protocol.EraModern})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close(ctx)
	s, err := c.Listen(ctx, &protocol.SubscriptionFilter{ToolsListChanged: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	_ = srv.AddTool(&protocol.Tool{Name: "refund"}, func(ctx context.Context, req *mcp.Request, _ json.RawMessage) (*protocol.CallToolResult, error) {
		return mcp.TextResult("refunded"), nil
	})
	n, err := s.WaitFor(ctx, protocol.NotificationToolsListChanged)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(n.Method)
	tools, _ := c.ListTools(ctx)
	for _, t := range tools {
		fmt.Println(t.Name)
	}
	// Output:
	// notifications/tools/list_changed
	// order
	// refund
}
