package testenv

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

func TestSchemasValidate(t *testing.T) {
	s := SchemasFor(t, "2025-11-25")
	if err := s.ValidateMessage("tools/call", []byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"x"}]}}`)); err != nil {
		t.Fatalf("valid result rejected: %v", err)
	}
	if err := s.ValidateMessage("tools/call", []byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text"}]}}`)); err == nil {
		t.Fatal("a text block without text was accepted")
	}
	if err := s.ValidateMessage("", []byte(`{"jsonrpc":"2.0","id":null,"result":{}}`)); err == nil {
		t.Fatal("a null id was accepted")
	}
	m := SchemasFor(t, "2026-07-28")
	if err := m.ValidateMessage("tools/list", []byte(`{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}`)); err == nil {
		t.Fatal("a 2026 result without resultType was accepted")
	}
}

// fatalTB records the first Fatalf and stops its goroutine, as a test would.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// A schema file missing from testdata/spec fails the test, naming the file.
func TestSchemasForMissingFails(t *testing.T) {
	f := &fatalTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		SchemasFor(f, "1999-01-01")
		t.Error("SchemasFor returned for a version without a schema file")
	}()
	<-done
	if !strings.Contains(f.msg, "testdata/spec/1999-01-01/schema.json") {
		t.Fatalf("Fatalf message %q does not name the missing file", f.msg)
	}
}
