package protocol

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// decodeRef is Decode's slow path alone, as Decode was before its scanner
// checked the nesting: CheckDepth first, then encoding/json.
func decodeRef(data []byte, maxDepth int) (*Message, error) {
	if maxDepth <= 0 {
		maxDepth = DefaultMaxDepth
	}
	switch firstByte(data) {
	case '{':
	case '[':
		if !json.Valid(data) {
			return nil, &DecodeError{Err: NewError(CodeParseError, "parse error: invalid JSON")}
		}
		return nil, &DecodeError{Err: NewError(CodeInvalidRequest, "invalid request: batches are not supported; send one JSON-RPC message per request"), Batch: true}
	default:
		if !json.Valid(data) {
			return nil, &DecodeError{Err: NewError(CodeParseError, "parse error: invalid JSON")}
		}
		return nil, &DecodeError{Err: NewError(CodeInvalidRequest, "invalid request: a JSON-RPC message must be a JSON object")}
	}
	if err := CheckDepth(data, maxDepth); err != nil {
		return nil, &DecodeError{Err: NewError(CodeParseError, "parse error: %v", err)}
	}
	var w wireMessage
	if err := json.Unmarshal(data, &w); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) || !json.Valid(data) {
			return nil, &DecodeError{Err: NewError(CodeParseError, "parse error: invalid JSON")}
		}
		de := &DecodeError{Err: NewError(CodeInvalidRequest, "invalid request: %v", err)}
		if len(w.ID) > 0 {
			_ = de.ID.UnmarshalJSON(w.ID)
		}
		return nil, de
	}
	return finishDecode(&w)
}

// errText is err's message, or "" for nil.
func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// checkDecodeWithHead: Decode and DecodeWithHead give what the reference
// sequence (decodeRef, then DecodeParamsHead by json.Unmarshal of the
// params) gives: the same message, the same error, the same head and head
// error.
func checkDecodeWithHead(t *testing.T, data []byte, maxDepth int) {
	t.Helper()
	want, werr := decodeRef(data, maxDepth)
	var wantHead ParamsHead
	var wantHeadErr error
	if werr == nil && want.Params != nil {
		wantHeadErr = json.Unmarshal(want.Params, &wantHead)
		if wantHeadErr != nil {
			// DecodeParamsHead's result on an error is not part of
			// its contract; the error is.
			wantHead = ParamsHead{}
		}
	}
	got, gerr := Decode(data, maxDepth)
	if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(gerr, werr) {
		t.Fatalf("Decode(%q, %d) = %+v, %v; want %+v, %v", data, maxDepth, got, gerr, want, werr)
	}
	head := ParamsHead{Name: new(string)} // DecodeWithHead sets it, whatever it held
	got, headErr, gerr := DecodeWithHead(data, maxDepth, &head)
	if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(gerr, werr) {
		t.Fatalf("DecodeWithHead(%q, %d) = %+v, %v; want %+v, %v", data, maxDepth, got, gerr, want, werr)
	}
	if gerr != nil {
		return
	}
	if errText(headErr) != errText(wantHeadErr) {
		t.Fatalf("DecodeWithHead(%q): head error %v, want %v", data, headErr, wantHeadErr)
	}
	if headErr == nil && !reflect.DeepEqual(head, wantHead) {
		t.Fatalf("DecodeWithHead(%q): head\n %+v\nwant %+v", data, head, wantHead)
	}
}

// decodeHeadSeeds are messages for DecodeWithHead: every params head seed
// in a request, and messages around the fast path's edges.
func decodeHeadSeeds() []string {
	seeds := append([]string(nil), wireSeeds...)
	for _, p := range headSeeds {
		seeds = append(seeds, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":`+p+`}`)
	}
	return append(seeds,
		`{"jsonrpc":"2.0","id":1,"method":"m","params":{"name":"a"},"params":{"name":"b"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"m","Params":{"name":"a"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"m","par\u0061ms":{"name":"a"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"m","params":[{"name":"a"}]}`,
		`{"jsonrpc":"2.0","id":1,"method":"m","params":"x"}`,
		`{"jsonrpc":"2.0","id":1,"method":"m","params": {"name":"a"} }`,
		`{"jsonrpc":"2.0","id":1,"method":"m","params":{"name":"a","x":{"params":{"name":"b"}}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"m","x":{"params":{"name":"b"}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"m","params":{"name":5}}`,
		`{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{"roots":5}}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":[[[[[[]]]]]]}}`,
		`{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":[[[[[[]]]]]],}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"name":"a"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"m\u0041","params":{"name":"a"}}`,
		`{"jsonrpc":"2.0","id":null,"method":"m","params":{"name":"a"}}`,
		`{"jsonrpc":"1.0","id":1,"method":"m","params":{"name":"a"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"m","params":{"name":"a"}`,
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":{\"name\":\"\xff\"}}",
		`{"jsonrpc":"2.0","id":1,"method":"m","params":{"s":"[[[[{{{{"}}`,
		"[]", "5", `{`, `{"a":[}`,
	)
}

func TestDecodeWithHead(t *testing.T) {
	for _, s := range decodeHeadSeeds() {
		for _, d := range []int{0, 1, 2, 3, 4, 6, 7, maxScanDepth + 1} {
			checkDecodeWithHead(t, []byte(s), d)
		}
	}
	// Around the caps: DefaultMaxDepth and encoding/json's (and the
	// scanner's) own 10000.
	for _, n := range []int{DefaultMaxDepth - 2, DefaultMaxDepth - 1, DefaultMaxDepth, maxScanDepth - 2, maxScanDepth - 1, maxScanDepth} {
		body := []byte(`{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `}}`)
		for _, d := range []int{0, DefaultMaxDepth, maxScanDepth, maxScanDepth + 5} {
			checkDecodeWithHead(t, body, d)
		}
	}
	// The common cases take the one pass.
	for _, s := range []string{wireSeeds[0], `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + modernClientParams + `}`} {
		var w wireMessage
		var hv [6][]byte
		hm := newMembers(paramsHeadMembers, hv[:])
		var h ParamsHead
		if !w.scan([]byte(s), DefaultMaxDepth, &hm) || !hm.fast || !h.fill(&hv) || h.Name == nil {
			t.Errorf("%s: not read in one pass (head %+v)", s, h)
		}
	}
}

func FuzzDecodeWithHead(f *testing.F) {
	for _, s := range decodeHeadSeeds() {
		f.Add([]byte(s), int16(0))
		f.Add([]byte(s), int16(3))
	}
	f.Fuzz(func(t *testing.T, data []byte, maxDepth int16) {
		checkDecodeWithHead(t, data, int(maxDepth))
	})
}

// TestDecodeKnownMethod: a method either era serves, and the jsonrpc
// version, are decoded without a copy; others as before.
func TestDecodeKnownMethod(t *testing.T) {
	decodes := func(method string) float64 {
		body := []byte(`{"jsonrpc":"2.0","id":1,"method":"` + method + `"}`)
		m, err := Decode(body, 0)
		if err != nil || m.Method != method {
			t.Fatalf("%s: %+v, %v", method, m, err)
		}
		return testing.AllocsPerRun(100, func() { _, _ = Decode(body, 0) })
	}
	known, unknown := decodes(MethodToolsCall), decodes("tools/calls")
	if known > unknown-1 {
		t.Errorf("decoding tools/call makes %v allocations, an unknown method %v: want at least one fewer", known, unknown)
	}
	if m, err := Decode([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools\/call"}`), 0); err != nil || m.Method != MethodToolsCall {
		t.Errorf("an escaped method: %+v, %v", m, err)
	}
}
