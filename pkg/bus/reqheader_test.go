package bus_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"slices"
	"testing"

	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// everyField is a header with every field set, strings holding bytes of
// every kind, and each nil-able collection non-nil (empty or not).
func everyField() *bus.RequestHeader {
	odd := "a\x00\n\xff\"\\é"
	return &bus.RequestHeader{
		Era: protocol.EraModern, Method: "tools/call" + odd, ID: protocol.StringID(odd), Target: "t" + odd,
		Frontend: "fe" + odd, Stream: "st" + odd, Principal: "p" + odd, DeadlineMs: math.MinInt64,
		Traceparent: "tp" + odd, Tracestate: "ts" + odd,
		ParamHeaders: map[string]string{"": "", "a": odd, odd: "b"},
		Session: &bus.SessionInfo{
			ID: "s" + odd, ProtocolVersion: "v" + odd, LogLevel: protocol.LoggingLevel("l" + odd),
			ClientInfo: &protocol.Implementation{
				Name: "n" + odd, Version: "v", Title: "t", Description: "d", WebsiteURL: "w",
				Icons: []protocol.Icon{
					{Src: "s", MimeType: "m", Sizes: []string{"48x48", odd}, Theme: "dark"},
					{Src: "s2", Sizes: []string{}},
					{},
				},
			},
			ClientCapabilities: &protocol.ClientCapabilities{
				Experimental: map[string]json.RawMessage{"x": json.RawMessage(`{"a":1}`), "e": json.RawMessage{}, "n": nil},
				Roots:        &protocol.RootsCapability{ListChanged: true},
				Sampling:     &protocol.SamplingCapability{Context: &struct{}{}, Tools: &struct{}{}},
				Elicitation:  &protocol.ElicitationCapability{Form: &struct{}{}, URL: &struct{}{}},
				Tasks:        json.RawMessage(`{"requests":{}}`),
				Extensions:   map[string]json.RawMessage{},
			},
		},
		Listen: true, SessionStream: true, Tasks: true, CheckParamHeaders: true,
	}
}

// Every field, ID of every kind, and nil against empty round-trip exactly
// through the binary header.
func TestBinaryHeaderRoundTrip(t *testing.T) {
	full := everyField()
	ids := []protocol.ID{{}, protocol.StringID(""), protocol.StringID("x"), protocol.Int64ID(0), protocol.Int64ID(math.MaxInt64), protocol.Int64ID(math.MinInt64), protocol.Int64ID(-1)}
	var hs []*bus.RequestHeader
	for _, id := range ids {
		h := *full
		h.ID = id
		hs = append(hs, &h)
	}
	bare := *full
	bare.Session = &bus.SessionInfo{}
	bare.ParamHeaders = map[string]string{}
	hs = append(hs, &bare, &bus.RequestHeader{Session: &bus.SessionInfo{
		ClientInfo:         &protocol.Implementation{Icons: []protocol.Icon{}},
		ClientCapabilities: &protocol.ClientCapabilities{Roots: &protocol.RootsCapability{}, Sampling: &protocol.SamplingCapability{}, Elicitation: &protocol.ElicitationCapability{}, Tasks: json.RawMessage{}},
	}}, &bus.RequestHeader{Era: 255, DeadlineMs: math.MaxInt64})
	for i, want := range hs {
		env, err := bus.EncodeRequest(want, []byte("\x01{}"))
		if err != nil {
			t.Fatal(err)
		}
		got, msg, err := bus.DecodeRequest(env)
		if err != nil {
			t.Fatalf("%d: DecodeRequest: %v", i, err)
		}
		if !reflect.DeepEqual(got, want) || string(msg) != "\x01{}" {
			t.Errorf("%d: decoded %+v, %q\nwant %+v", i, got, msg, want)
		}
	}
}

