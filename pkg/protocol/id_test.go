package protocol_test

import (
	"encoding/json"
	"errors"
	"math"
	"testing"

	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

func TestIDJSONRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		id   protocol.ID
		json string
	}{
		{"string", protocol.StringID("abc"), `"abc"`},
		{"empty string", protocol.StringID(""), `""`},
		{"string of digits", protocol.StringID("1"), `"1"`},
		{"string needing escapes", protocol.StringID("a\"b\\c\n<&>é"), `"a\"b\\c\n\u003c\u0026\u003eé"`},
		{"zero", protocol.Int64ID(0), `0`},
		{"negative", protocol.Int64ID(-12), `-12`},
		{"max int64", protocol.Int64ID(math.MaxInt64), `9223372036854775807`},
		{"min int64", protocol.Int64ID(math.MinInt64), `-9223372036854775808`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			raw, err := json.Marshal(tc.id)
			if err != nil {
				t.Fatalf("Marshal: %v", err)
			}
			if string(raw) != tc.json {
				t.Errorf("Marshal = %s, want %s", raw, tc.json)
			}
			if got := string(tc.id.AppendJSON([]byte("x"))); got != "x"+tc.json {
				t.Errorf("AppendJSON = %s, want x%s", got, tc.json)
			}
			var back protocol.ID
			if err := json.Unmarshal(raw, &back); err != nil {
				t.Fatalf("Unmarshal(%s): %v", raw, err)
			}
			if back != tc.id {
				t.Errorf("round trip = %v, want %v", back, tc.id)
			}
			// Inside a struct, as notifications/cancelled carries it.
			p, err := json.Marshal(protocol.CancelledParams{RequestID: tc.id})
			if err != nil {
				t.Fatalf("Marshal(CancelledParams): %v", err)
			}
			var cp protocol.CancelledParams
			if err := json.Unmarshal(p, &cp); err != nil {
				t.Fatalf("Unmarshal(%s): %v", p, err)
			}
			if cp.RequestID != tc.id {
				t.Errorf("requestId round trip = %v, want %v", cp.RequestID, tc.id)
			}
		})
	}
}

func TestIDUnmarshalJSON(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    protocol.ID
		wantErr bool
	}{
		{name: "int", in: `5`, want: protocol.Int64ID(5)},
		{name: "padded", in: " 5\n", want: protocol.Int64ID(5)},
		{name: "minus zero", in: `-0`, want: protocol.Int64ID(0)},
		{name: "1.0", in: `1.0`, want: protocol.Int64ID(1)},
		{name: "1e2", in: `1e2`, want: protocol.Int64ID(100)},
		{name: "1E+2", in: `1E+2`, want: protocol.Int64ID(100)},
		{name: "100e-2", in: `100e-2`, want: protocol.Int64ID(1)},
		{name: "-2.50e1", in: `-2.50e1`, want: protocol.Int64ID(-25)},
		{name: "0.000e5", in: `0.000e5`, want: protocol.Int64ID(0)},
		{name: "exact beyond float precision", in: `12345678901234567.0`, want: protocol.Int64ID(12345678901234567)},
		{name: "max int64 with a fraction part", in: `9223372036854775807.000`, want: protocol.Int64ID(math.MaxInt64)},
		{name: "min int64 with an exponent", in: `-922337203685477580.8e1`, want: protocol.Int64ID(math.MinInt64)},
		{name: "string", in: `"x"`, want: protocol.StringID("x")},
		{name: "string with escapes", in: `"\u0041\n"`, want: protocol.StringID("A\n")},
		{name: "null", in: `null`, wantErr: true},
		{name: "empty", in: ``, wantErr: true},
		{name: "true", in: `true`, wantErr: true},
		{name: "object", in: `{}`, wantErr: true},
		{name: "array", in: `[1]`, wantErr: true},
		{name: "fraction", in: `1.5`, wantErr: true},
		{name: "small fraction", in: `1e-3`, wantErr: true},
		{name: "fraction beyond float precision", in: `1.0000000000000000001`, wantErr: true},
		{name: "fraction near 2^53", in: `9007199254740990.5`, wantErr: true},
		{name: "above int64", in: `9223372036854775808`, wantErr: true},
		{name: "above int64 with a fraction part", in: `9223372036854775808.0`, wantErr: true},
		{name: "below int64", in: `-9223372036854775809`, wantErr: true},
		{name: "1e19", in: `1e19`, wantErr: true},
		{name: "huge exponent", in: `1e99999999999999999999`, wantErr: true},
		{name: "hex float", in: `0x1p4`, wantErr: true},
		{name: "infinity", in: `-Inf`, wantErr: true},
		{name: "unterminated string", in: `"abc`, wantErr: true},
		{name: "two numbers", in: `1 2`, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got protocol.ID
			err := got.UnmarshalJSON([]byte(tc.in))
			if tc.wantErr {
				if !errors.Is(err, protocol.ErrInvalidID) {
					t.Fatalf("UnmarshalJSON(%s) = %v (id %v), want ErrInvalidID", tc.in, err, got)
				}
				if got.IsValid() {
					t.Errorf("a rejected id left %v behind", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("UnmarshalJSON(%s) = %v", tc.in, err)
			}
			if got != tc.want {
				t.Errorf("UnmarshalJSON(%s) = %v, want %v", tc.in, got, tc.want)
			}
		})
	}
}

