// Package testutil starts the real dependencies tests need. A missing
// dependency fails the test with the command that installs it: a skipped
// test proves nothing.
package testutil
