package protocol

import (
	"bytes"
	"encoding/json"
	"testing"
)

type scanned struct {
	key, value string
	escaped    bool
}

func scanAll(b []byte) ([]scanned, bool) {
	var ms []scanned
	ok := ScanObject(b, func(k []byte, esc bool, v []byte) {
		ms = append(ms, scanned{string(k), string(v), esc})
	})
	return ms, ok
}

var scanSeeds = []string{
	`{}`, ` { } `, `{"a":1}`, `{"name":"echo","arguments":{"text":"hi","n":[1,2.5e-3,-0,true,false,null]}}`,
	`{"a\"b":"x\\y\u00e9","c":{"d":[{},[]]}}`, `{"a":01}`, `{"a":1,}`, `{"a" 1}`, `{"a":tru}`, `[1]`, `"x"`,
	`{"a":"\x01"}`, `{"a":"\q"}`, `{"a":"\u12"}`, `{"a":1}x`, `{"a":-}`, `{"a":1.}`, `{"a":1e}`, `{"a":[1 2]}`,
	"{\"a\":\"\xff\xfe\"}", `{"a":1,"a":2}`, `{"A":1}`, `{`, ``, `{"a":{"b":{"c":{}}}}`,
}

// TestScanObject: members as written, and what is not one valid object is
// refused.
func TestScanObject(t *testing.T) {
	ms, ok := scanAll([]byte(` {"name":"echo", "arguments" : {"text":"hi"},"k\"":[1]} `))
	want := []scanned{{"name", `"echo"`, false}, {"arguments", `{"text":"hi"}`, false}, {`k\"`, `[1]`, true}}
	if !ok || len(ms) != len(want) {
		t.Fatalf("got %v, %v", ms, ok)
	}
	for i := range want {
		if ms[i] != want[i] {
			t.Errorf("member %d = %+v, want %+v", i, ms[i], want[i])
		}
	}
	for _, s := range scanSeeds {
		checkScan(t, []byte(s))
	}
	deep := bytes.Repeat([]byte(`{"a":`), maxScanDepth+1)
	if _, ok := scanAll(deep); ok {
		t.Error("an object nested too deep was accepted")
	}
}

// checkScan: ScanObject accepts exactly the valid JSON objects, and its
// members are what encoding/json decodes.
func checkScan(t *testing.T, b []byte) {
	t.Helper()
	ms, ok := scanAll(b)
	trimmed := bytes.TrimLeft(b, " \t\r\n")
	isObject := json.Valid(b) && len(trimmed) > 0 && trimmed[0] == '{'
	if ok != isObject && bytes.Count(b, []byte("{"))+bytes.Count(b, []byte("[")) < maxScanDepth {
		t.Fatalf("ScanObject(%q) = %v, valid object %v", b, ok, isObject)
	}
	if !ok {
		return
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%q: scanned, but encoding/json: %v", b, err)
	}
	seen := map[string]bool{}
	for _, s := range ms {
		if s.escaped || seen[s.key] || !isASCII(s.key) {
			return // keys encoding/json unescapes or mends (invalid UTF-8), or duplicates: not compared
		}
		seen[s.key] = true
	}
	if len(m) != len(ms) {
		t.Fatalf("%q: %d members, encoding/json %d", b, len(ms), len(m))
	}
	for _, s := range ms {
		if v, ok := m[s.key]; !ok || string(v) != s.value {
			t.Fatalf("%q: member %q = %s, encoding/json %s", b, s.key, s.value, v)
		}
	}
}

func FuzzScanObject(f *testing.F) {
	for _, s := range scanSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkScan(t, b) })
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