func TestIDAccessors(t *testing.T) {
	tests := []struct {
		name     string
		id       protocol.ID
		valid    bool
		isString bool
		str      string
		num      int64
		text     string
	}{
		{"zero", protocol.ID{}, false, false, "", 0, "<absent>"},
		{"string one", protocol.StringID("1"), true, true, "1", 0, `"1"`},
		{"int one", protocol.Int64ID(1), true, false, "", 1, `1`},
		{"empty string", protocol.StringID(""), true, true, "", 0, `""`},
		{"int zero", protocol.Int64ID(0), true, false, "", 0, `0`},
		{"quotes", protocol.StringID(`a"b`), true, true, `a"b`, 0, `"a\"b"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.id.IsValid(); got != tc.valid {
				t.Errorf("IsValid() = %v, want %v", got, tc.valid)
			}
			if got := tc.id.IsString(); got != tc.isString {
				t.Errorf("IsString() = %v, want %v", got, tc.isString)
			}
			if got := tc.id.Str(); got != tc.str {
				t.Errorf("Str() = %q, want %q", got, tc.str)
			}
			if got := tc.id.Int(); got != tc.num {
				t.Errorf("Int() = %d, want %d", got, tc.num)
			}
			if got := tc.id.String(); got != tc.text {
				t.Errorf("String() = %s, want %s", got, tc.text)
			}
		})
	}
}

func TestIDDistinguishesStringFromInt(t *testing.T) {
	s, n := protocol.StringID("1"), protocol.Int64ID(1)
	if s == n {
		t.Fatal(`StringID("1") == Int64ID(1)`)
	}
	if s.String() == n.String() {
		t.Errorf(`String() collides: both %s`, s.String())
	}
	if zero := (protocol.ID{}); zero == protocol.Int64ID(0) || zero == protocol.StringID("") {
		t.Error("the zero ID equals a present id")
	}
}

func TestZeroIDMarshalsNull(t *testing.T) {
	raw, err := json.Marshal(protocol.ID{})
	if err != nil {
		t.Fatal(err)
	}
	if string(raw) != "null" {
		t.Errorf("Marshal(zero ID) = %s, want null", raw)
	}
	var back protocol.ID
	if err := json.Unmarshal(raw, &back); !errors.Is(err, protocol.ErrInvalidID) {
		t.Errorf("Unmarshal(null) = %v, want ErrInvalidID", err)
	}
}
