package bus_test

import (
	"math"
	"testing"

	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

func TestServerRequestIDRoundTrip(t *testing.T) {
	tests := []struct {
		worker string
		seq    uint64
		want   string
	}{
		{"w1", 0, "mcpf-w1-0"},
		{"w1", 42, "mcpf-w1-42"},
		{"worker-1-abc", 7, "mcpf-worker-1-abc-7"},
		{"trailing-", 3, "mcpf-trailing--3"},
		{"-", 1, "mcpf---1"},
		{"host.example:9000", math.MaxUint64, "mcpf-host.example:9000-18446744073709551615"},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			id := bus.ServerRequestID(tc.worker, tc.seq)
			if !id.IsString() || id.Str() != tc.want {
				t.Fatalf("ServerRequestID(%q, %d) = %v, want string %q", tc.worker, tc.seq, id, tc.want)
			}
			got, ok := bus.ParseServerRequestID(id)
			if !ok || got != tc.worker {
				t.Errorf("ParseServerRequestID(%v) = %q, %v; want %q, true", id, got, ok, tc.worker)
			}
		})
	}
}

func TestServerRequestIDsAreDistinct(t *testing.T) {
	seen := map[protocol.ID]bool{}
	for _, w := range []string{"a", "a-1", "a-11", "b"} {
		for seq := uint64(0); seq < 20; seq++ {
			id := bus.ServerRequestID(w, seq)
			if seen[id] {
				t.Fatalf("duplicate id %v", id)
			}
			seen[id] = true
		}
	}
}

func TestParseServerRequestIDRejectsForeignIDs(t *testing.T) {
	tests := []struct {
		name string
		id   protocol.ID
	}{
		{"absent", protocol.ID{}},
		{"int id", protocol.Int64ID(5)},
		{"int id zero", protocol.Int64ID(0)},
		{"client string id", protocol.StringID("req-1")},
		{"other prefix", protocol.StringID("mcpx-w1-1")},
		{"upper-case prefix", protocol.StringID("MCPF-w1-1")},
		{"prefix not at start", protocol.StringID("x-mcpf-w1-1")},
		{"prefix only", protocol.StringID("mcpf-")},
		{"missing seq", protocol.StringID("mcpf-w1")},
		{"empty seq", protocol.StringID("mcpf-w1-")},
		{"empty worker", protocol.StringID("mcpf--1")},
		{"non-numeric seq", protocol.StringID("mcpf-w1-abc")},
		{"signed seq", protocol.StringID("mcpf-w1-+1")},
		{"seq with a suffix", protocol.StringID("mcpf-w1-1x")},
		{"seq with a space", protocol.StringID("mcpf-w1- 1")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if w, ok := bus.ParseServerRequestID(tc.id); ok || w != "" {
				t.Errorf("ParseServerRequestID(%v) = %q, %v; want \"\", false", tc.id, w, ok)
			}
		})
	}
}

func TestCancelKeys(t *testing.T) {
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"legacy string id", bus.CancelKeyLegacy("s1", protocol.StringID("1")), `s|s1|"1"`},
		{"legacy int id", bus.CancelKeyLegacy("s1", protocol.Int64ID(1)), `s|s1|1`},
		{"stream", bus.CancelKeyStream("fe1", "st1"), "f|fe1|st1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("got %q, want %q", tc.got, tc.want)
			}
		})
	}
	if bus.CancelKeyLegacy("s", protocol.StringID("1")) == bus.CancelKeyLegacy("s", protocol.Int64ID(1)) {
		t.Error(`the string id "1" and the integer id 1 share a cancel key`)
	}
	if bus.CancelKeyLegacy("a", protocol.Int64ID(1)) == bus.CancelKeyLegacy("b", protocol.Int64ID(1)) {
		t.Error("two sessions share a cancel key for the same id")
	}
}
