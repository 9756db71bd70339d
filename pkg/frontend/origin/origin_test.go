package origin

import "testing"

func TestAllowList(t *testing.T) {
	def, err := New(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for host, want := range map[string]bool{"localhost:8080": true, "127.0.0.1": true, "[::1]:9": true, "evil.example.com": false, "127.0.0.1.evil.com": false} {
		if got := def.HostOK(host); got != want {
			t.Errorf("HostOK(%q) = %v", host, got)
		}
	}
	for origin, want := range map[string]bool{"": true, "http://localhost:3000": true, "https://127.0.0.1": true, "http://evil.example.com": false, "null": false, "file://localhost": false} {
		if got := def.OriginOK(origin); got != want {
			t.Errorf("OriginOK(%q) = %v", origin, got)
		}
	}
	custom, err := New([]string{"mcp.example.com"}, []string{"https://app.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	if !custom.HostOK("MCP.example.com:443") || custom.HostOK("localhost") || !custom.OriginOK("https://app.example.com/") || custom.OriginOK("http://app.example.com") {
		t.Error("custom allow-list")
	}
	if _, err := New([]string{"bad host/x"}, nil); err == nil {
		t.Error("an invalid host was accepted")
	}
}
