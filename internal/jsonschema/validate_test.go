package jsonschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// contactSchema is the verbatim draft 2020-12 example from the brief: $defs,
// $anchor, $ref, enum, allOf/anyOf, if/then/else and additionalProperties.
const contactSchema = `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","$defs":{"address":{"$anchor":"addressDef","type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"}}}},"properties":{"name":{"type":"string"},"address":{"$ref":"#/$defs/address"},"contactMethod":{"type":"string","enum":["phone","email"]},"phone":{"type":"string"},"email":{"type":"string"}},"allOf":[{"anyOf":[{"required":["phone"]},{"required":["email"]}]}],"if":{"properties":{"contactMethod":{"const":"phone"}},"required":["contactMethod"]},"then":{"required":["phone"]},"else":{"required":["email"]},"additionalProperties":false}`

const echoSchema = `{"type":"object","properties":{"text":{"type":"string"},"ms":{"type":"integer"}},"required":["text"]}`

// errString returns err's message, or "" for nil.
func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

var validateTests = []struct {
	name     string
	schema   string
	instance string
	want     string // error message; "" means valid
}{
	{"echo ok", echoSchema, `{"text":"hi","ms":5}`, ""},
	{"echo extra property accepted", echoSchema, `{"text":"hi","other":true}`, ""},
	{"echo missing required", echoSchema, `{"ms":5}`, `missing required property "text"`},
	{"echo wrong type", echoSchema, `{"text":"hi","ms":"5"}`, `/ms: got string, want integer`},
	{"echo fraction for integer", echoSchema, `{"text":"hi","ms":1.5}`, `/ms: got number, want integer`},
	{"echo integral float is an integer", echoSchema, `{"text":"hi","ms":2.0}`, ""},
	{"echo several problems sorted", echoSchema, `{"ms":true}`, `missing required property "text"; /ms: got boolean, want integer`},
	{"echo not an object", echoSchema, `[1,2]`, `got array, want object`},
	{"echo null", echoSchema, `null`, `got null, want object`},
	{"empty means empty object", `{"type":"object"}`, ``, ""},
	{"whitespace means empty object", `{"type":"object","required":["a"]}`, " \n", `missing required property "a"`},
	{"big integer keeps precision", `{"type":"integer","maximum":9007199254740993}`, `9007199254740993`, ""},
	{"big integer over maximum", `{"type":"integer","maximum":9007199254740992}`, `9007199254740993`, "got 9007199254740993, want <= 9007199254740992"},
	{
		"additional properties sorted", `{"type":"object","properties":{"a":{}},"additionalProperties":false}`,
		`{"z":1,"a":1,"b":2}`, `unexpected properties "b", "z"`,
	},
	{
		"multiple required", `{"type":"object","required":["b","a"]}`, `{}`, `missing required properties "b", "a"`,
	},
	{
		"nested pointer escaping", `{"type":"object","properties":{"a/b":{"type":"object","properties":{"c~d":{"type":"string"}}}}}`,
		`{"a/b":{"c~d":1}}`, `/a~1b/c~0d: got number, want string`,
	},
	{"array items", `{"type":"array","items":{"type":"string"}}`, `["a",1,"c",false]`, `/1: got number, want string; /3: got boolean, want string`},
	{"enum", `{"enum":["a","b<c"]}`, `"x"`, `value must be one of "a", "b<c"`},
	{"single enum", `{"enum":[1]}`, `2`, `value must be 1`},
	{"const", `{"const":{"k":"v"}}`, `{"k":"w"}`, `value must be {"k":"v"}`},
	{"pattern", `{"type":"string","pattern":"^[a-z]+$"}`, `"ABC"`, `"ABC" does not match pattern "^[a-z]+$"`},
	{"min length", `{"type":"string","minLength":3}`, `"ab"`, `got 2 characters, want at least 3`},
	{"exclusive minimum", `{"exclusiveMinimum":0.5}`, `0.5`, `got 0.5, want > 0.5`},
	{"multiple of", `{"multipleOf":3}`, `10`, `got 10, want a multiple of 3`},
	{"max items", `{"maxItems":1}`, `[1,2]`, `got 2 items, want at most 1`},
	{"false schema", `{"properties":{"x":false}}`, `{"x":1}`, `/x: value is not allowed`},
	{"false items", `{"prefixItems":[{"type":"string"}],"items":false}`, `["a",2]`, `/1: item is not allowed`},
	{"unevaluated properties", `{"unevaluatedProperties":false,"properties":{"a":{}}}`, `{"a":1,"b":2}`, `/b: property is not allowed`},
	{"dependent required", `{"dependentRequired":{"a":["b"]}}`, `{"a":1}`, `missing property "b", required when "a" is present`},
	{"property names", `{"propertyNames":{"maxLength":2}}`, `{"abc":1,"b":2}`, `invalid property name "abc" (got 3 characters, want at most 2)`},
	{"unique items", `{"uniqueItems":true}`, `[1,2,1]`, `items at 0 and 2 are equal`},
	{"ref with description", `{"$defs":{"x":{"type":"string"}},"properties":{"a":{"$ref":"#/$defs/x","description":"d"}}}`, `{"a":1}`, `/a: got number, want string`},
	{
		"anyOf alternatives are capped", `{"anyOf":[{"required":["a","b"],"properties":{"a":{"type":"string"}}},{"type":"string"},{"const":1},{"const":2},{"const":3}]}`,
		`{"a":1}`, `does not match any alternative of anyOf: (missing required property "b"; /a: got number, want string) or (got object, want string) or (value must be 1) or (value must be 2) or 1 more`,
	},
	{"not", `{"not":{"type":"string"}}`, `"s"`, `value must not match the "not" schema`},
	{
		"oneOf none", `{"oneOf":[{"type":"string"},{"type":"integer"}]}`, `true`,
		`does not match any alternative of oneOf: (got boolean, want string) or (got boolean, want integer)`,
	},
	{
		"oneOf both", `{"oneOf":[{"type":"number"},{"type":"integer"}]}`, `1`,
		`must match exactly one alternative of oneOf, but matches alternatives 0 and 1`,
	},
	{"format is an annotation", `{"type":"string","format":"date-time"}`, `"yesterday"`, ""},
	{"local ref", `{"$defs":{"n":{"type":"integer"}},"properties":{"a":{"$ref":"#/$defs/n"}}}`, `{"a":"x"}`, `/a: got string, want integer`},
	{"anchor ref", `{"$defs":{"n":{"$anchor":"num","type":"integer"}},"items":{"$ref":"#num"}}`, `[1,"x"]`, `/1: got string, want integer`},
	{
		"id with relative ref", `{"$id":"https://example.com/root.json","$defs":{"s":{"$id":"str.json","type":"string"}},"properties":{"a":{"$ref":"str.json"}}}`,
		`{"a":1}`, `/a: got number, want string`,
	},
	{
		"recursive ref", `{"type":"object","properties":{"next":{"$ref":"#"},"v":{"type":"integer"}}}`,
		`{"next":{"next":{"v":"x"}}}`, `/next/next/v: got string, want integer`,
	},
	{"draft 7 asserts format", `{"$schema":"http://json-schema.org/draft-07/schema#","format":"ipv4"}`, `"1.2.3"`, `"1.2.3" is not a valid ipv4`},
	{"contact email ok", contactSchema, `{"name":"a","contactMethod":"email","email":"x@y"}`, ""},
	{"contact phone ok", contactSchema, `{"contactMethod":"phone","phone":"123"}`, ""},
	{"contact address ok", contactSchema, `{"email":"x@y","address":{"street":"s","city":"c"}}`, ""},
	{
		"contact phone missing", contactSchema, `{"contactMethod":"phone"}`,
		`does not match any alternative of anyOf: (missing required property "phone") or (missing required property "email"); missing required property "phone"`,
	},
	{"contact bad enum", contactSchema, `{"contactMethod":"fax","email":"x@y"}`, `/contactMethod: value must be one of "phone", "email"`},
	{"contact unknown property", contactSchema, `{"email":"x@y","age":3}`, `unexpected property "age"`},
	{"contact bad address", contactSchema, `{"email":"x@y","address":{"city":7}}`, `/address/city: got number, want string`},
}

