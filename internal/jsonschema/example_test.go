package jsonschema_test

import (
	"encoding/json"
	"fmt"

	"github.com/mcpfleet/mcpfleet/internal/jsonschema"
)

func Example() {
	type echoArgs struct {
		Text string `json:"text" jsonschema:"the text to echo"`
		MS   int    `json:"ms,omitempty" jsonschema:"delay in milliseconds"`
	}
	schema, err := jsonschema.ForObject[echoArgs]()
	if err != nil {
		panic(err)
	}
	fmt.Println(string(schema))

	v, err := jsonschema.Compile(schema)
	if err != nil {
		panic(err)
	}
	fmt.Println(v.ValidateJSON(json.RawMessage(`{"text":"hi","ms":10}`)))
	fmt.Println(v.ValidateJSON(json.RawMessage(`{"ms":"10"}`)))
	// Output:
	// {"type":"object","properties":{"text":{"type":"string","description":"the text to echo"},"ms":{"type":"integer","description":"delay in milliseconds"}},"required":["text"]}
	// <nil>
	// missing required property "text"; /ms: got string, want integer
}
