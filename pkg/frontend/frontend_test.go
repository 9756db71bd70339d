package frontend

import "testing"

func TestAllowList(t *testing.T) {
	def, err := newAllowList(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for host, want := range map[string]bool{"localhost:8080": true, "127.0.0.1": true, "[::1]:9": true, "evil.example.com": false, "127.0.0.1.evil.com": false} {
		if got := def.hostOK(host); got != want {
			t.Errorf("hostOK(%q) = %v", host, got)
		}
	}
	for origin, want := range map[string]bool{"": true, "http://localhost:3000": true, "https://127.0.0.1": true, "http://evil.example.com": false, "null": false, "file://localhost": false} {
		if got := def.originOK(origin); got != want {
			t.Errorf("originOK(%q) = %v", origin, got)
		}
	}
	custom, err := newAllowList([]string{"mcp.example.com"}, []string{"https://app.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	if !custom.hostOK("MCP.example.com:443") || custom.hostOK("localhost") || !custom.originOK("https://app.example.com/") || custom.originOK("http://app.example.com") {
		t.Error("custom allow-list")
	}
	if _, err := newAllowList([]string{"bad host/x"}, nil); err == nil {
		t.Error("an invalid host was accepted")
	}
}