func TestValidateJSON(t *testing.T) {
	for _, tt := range validateTests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := Compile(json.RawMessage(tt.schema))
			if err != nil {
				t.Fatalf("Compile error: %v", err)
			}
			err = v.ValidateJSON(json.RawMessage(tt.instance))
			if got := errString(err); got != tt.want {
				t.Errorf("ValidateJSON(%s)\ngot  %q\nwant %q", tt.instance, got, tt.want)
			}
			if err != nil {
				if _, ok := errors.AsType[*ValidationError](err); !ok {
					t.Errorf("ValidateJSON error %T is not a *ValidationError", err)
				}
			}
		})
	}
}

// TestValidateDecoded checks that values decoded with and without UseNumber
// give the same verdict.
func TestValidateDecoded(t *testing.T) {
	for _, tt := range validateTests {
		if strings.TrimSpace(tt.instance) == "" || strings.Contains(tt.name, "big integer") {
			continue // not a JSON document / beyond float64 precision
		}
		t.Run(tt.name, func(t *testing.T) {
			v, err := Compile(json.RawMessage(tt.schema))
			if err != nil {
				t.Fatalf("Compile error: %v", err)
			}
			var plain any
			if err := json.Unmarshal([]byte(tt.instance), &plain); err != nil {
				t.Fatal(err)
			}
			dec := json.NewDecoder(strings.NewReader(tt.instance))
			dec.UseNumber()
			var numbers any
			if err := dec.Decode(&numbers); err != nil {
				t.Fatal(err)
			}
			for name, x := range map[string]any{"float64": plain, "json.Number": numbers} {
				if got := errString(v.Validate(x)); got != tt.want {
					t.Errorf("Validate(%s decoded with %s)\ngot  %q\nwant %q", tt.instance, name, got, tt.want)
				}
			}
		})
	}
}

