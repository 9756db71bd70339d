package bus_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

func fullHeader() *bus.RequestHeader {
	return &bus.RequestHeader{
		Era:      protocol.EraLegacy,
		Frontend: "fe-1",
		Stream:   "st-9",
		Session: &bus.SessionInfo{
			ID:                 "sess\n1",
			ProtocolVersion:    "2025-11-25",
			ClientInfo:         &protocol.Implementation{Name: "client", Version: "1.0"},
			ClientCapabilities: &protocol.ClientCapabilities{Roots: &protocol.RootsCapability{ListChanged: true}, Elicitation: &protocol.ElicitationCapability{}},
			LogLevel:           protocol.LevelWarning,
		},
		Principal:   "user\nwith newline",
		DeadlineMs:  1767225600000,
		Traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
	}
}

func TestRequestEnvelopeRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		h    *bus.RequestHeader
		msg  []byte
	}{
		{"full header", fullHeader(), []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`)},
		{"modern, minimal header", &bus.RequestHeader{Era: protocol.EraModern, Frontend: "f", Stream: "s"}, []byte(`{"jsonrpc":"2.0","id":"a","method":"ping"}`)},
		{"zero header", &bus.RequestHeader{}, []byte(`{}`)},
		{"method, integer id, params body", &bus.RequestHeader{Era: protocol.EraLegacy, Method: "tools/call", ID: protocol.Int64ID(-7), Frontend: "f", Stream: "s"}, []byte(`{"name":"x"}`)},
		{"method, string id, no params", &bus.RequestHeader{Era: protocol.EraModern, Method: "ping", ID: protocol.StringID("a\n\"b"), Frontend: "f", Stream: "s"}, []byte{}},
		{"newlines in the message", fullHeader(), []byte("{\"jsonrpc\":\"2.0\",\n\"id\":1,\r\n\"method\":\"m\",\"params\":{\"s\":\"a\\nb\"}}\n\n")},
		{"message starting with a newline", fullHeader(), []byte("\n{}\n")},
		{"empty message", fullHeader(), []byte{}},
		{"binary message", fullHeader(), []byte{0, '\n', 0xff, '\n'}},
	}
	encoders := []struct {
		name   string
		encode func(*bus.RequestHeader, []byte) ([]byte, error)
	}{{"binary", bus.EncodeRequest}, {"json", bus.EncodeRequestJSON}}
	for _, enc := range encoders {
		for _, tc := range tests {
			t.Run(enc.name+"/"+tc.name, func(t *testing.T) {
				env, err := enc.encode(tc.h, tc.msg)
				if err != nil {
					t.Fatalf("encode: %v", err)
				}
				h, msg, err := bus.DecodeRequest(env)
				if err != nil {
					t.Fatalf("DecodeRequest(%q): %v", env, err)
				}
				if !reflect.DeepEqual(h, tc.h) {
					t.Errorf("header = %+v, want %+v", h, tc.h)
				}
				if !bytes.Equal(msg, tc.msg) {
					t.Errorf("message = %q, want %q", msg, tc.msg)
				}
				if !bytes.HasSuffix(env, tc.msg) {
					t.Errorf("envelope %q does not end with the message verbatim", env)
				}
			})
		}
	}
}

// The JSON envelopes of earlier versions' frontends still decode (a
// rolling upgrade: new workers, old frontends). The literals are what
// those frontends wrote.
func TestDecodeRequestJSONHeader(t *testing.T) {
	tests := []struct {
		in   string
		want *bus.RequestHeader
		msg  string
	}{
		{`{"era":2,"fe":"f","st":"s","p":"p","dl":5,"tp":"tp"}` + "\nM",
			&bus.RequestHeader{Era: protocol.EraModern, Frontend: "f", Stream: "s", Principal: "p", DeadlineMs: 5, Traceparent: "tp"}, "M"},
		{`{"era":1,"m":"ping","id":"7","fe":"","st":""}` + "\n",
			&bus.RequestHeader{Era: protocol.EraLegacy, Method: "ping", ID: protocol.StringID("7")}, ""},
		{`{"era":1,"m":"tools/call","id":-3,"tg":"echo","fe":"f","st":"s","s":{"id":"sid","v":"2025-11-25","ci":{"name":"c","version":"1"},"cc":{"roots":{"listChanged":true}},"ll":"info"},"ts":"a=b","ph":{"x":"y"},"ls":true,"ss":true,"tk":true,"cph":true}` + "\n{\"name\":\"echo\"}",
			&bus.RequestHeader{Era: protocol.EraLegacy, Method: "tools/call", ID: protocol.Int64ID(-3), Target: "echo", Frontend: "f", Stream: "s",
				Session: &bus.SessionInfo{ID: "sid", ProtocolVersion: "2025-11-25", ClientInfo: &protocol.Implementation{Name: "c", Version: "1"},
					ClientCapabilities: &protocol.ClientCapabilities{Roots: &protocol.RootsCapability{ListChanged: true}}, LogLevel: protocol.LevelInfo},
				Tracestate: "a=b", ParamHeaders: map[string]string{"x": "y"}, Listen: true, SessionStream: true, Tasks: true, CheckParamHeaders: true},
			`{"name":"echo"}`},
	}
	for _, tc := range tests {
		h, msg, err := bus.DecodeRequest([]byte(tc.in))
		if err != nil {
			t.Fatalf("DecodeRequest(%q): %v", tc.in, err)
		}
		if !reflect.DeepEqual(h, tc.want) || string(msg) != tc.msg {
			t.Errorf("DecodeRequest(%q) = %+v, %q; want %+v, %q", tc.in, h, msg, tc.want, tc.msg)
		}
	}
}

func TestDecodeRequestMalformed(t *testing.T) {
	tests := []struct {
		name string
		in   string
	}{
		{"empty", ""},
		{"no newline", `{"era":1,"fe":"f","st":"s"}`},
		{"header not JSON", "hello\n{}"},
		{"empty header", "\n{}"},
		{"truncated header", `{"era":1,"fe":` + "\n{}"},
		{"header of the wrong type", `{"era":"legacy"}` + "\n{}"},
		{"header an array", "[]\n{}"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, msg, err := bus.DecodeRequest([]byte(tc.in))
			if !errors.Is(err, bus.ErrBadEnvelope) {
				t.Fatalf("DecodeRequest(%q) = %+v, %q, %v; want ErrBadEnvelope", tc.in, h, msg, err)
			}
			if h != nil || msg != nil {
				t.Errorf("DecodeRequest returned %+v, %q with the error", h, msg)
			}
		})
	}
}

func TestAnswerEnvelopeRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		h    *bus.ClientAnswer
		msg  []byte
	}{
		{"session and principal", &bus.ClientAnswer{Session: "s1", Principal: "alice"}, []byte(`{"jsonrpc":"2.0","id":"mcpf-w-1","result":{}}`)},
		{"session only", &bus.ClientAnswer{Session: "s1"}, []byte(`{"jsonrpc":"2.0","id":"mcpf-w-2","error":{"code":-1,"message":"no"}}`)},
		{"newlines everywhere", &bus.ClientAnswer{Session: "a\nb", Principal: "c\nd"}, []byte("{\n\"jsonrpc\":\"2.0\",\n\"id\":\"x\",\"result\":{}}\n")},
		{"empty message", &bus.ClientAnswer{}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env, err := bus.EncodeAnswer(tc.h, tc.msg)
			if err != nil {
				t.Fatalf("EncodeAnswer: %v", err)
			}
			h, msg, err := bus.DecodeAnswer(env)
			if err != nil {
				t.Fatalf("DecodeAnswer(%q): %v", env, err)
			}
			if !reflect.DeepEqual(h, tc.h) {
				t.Errorf("header = %+v, want %+v", h, tc.h)
			}
			if !bytes.Equal(msg, tc.msg) {
				t.Errorf("message = %q, want %q", msg, tc.msg)
			}
		})
	}
}

func TestDecodeAnswerMalformed(t *testing.T) {
	for _, in := range []string{"", `{"s":"x"}`, "nope\n{}", `{"s":1}` + "\n{}", "\n{}"} {
		t.Run(in, func(t *testing.T) {
			h, msg, err := bus.DecodeAnswer([]byte(in))
			if !errors.Is(err, bus.ErrBadEnvelope) {
				t.Fatalf("DecodeAnswer(%q) = %+v, %q, %v; want ErrBadEnvelope", in, h, msg, err)
			}
		})
	}
}

func TestParseFrame(t *testing.T) {
	tests := []struct {
		name        string
		data        []byte
		status      string
		wantKind    bus.FrameKind
		wantPayload []byte
	}{
		{"notification", []byte(`N{"jsonrpc":"2.0","method":"m"}`), "", bus.FrameNotification, []byte(`{"jsonrpc":"2.0","method":"m"}`)},
		{"server request", []byte(`Q{"jsonrpc":"2.0","id":"mcpf-w-1","method":"roots/list"}`), "", bus.FrameServerRequest, []byte(`{"jsonrpc":"2.0","id":"mcpf-w-1","method":"roots/list"}`)},
		{"response", []byte(`R{"jsonrpc":"2.0","id":1,"result":{}}`), "", bus.FrameResponse, []byte(`{"jsonrpc":"2.0","id":1,"result":{}}`)},
		{"heartbeat", []byte("Hworker-7"), "", bus.FrameHeartbeat, []byte("worker-7")},
		{"end", []byte("E"), "", bus.FrameEnd, []byte{}},
		{"close", []byte("C1000"), "", bus.FrameClose, []byte("1000")},
		{"unknown kind", []byte("X{}"), "", bus.FrameInvalid, nil},
		{"no-responders byte is not a frame kind", []byte("0"), "", bus.FrameInvalid, nil},
		{"lower-case kind", []byte("r{}"), "", bus.FrameInvalid, nil},
		{"empty data", nil, "", bus.FrameInvalid, nil},
		{"empty data, not nil", []byte{}, "", bus.FrameInvalid, nil},
		{"no responders", nil, "503", bus.FrameNoResponders, nil},
		{"no responders with data", []byte("R{}"), "503", bus.FrameNoResponders, nil},
		{"other status is ignored", []byte("R{}"), "408", bus.FrameResponse, []byte("{}")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			kind, payload := bus.ParseFrame(tc.data, tc.status)
			if kind != tc.wantKind {
				t.Errorf("kind = %q, want %q", kind, tc.wantKind)
			}
			if !bytes.Equal(payload, tc.wantPayload) || (payload == nil) != (tc.wantPayload == nil) {
				t.Errorf("payload = %q, want %q", payload, tc.wantPayload)
			}
		})
	}
}

func TestAppendFrameRoundTrip(t *testing.T) {
	payload := []byte(`{"jsonrpc":"2.0","method":"notifications/progress"}`)
	for _, k := range []bus.FrameKind{bus.FrameNotification, bus.FrameServerRequest, bus.FrameResponse, bus.FrameHeartbeat, bus.FrameEnd, bus.FrameClose} {
		t.Run(string(rune(k)), func(t *testing.T) {
			frame := bus.AppendFrame(nil, k, payload)
			kind, got := bus.ParseFrame(frame, "")
			if kind != k || !bytes.Equal(got, payload) {
				t.Errorf("ParseFrame(AppendFrame(%q)) = %q, %q", k, kind, got)
			}
			prefixed := bus.AppendFrame([]byte("xx"), k, payload)
			if !bytes.Equal(prefixed[2:], frame) {
				t.Errorf("AppendFrame with a prefix = %q", prefixed)
			}
		})
	}
}

var benchMsg = []byte(`{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"search",` +
	`"arguments":{"query":"nats queue groups","limit":10},"_meta":{"progressToken":"p-17"}}}`)

// benchHeaders are the headers of the common requests, as the frontends
// build them: a legacy tools/call (its session snapshot included) and a
// modern one with a Mcp-Param-* header.
func benchHeaders() []struct {
	name string
	h    *bus.RequestHeader
} {
	legacy := fullHeader()
	legacy.Method, legacy.ID, legacy.Target = "tools/call", protocol.Int64ID(17), "search"
	legacy.Stream = "7f3a9c2e41d0b8a6"
	legacy.Listen, legacy.SessionStream, legacy.Tasks = true, true, true
	modern := &bus.RequestHeader{
		Era: protocol.EraModern, Method: "tools/call", ID: protocol.StringID("req-17"), Target: "search",
		Frontend: "fe-1", Stream: "7f3a9c2e41d0b8a6", DeadlineMs: 1767225600000,
		Traceparent:  "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		ParamHeaders: map[string]string{"region": "eu-west-1"},
		Listen:       true, SessionStream: true, Tasks: true, CheckParamHeaders: true,
	}
	return []struct {
		name string
		h    *bus.RequestHeader
	}{{"legacy", legacy}, {"modern", modern}}
}

func BenchmarkEncodeRequest(b *testing.B) {
	for _, bc := range benchHeaders() {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := bus.EncodeRequest(bc.h, benchMsg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkDecodeRequest(b *testing.B) {
	for _, bc := range benchHeaders() {
		b.Run(bc.name, func(b *testing.B) {
			env, err := bus.EncodeRequest(bc.h, benchMsg)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(env)))
			b.ReportAllocs()
			for b.Loop() {
				if _, msg, err := bus.DecodeRequest(env); err != nil || len(msg) != len(benchMsg) {
					b.Fatalf("DecodeRequest: %v", err)
				}
			}
		})
	}
}

func TestLiveEventRoundTrip(t *testing.T) {
	tests := []struct {
		name  string
		index uint64
		data  []byte
	}{
		{"first", 0, []byte(`{"jsonrpc":"2.0","method":"m"}`)},
		{"large index", 18446744073709551615, []byte("x")},
		{"data with newlines", 7, []byte("a\nb\n")},
		{"empty data", 3, []byte{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := bus.AppendLiveEvent(nil, tc.index, tc.data)
			index, data, end, ok := bus.ParseLiveEvent(p)
			if !ok || end || index != tc.index || !bytes.Equal(data, tc.data) {
				t.Errorf("ParseLiveEvent(%q) = %d, %q, end=%v, ok=%v; want %d, %q", p, index, data, end, ok, tc.index, tc.data)
			}
		})
	}
	if _, _, end, ok := bus.ParseLiveEvent([]byte(bus.LiveEnd)); !end || !ok {
		t.Errorf("ParseLiveEvent(LiveEnd) = end %v, ok %v; want true, true", end, ok)
	}
	for _, bad := range []string{"", "\nx", "12", "1a\nx", "-1\nx", " 1\nx"} {
		if _, _, end, ok := bus.ParseLiveEvent([]byte(bad)); ok || end {
			t.Errorf("ParseLiveEvent(%q) = end %v, ok %v; want a rejection", bad, end, ok)
		}
	}
}

// Envelopes carrying the same session snapshot decode to one shared
// SessionInfo; another snapshot (a new log level) decodes on its own.
func TestDecodeRequestSharesSnapshots(t *testing.T) {
	h := fullHeader()
	env, err := bus.EncodeRequest(h, []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	a, _, err := bus.DecodeRequest(env)
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := bus.DecodeRequest(env)
	if err != nil {
		t.Fatal(err)
	}
	if a.Session != b.Session {
		t.Error("the same snapshot decoded twice")
	}
	h.Session.LogLevel = protocol.LevelDebug
	env2, _ := bus.EncodeRequest(h, []byte(`{}`))
	c, _, err := bus.DecodeRequest(env2)
	if err != nil {
		t.Fatal(err)
	}
	if c.Session == a.Session || c.Session.LogLevel != protocol.LevelDebug || a.Session.LogLevel != protocol.LevelWarning {
		t.Errorf("snapshots mixed up: %+v / %+v", a.Session, c.Session)
	}
	if _, _, err := bus.DecodeRequest([]byte(`{"era":1,"s":{"id":5}}` + "\n{}")); err == nil {
		t.Error("a malformed snapshot decoded")
	}
	// A large snapshot (a client declaring big capabilities) is decoded
	// each time, not kept: the cache stays small whatever clients declare.
	h.Session.ClientCapabilities.Experimental = map[string]json.RawMessage{"big": json.RawMessage(`"` + strings.Repeat("x", 8<<10) + `"`)}
	env3, _ := bus.EncodeRequest(h, []byte(`{}`))
	d, _, err := bus.DecodeRequest(env3)
	if err != nil {
		t.Fatal(err)
	}
	e, _, _ := bus.DecodeRequest(env3)
	if d.Session == e.Session || len(e.Session.ClientCapabilities.Experimental["big"]) < 8<<10 {
		t.Error("a large snapshot was kept (or lost its content)")
	}
}
