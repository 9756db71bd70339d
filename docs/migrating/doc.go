// Package migrating holds the code of docs/migrating.md: the same server
// written three times, with the official go-sdk (package gosdk), with
// mark3labs/mcp-go (package mcpgo) and with mcpfleet (package mcpfleet).
// Every code block of the guide is an excerpt of these files, and the
// module's tests check that it still is (doc_test.go) and drive each
// version with the go-sdk client in both protocol eras (the server_test.go
// of each package, through internal/sdkclient), so that what the guide
// says of each is what the tests observe.
package migrating