func TestValidateGoValues(t *testing.T) {
	v, err := Compile(json.RawMessage(echoSchema))
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Validate(map[string]any{"text": "a", "ms": 3}); err != nil {
		t.Errorf("Validate(map with int) = %v; want nil", err)
	}
	if err := v.Validate(map[string]any{"text": "a", "ms": int64(-3)}); err != nil {
		t.Errorf("Validate(map with int64) = %v; want nil", err)
	}
	// A Go type that encoding/json never produces is an error, not a panic.
	if err := v.Validate(map[string]any{"text": struct{}{}}); err == nil {
		t.Error("Validate(map with struct value) = nil; want error")
	}
	if err := v.Validate(map[string]string{"text": "a"}); err == nil {
		t.Error("Validate(map[string]string) = nil; want error")
	}
}

func TestValidateJSONInvalid(t *testing.T) {
	v, err := Compile(json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, raw := range []string{`{`, `{"a":1}}`, `1 2`, `nul`, `"\x00"`, "\"\xff\"x"} {
		t.Run(raw, func(t *testing.T) {
			if err := v.ValidateJSON(json.RawMessage(raw)); !errors.Is(err, ErrInvalidJSON) {
				t.Errorf("ValidateJSON(%q) = %v; want %v", raw, err, ErrInvalidJSON)
			}
		})
	}
}

func TestValidationErrorTruncates(t *testing.T) {
	v, err := Compile(json.RawMessage(`{"type":"array","items":{"type":"string"}}`))
	if err != nil {
		t.Fatal(err)
	}
	err = v.ValidateJSON(json.RawMessage(`[1,2,3,4,5,6,7,8,9,10,11,12]`))
	ve, ok := errors.AsType[*ValidationError](err)
	if !ok {
		t.Fatalf("ValidateJSON error = %v; want *ValidationError", err)
	}
	if got, want := len(ve.Problems), 12; got != want {
		t.Errorf("len(Problems) = %d; want %d", got, want)
	}
	if got, want := err.Error(), "/7: got number, want string; and 4 more problems"; !strings.HasSuffix(got, want) {
		t.Errorf("Error() = %q; want suffix %q", got, want)
	}
}

func TestValidationErrorDeterministic(t *testing.T) {
	v, err := Compile(json.RawMessage(`{"type":"object","additionalProperties":{"type":"integer"}}`))
	if err != nil {
		t.Fatal(err)
	}
	raw := json.RawMessage(`{"e":"x","d":"x","c":"x","b":"x","a":"x","f":{},"g":[]}`)
	want := errString(v.ValidateJSON(raw))
	for range 50 {
		if got := errString(v.ValidateJSON(raw)); got != want {
			t.Fatalf("ValidateJSON is not deterministic:\n%q\n%q", got, want)
		}
	}
}

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		name    string
		schema  string
		wantErr error  // nil: any error
		wantMsg string // substring of the message
	}{
		{"http ref", `{"$ref":"http://example.com/schema.json"}`, ErrExternalRef, `"http://example.com/schema.json"`},
		{"https ref in property", `{"properties":{"a":{"$ref":"https://example.com/a.json#/x"}}}`, ErrExternalRef, "https://example.com/a.json"},
		{"relative ref", `{"$ref":"other.json"}`, ErrExternalRef, "other.json"},
		{"file ref", `{"$ref":"file:///etc/passwd"}`, ErrExternalRef, "file:///etc/passwd"},
		{"unknown meta-schema", `{"$schema":"https://example.com/meta"}`, ErrExternalRef, "https://example.com/meta"},
		{"dangling local ref", `{"$ref":"#/$defs/missing"}`, nil, "missing"},
		{"not JSON", `{"type":`, nil, "parsing schema"},
		{"empty", ``, nil, "empty document"},
		{"invalid keyword value", `{"type":"strin"}`, nil, "compiling schema"},
		{"bad pattern", `{"pattern":"("}`, nil, "compiling schema"},
		{"huge pattern", `{"pattern":"` + strings.Repeat("a", maxPatternLen+1) + `"}`, nil, "compiling schema"},
		{"too large", `{"description":"` + strings.Repeat("x", MaxSchemaSize) + `"}`, ErrSchemaTooLarge, "limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := Compile(json.RawMessage(tt.schema))
			if err == nil {
				t.Fatalf("Compile = %v, nil; want error", v)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("Compile error = %v; want %v", err, tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("Compile error = %q; want it to contain %q", err, tt.wantMsg)
			}
		})
	}
}