// EncodeRequestAs writes the JSON header of earlier versions for format 0
// and the binary one for 1 and later formats; both decode.
func TestEncodeRequestAs(t *testing.T) {
	for _, tc := range []struct {
		format int
		first  byte
	}{{-1, '{'}, {0, '{'}, {1, 1}, {bus.RequestFormat + 1, 1}} {
		env, err := bus.EncodeRequestAs(tc.format, fullHeader(), []byte("{}"))
		if err != nil {
			t.Fatal(err)
		}
		if env[0] != tc.first {
			t.Errorf("format %d: envelope starts with %q, want %q", tc.format, env[0], tc.first)
		}
		if h, msg, err := bus.DecodeRequest(env); err != nil || !reflect.DeepEqual(h, fullHeader()) || string(msg) != "{}" {
			t.Errorf("format %d: decoded %+v, %q, %v", tc.format, h, msg, err)
		}
	}
}

// The binary header's fields are these: a field added to one of these
// types must be added to the encoding (reqheader.go) and here.
func TestRequestHeaderFieldsPinned(t *testing.T) {
	pinned := map[reflect.Type][]string{
		reflect.TypeFor[bus.RequestHeader](): {"Era", "Method", "ID", "Target", "Frontend", "Stream", "Session", "Principal", "DeadlineMs",
			"Traceparent", "Tracestate", "ParamHeaders", "Listen", "SessionStream", "Tasks", "CheckParamHeaders"},
		reflect.TypeFor[bus.SessionInfo]():                {"ID", "ProtocolVersion", "ClientInfo", "ClientCapabilities", "LogLevel"},
		reflect.TypeFor[protocol.Implementation]():        {"Name", "Version", "Title", "Description", "WebsiteURL", "Icons"},
		reflect.TypeFor[protocol.Icon]():                  {"Src", "MimeType", "Sizes", "Theme"},
		reflect.TypeFor[protocol.ClientCapabilities]():    {"Experimental", "Roots", "Sampling", "Elicitation", "Tasks", "Extensions"},
		reflect.TypeFor[protocol.RootsCapability]():       {"ListChanged"},
		reflect.TypeFor[protocol.SamplingCapability]():    {"Context", "Tools"},
		reflect.TypeFor[protocol.ElicitationCapability](): {"Form", "URL"},
	}
	for typ, want := range pinned {
		var got []string
		for i := range typ.NumField() {
			got = append(got, typ.Field(i).Name)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%v has the fields %q; the binary request header encodes %q: update pkg/bus/reqheader.go", typ, got, want)
		}
	}
}

// A truncated or corrupt binary header is ErrBadEnvelope, whatever byte
// it ends at.
func TestDecodeBinaryHeaderMalformed(t *testing.T) {
	env, err := bus.EncodeRequest(everyField(), nil)
	if err != nil {
		t.Fatal(err)
	}
	bodyLen := len(env) - 5
	for n := range len(env) {
		// Cut at n, length unchanged: the length says more than there is.
		if h, _, err := bus.DecodeRequest(env[:n]); !errors.Is(err, bus.ErrBadEnvelope) || h != nil {
			t.Errorf("cut at %d of %d: %+v, %v; want ErrBadEnvelope", n, len(env), h, err)
		}
		if n < 5 {
			continue
		}
		// A body cut at n and a length saying so: a field is missing.
		cut := bytes.Clone(env[:n])
		binary.BigEndian.PutUint32(cut[1:], uint32(n-5))
		if h, _, err := bus.DecodeRequest(cut); !errors.Is(err, bus.ErrBadEnvelope) || h != nil {
			t.Errorf("body cut at %d of %d: %+v, %v; want ErrBadEnvelope", n-5, bodyLen, h, err)
		}
	}
	body := func(b ...byte) []byte {
		out := binary.BigEndian.AppendUint32([]byte{1}, uint32(len(b)))
		return append(out, b...)
	}
	for name, in := range map[string][]byte{
		"bad id kind":          body(1, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0),
		"uvarint overflow":     body(1, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f),
		"huge param count":     body(1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f),
		"string past the body": body(1, 0, 0, 0, 0, 0, 9, 'x'),
		"snapshot past body":   body(1, 0, 0, 0, 0, 9, 0),
		"snapshot truncated":   body(1, 0, 0, 0, 0, 2, 1, 'x', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
	} {
		if h, _, err := bus.DecodeRequest(in); !errors.Is(err, bus.ErrBadEnvelope) || h != nil {
			t.Errorf("%s: %+v, %v; want ErrBadEnvelope", name, h, err)
		}
	}
}

// A later format may append fields to the body and set flag bits this
// version does not know: they are ignored.
func TestDecodeBinaryHeaderIgnoresLaterFields(t *testing.T) {
	want := everyField()
	env, err := bus.EncodeRequest(want, []byte("msg"))
	if err != nil {
		t.Fatal(err)
	}
	n := binary.BigEndian.Uint32(env[1:5])
	later := bytes.Clone(env[:5+n])
	later = append(later, "later fields"...)
	later = append(later, "msg"...)
	binary.BigEndian.PutUint32(later[1:], n+uint32(len("later fields")))
	later[6] |= 0xf0 // the flags byte
	got, msg, err := bus.DecodeRequest(later)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) || string(msg) != "msg" {
		t.Errorf("decoded %+v, %q; want %+v, %q", got, msg, want, "msg")
	}
}

