package mcpgo

import (
	"context"
	"errors"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// CountIn is the input of word_count: its JSON schema is derived from the
// type (fields without omitempty are required; the jsonschema tag is the
// description).
type CountIn struct {
	Text      string `json:"text" jsonschema:"the text to count"`
	MinLength int    `json:"minLength,omitempty" jsonschema:"count only words at least this long"`
}

// CountOut is its structured output; the output schema is derived from it.
type CountOut struct {
	Words int `json:"words" jsonschema:"the number of words"`
	Lines int `json:"lines" jsonschema:"the number of lines"`
}

// AddTypedTool registers word_count.
func AddTypedTool(s *server.MCPServer) {
	s.AddTool(mcp.NewTool("word_count", mcp.WithDescription("Counts the words and lines of a text"),
		mcp.WithInputSchema[CountIn](), mcp.WithOutputSchema[CountOut]()),
		mcp.NewStructuredToolHandler(func(ctx context.Context, req mcp.CallToolRequest, in CountIn) (CountOut, error) {
			if strings.TrimSpace(in.Text) == "" {
				return CountOut{}, errors.New("the text is empty") // a tool error (isError)
			}
			return count(in), nil
		}))
}

// count does the tool's work.
func count(in CountIn) CountOut {
	out := CountOut{Lines: strings.Count(in.Text, "\n") + 1}
	for _, w := range strings.Fields(in.Text) {
		if len(w) >= in.MinLength {
			out.Words++
		}
	}
	return out
}