// TestCompileNeverFetches points references at a live server and checks that
// it is never contacted.
func TestCompileNeverFetches(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"type":"string"}`)
	}))
	t.Cleanup(srv.Close)

	for _, schema := range []string{
		`{"$ref":"` + srv.URL + `/s.json"}`,
		`{"$schema":"` + srv.URL + `/meta.json"}`,
		`{"$id":"` + srv.URL + `/root.json","$ref":"other.json"}`,
		`{"$dynamicRef":"` + srv.URL + `/s.json#x"}`,
	} {
		if _, err := Compile(json.RawMessage(schema)); !errors.Is(err, ErrExternalRef) {
			t.Errorf("Compile(%s) error = %v; want %v", schema, err, ErrExternalRef)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("server received %d requests; want 0", n)
	}
}

func TestValidatorConcurrentUse(t *testing.T) {
	v, err := Compile(json.RawMessage(contactSchema))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 16)
	for i := range 16 {
		wg.Go(func() {
			for range 100 {
				ok := v.ValidateJSON(json.RawMessage(`{"email":"x@y"}`))
				bad := v.ValidateJSON(json.RawMessage(`{"contactMethod":"phone"}`))
				if ok != nil || bad == nil {
					errs <- fmt.Sprintf("goroutine %d: got %v, %v", i, ok, bad)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

func FuzzValidateJSON(f *testing.F) {
	for _, tt := range validateTests {
		f.Add(tt.schema, []byte(tt.instance))
	}
	f.Add(`{"$ref":"http://example.com/x"}`, []byte(`{}`))
	f.Add(`{"patternProperties":{"^a":{"type":"integer"}},"propertyNames":{"maxLength":2}}`, []byte(`{"abc":"x"}`))
	f.Add(`{"type":"array","prefixItems":[{"type":"string"}],"contains":{"const":1},"uniqueItems":true}`, []byte(`[1,1]`))
	f.Fuzz(func(t *testing.T, schema string, instance []byte) {
		v, err := Compile(json.RawMessage(schema))
		if err != nil {
			if strings.Contains(err.Error(), "internal error") {
				t.Fatalf("Compile(%q) recovered a panic: %v", schema, err)
			}
			return
		}
		err = v.ValidateJSON(instance)
		if err == nil {
			return
		}
		if strings.Contains(err.Error(), "internal error") {
			t.Fatalf("ValidateJSON(%q) against %q recovered a panic: %v", instance, schema, err)
		}
		if ve, ok := errors.AsType[*ValidationError](err); ok {
			if len(ve.Problems) == 0 || ve.Error() == "" {
				t.Fatalf("ValidateJSON(%q) against %q: empty ValidationError", instance, schema)
			}
		} else if !errors.Is(err, ErrInvalidJSON) {
			t.Fatalf("ValidateJSON(%q) against %q: unexpected error type %T: %v", instance, schema, err, err)
		}
		if again := errString(v.ValidateJSON(bytes.Clone(instance))); again != err.Error() {
			t.Fatalf("ValidateJSON is not deterministic: %q then %q", err, again)
		}
	})
}

func BenchmarkValidate(b *testing.B) {
	v, err := Compile(json.RawMessage(echoSchema))
	if err != nil {
		b.Fatal(err)
	}
	var args any
	if err := json.Unmarshal([]byte(`{"text":"hello","ms":25}`), &args); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := v.Validate(args); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkValidateJSON(b *testing.B) {
	v, err := Compile(json.RawMessage(echoSchema))
	if err != nil {
		b.Fatal(err)
	}
	raw := json.RawMessage(`{"text":"hello","ms":25}`)
	b.ReportAllocs()
	for b.Loop() {
		if err := v.ValidateJSON(raw); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkValidateInvalid(b *testing.B) {
	v, err := Compile(json.RawMessage(echoSchema))
	if err != nil {
		b.Fatal(err)
	}
	var args any
	if err := json.Unmarshal([]byte(`{"ms":"25"}`), &args); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := v.Validate(args); err == nil {
			b.Fatal("want error")
		}
	}
}

// BenchmarkValidateJSONEcho validates the arguments BenchmarkServe sends to
// the demo echo tool against the schema derived from its input type
// (internal/fixture's EchoArgs).
func BenchmarkValidateJSONEcho(b *testing.B) {
	schema, err := ForObject[struct {
		Text string `json:"text" jsonschema:"the text to return"`
	}]()
	if err != nil {
		b.Fatal(err)
	}
	v, err := Compile(schema)
	if err != nil {
		b.Fatal(err)
	}
	raw := json.RawMessage(`{"text":"hello"}`)
	b.ReportAllocs()
	for b.Loop() {
		if err := v.ValidateJSON(raw); err != nil {
			b.Fatal(err)
		}
	}
}
