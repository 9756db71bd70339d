package stream

import (
	"encoding/hex"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// eventIDGrammar is what ParseEventID accepts, written independently of
// it: a GET stream ("g" + base-36 characters) or a POST stream ("p" +
// lowercase hex of a non-empty frontend id + "x" + a base-36 token), ":",
// and a decimal index. ParseEventID adds: at most MaxEventIDLen bytes, and an index
// that fits in a uint64.
var eventIDGrammar = regexp.MustCompile(`^(g[0-9a-z]+|p(?:[0-9a-f]{2})+x[0-9a-z]+):([0-9]+)$`)

// FuzzParseEventID checks ParseEventID, which reads the client's
// Last-Event-ID, against eventIDGrammar (it accepts exactly those ids),
// and that what it accepts round-trips: FormatEventID writes the same id
// back (up to leading zeros in the index), which parses to the same
// values, and a POST stream splits into the frontend and bus stream that
// PostStreamID joins back.
func FuzzParseEventID(f *testing.F) {
	for _, s := range []string{
		"g0123456789abcdef:0", "g0123456789abcdef:42", "g1:18446744073709551615", "g1:18446744073709551616",
		PostStreamID("fe-1", "abc123") + ":7", PostStreamID("\x00\xff", "x") + ":0", "p6x1:1", "p66x:1",
		"pabcx1:1", "p6x:1", "px1:1", "p66xab:007", "g12:-1", "g12:+1", "g12:1_0", "g12: 1", "gAB:1",
		"q123:1", "g:1", ":1", "g1:", "g1", "", "g1:2:3", "g1:2\n", "g\u00e91:1", "p6Fx1:1",
		"g" + strings.Repeat("a", 125) + ":1", "g" + strings.Repeat("a", 126) + ":1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		stream, idx, ok := ParseEventID(s)
		want := len(s) <= MaxEventIDLen
		var digits string
		if sub := eventIDGrammar.FindStringSubmatch(s); sub == nil {
			want = false
		} else {
			digits = sub[2]
			if _, err := strconv.ParseUint(digits, 10, 64); err != nil {
				want = false
			}
		}
		if ok != want {
			t.Fatalf("ParseEventID(%q) = %q, %d, %v; want ok=%v", s, stream, idx, ok, want)
		}
		if !ok {
			if stream != "" || idx != 0 {
				t.Fatalf("ParseEventID(%q) refused it but returned %q, %d", s, stream, idx)
			}
			return
		}
		canon := strings.TrimLeft(digits, "0")
		if canon == "" {
			canon = "0"
		}
		id := FormatEventID(stream, idx)
		if id != s[:len(s)-len(digits)]+canon {
			t.Fatalf("ParseEventID(%q) = %q, %d, but FormatEventID gives %q", s, stream, idx, id)
		}
		if s2, idx2, ok2 := ParseEventID(id); !ok2 || s2 != stream || idx2 != idx {
			t.Fatalf("ParseEventID(%q) = %q, %d, %v; want %q, %d", id, s2, idx2, ok2, stream, idx)
		}
		if stream[0] == 'p' {
			fe, bus, ok := SplitPostStream(stream)
			if !ok || fe == "" || bus == "" || PostStreamID(fe, bus) != stream {
				t.Fatalf("SplitPostStream(%q) = %q, %q, %v: does not invert PostStreamID", stream, fe, bus, ok)
			}
		}
	})
}

// FuzzEventIDRoundTrip checks the other direction: every event id the
// frontend writes is one it reads back. POST stream ids embed the
// frontend's id (Options.ID, any non-empty string, random when not set)
// and the bus stream id (strconv.FormatUint(rand.Uint64(), 36)); GET
// stream ids come from NewStreamID.
func FuzzEventIDRoundTrip(f *testing.F) {
	for _, s := range []struct {
		fe       string
		bus, idx uint64
		get      bool
	}{
		{"fe-1", 12345, 0, false},
		{"0123456789ab", 1<<64 - 1, 1<<64 - 1, false},
		{"mcpfleet-frontend-6f7c9d8b4-x2k4z", 1<<64 - 1, 1 << 40, false},
		{"\x00", 0, 1, false},
		{"x", 35, 36, false},
		{"", 1, 1, true},
		{"", 1<<64 - 1, 1<<64 - 1, true},
	} {
		f.Add(s.fe, s.bus, s.idx, s.get)
	}
	f.Fuzz(func(t *testing.T, fe string, busRand, idx uint64, get bool) {
		var stream string
		if get {
			var b [8]byte
			for i := range b {
				b[i] = byte(busRand >> (8 * i))
			}
			stream = "g" + hex.EncodeToString(b[:]) // NewStreamID with these random bytes
			if n := NewStreamID('g'); len(n) != len(stream) {
				t.Fatalf("NewStreamID('g') = %q; the test assumes 8 random bytes", n)
			}
		} else {
			if fe == "" || len(fe) > MaxFrontendIDLen {
				return // New never runs with an empty or longer id
			}
			bus := strconv.FormatUint(busRand, 36)
			stream = PostStreamID(fe, bus)
			if gfe, gbus, ok := SplitPostStream(stream); !ok || gfe != fe || gbus != bus {
				t.Fatalf("SplitPostStream(PostStreamID(%q, %q)) = %q, %q, %v", fe, bus, gfe, gbus, ok)
			}
		}
		id := FormatEventID(stream, idx)
		if s, i, ok := ParseEventID(id); !ok || s != stream || i != idx {
			t.Fatalf("ParseEventID(FormatEventID(%q, %d) = %q) = %q, %d, %v: the frontend refuses its own event id (%d bytes)", stream, idx, id, s, i, ok, len(id))
		}
	})
}
