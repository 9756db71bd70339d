package testenv

import "testing"

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