// The header's strings do not alias the envelope: it may be reused once
// the message is done with.
func TestDecodeRequestDoesNotAliasHeader(t *testing.T) {
	// The JSON header cannot carry everyField (its strings are not UTF-8).
	for _, tc := range []struct {
		encode func(*bus.RequestHeader, []byte) ([]byte, error)
		header func() *bus.RequestHeader
	}{{bus.EncodeRequest, everyField}, {bus.EncodeRequestJSON, fullHeader}} {
		env, err := tc.encode(tc.header(), []byte("{}"))
		if err != nil {
			t.Fatal(err)
		}
		h, _, err := bus.DecodeRequest(env)
		if err != nil {
			t.Fatal(err)
		}
		clear(env)
		if want := tc.header(); !reflect.DeepEqual(h, want) {
			t.Errorf("after the envelope was overwritten: %+v, want %+v", h, want)
		}
	}
}

// Encoding a header costs one allocation, the envelope (two at most with
// -race, whose sync.Pool drops buffers at random); decoding one whose
// snapshot was seen before costs the header and one string for all of its
// strings.
func TestRequestHeaderAllocs(t *testing.T) {
	h := benchHeaders()[0].h
	wantEnc, wantDec := 1.0, 2.0
	if raceEnabled {
		wantEnc = 2
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = bus.EncodeRequest(h, benchMsg) }); n > wantEnc {
		t.Errorf("EncodeRequest: %v allocations, want at most %v", n, wantEnc)
	}
	env, _ := bus.EncodeRequest(h, benchMsg)
	if n := testing.AllocsPerRun(100, func() { _, _, _ = bus.DecodeRequest(env) }); n > wantDec {
		t.Errorf("DecodeRequest: %v allocations, want at most %v", n, wantDec)
	}
}

// FuzzDecodeRequest: no input panics DecodeRequest, and what it decodes
// (from either format) encodes to a binary envelope that decodes to the
// same header and message.
func FuzzDecodeRequest(f *testing.F) {
	for _, h := range []*bus.RequestHeader{everyField(), fullHeader(), benchHeaders()[1].h, {}} {
		env, err := bus.EncodeRequest(h, []byte(`{"name":"x"}`))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(env)
	}
	for _, h := range []*bus.RequestHeader{fullHeader(), benchHeaders()[1].h, {}} {
		env, err := bus.EncodeRequestJSON(h, []byte(`{"name":"x"}`))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(env)
	}
	f.Add([]byte{1, 0, 0, 0, 0})
	f.Add([]byte("\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		h, msg, err := bus.DecodeRequest(data)
		if err != nil {
			if !errors.Is(err, bus.ErrBadEnvelope) || h != nil || msg != nil {
				t.Fatalf("DecodeRequest(%q) = %+v, %q, %v", data, h, msg, err)
			}
			return
		}
		env, err := bus.EncodeRequest(h, msg)
		if err != nil {
			t.Fatalf("EncodeRequest(%+v): %v", h, err)
		}
		h2, msg2, err := bus.DecodeRequest(env)
		if err != nil {
			t.Fatalf("DecodeRequest(EncodeRequest(%+v)): %v", h, err)
		}
		if !reflect.DeepEqual(h2, h) || !bytes.Equal(msg2, msg) {
			t.Fatalf("round trip of %q:\n got %+v, %q\nwant %+v, %q", data, h2, msg2, h, msg)
		}
	})
}
