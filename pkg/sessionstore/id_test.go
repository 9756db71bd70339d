package sessionstore

import (
	"encoding/base64"
	"strings"
	"testing"
)

func TestNewID(t *testing.T) {
	seen := make(map[string]bool)
	for range 1000 {
		id := NewID()
		if len(id) != 32 {
			t.Fatalf("NewID() = %q, length %d, want 32", id, len(id))
		}
		if !ValidID(id) {
			t.Fatalf("NewID() = %q is not ValidID", id)
		}
		b, err := base64.RawURLEncoding.DecodeString(id)
		if err != nil || len(b) != 24 {
			t.Fatalf("NewID() = %q does not decode to 24 bytes: %d, %v", id, len(b), err)
		}
		if seen[id] {
			t.Fatalf("NewID() repeated %q", id)
		}
		seen[id] = true
	}
}

var validIDTests = []struct {
	name string
	id   string
	want bool
}{
	{"generated", "hJ3k_-Zq9w0aLmN4oPq7rStUvWxYz012", true},
	{"single byte", "a", true},
	{"all visible ASCII", "!\"#$%&'()*+,-./09:;<=>?@AZ[\\]^_`az{|}~", true},
	{"max length", strings.Repeat("x", MaxIDLen), true},
	{"empty", "", false},
	{"too long", strings.Repeat("x", MaxIDLen+1), false},
	{"space", "abc def", false},
	{"tab", "abc\tdef", false},
	{"CRLF", "abc\r\nSet-Cookie: x", false},
	{"NUL", "abc\x00", false},
	{"DEL", "abc\x7f", false},
	{"non-ASCII", "séssion", false},
	{"high byte", "abc\xff", false},
}

func TestValidID(t *testing.T) {
	for _, tt := range validIDTests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ValidID(tt.id); got != tt.want {
				t.Errorf("ValidID(%q) = %v, want %v", tt.id, got, tt.want)
			}
		})
	}
}

func FuzzValidID(f *testing.F) {
	for _, tt := range validIDTests {
		f.Add(tt.id)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := len(s) > 0 && len(s) <= MaxIDLen
		for _, c := range []byte(s) {
			want = want && c >= 0x21 && c <= 0x7e
		}
		if got := ValidID(s); got != want {
			t.Errorf("ValidID(%q) = %v, want %v", s, got, want)
		}
		if short := shortID(s); len(s) > 8 && short != s[:8]+"…" {
			t.Errorf("shortID(%q) = %q, want its first 8 bytes only", s, short)
		}
	})
}
