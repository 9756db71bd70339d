package jsonschema

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

type fastInner struct {
	N int `json:"n"`
}

type fastPlain struct {
	S   string            `json:"s" jsonschema:"a string"`
	I   int64             `json:"i"`
	F   float64           `json:"f,omitempty"`
	B   bool              `json:"b"`
	P   *string           `json:"p"`
	Q   int               `json:"q,string"`
	T   time.Time         `json:"t"`
	Raw []byte            `json:"raw"`
	Any any               `json:"any"`
	Msg json.RawMessage   `json:"msg"`
	L   []string          `json:"l"`
	M   map[string]int    `json:"m"`
	In  fastInner         `json:"in"`
	LL  [][]fastInner     `json:"ll"`
	MM  map[string][]bool `json:"mm"`
}

type fastList struct {
	Next *fastList `json:"next"`
}

// fastSchemaFor is the schema For derives from t, as a string.
func fastSchemaFor(t *testing.T, typ reflect.Type) string {
	t.Helper()
	b, err := For(typ, &ForOptions{RequireObject: true})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestCompileFastShapes(t *testing.T) {
	tests := []struct {
		name   string
		schema string
		fast   bool
	}{
		{"echo", echoSchema, true},
		{"empty object schema", `{"type":"object"}`, true},
		{"no keywords", `{}`, true},
		{"true", `true`, true},
		{"draft 2020-12 named", `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object"}`, true},
		{"type list", `{"type":"object","properties":{"a":{"type":["string","null"]},"b":{"type":["integer"]}}}`, true},
		{"annotations", `{"type":"object","title":"t","description":"d","$comment":"c","properties":{"a":{"type":"string","default":"x","examples":["y"],"deprecated":true,"readOnly":false,"writeOnly":false,"format":"email","contentEncoding":"base64","contentMediaType":"text/plain"}}}`, true},
		{"additionalProperties false", `{"type":"object","properties":{"a":{}},"additionalProperties":false}`, true},
		{"additionalProperties true", `{"type":"object","additionalProperties":true}`, true},
		{"additionalProperties schema", `{"type":"object","additionalProperties":{"type":"integer"}}`, true},
		{"required only", `{"type":"object","required":["a","b"]}`, true},
		{"true property", `{"type":"object","properties":{"a":true}}`, true},
		{"items", `{"type":"object","properties":{"a":{"type":"array","items":{"type":"number"}}}}`, true},
		{"derived plain struct", fastSchemaFor(t, reflect.TypeFor[fastPlain]()), true},
		{"derived map", fastSchemaFor(t, reflect.TypeFor[map[string]fastInner]()), true},

		{"derived recursive type", fastSchemaFor(t, reflect.TypeFor[fastList]()), false},
		{"draft 7", `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object"}`, false},
		{"nested $schema", `{"type":"object","properties":{"a":{"$schema":"https://json-schema.org/draft/2020-12/schema"}}}`, false},
		{"false property", `{"type":"object","properties":{"a":false}}`, false},
		{"false items", `{"type":"object","properties":{"a":{"items":false}}}`, false},
		{"enum", `{"type":"object","properties":{"a":{"enum":["x"]}}}`, false},
		{"const", `{"type":"object","properties":{"a":{"const":1}}}`, false},
		{"minimum", `{"type":"object","properties":{"a":{"type":"integer","minimum":0}}}`, false},
		{"minLength", `{"type":"object","properties":{"a":{"type":"string","minLength":1}}}`, false},
		{"pattern", `{"type":"object","properties":{"a":{"type":"string","pattern":"^a"}}}`, false},
		{"ref", `{"$defs":{"s":{"type":"string"}},"type":"object","properties":{"a":{"$ref":"#/$defs/s"}}}`, false},
		{"patternProperties", `{"type":"object","patternProperties":{"^a":{"type":"string"}}}`, false},
		{"propertyNames", `{"type":"object","propertyNames":{"maxLength":3}}`, false},
		{"unevaluatedProperties", `{"type":"object","unevaluatedProperties":false}`, false},
		{"allOf", `{"type":"object","allOf":[{"required":["a"]}]}`, false},
		{"unknown keyword", `{"type":"object","x-extra":1}`, false},
		{"id", `{"$id":"https://example.com/s","type":"object"}`, false},
		{"prefixItems", `{"type":"object","properties":{"a":{"prefixItems":[{"type":"string"}]}}}`, false},
		{"unsupported in a nested schema", `{"type":"object","properties":{"a":{"type":"object","properties":{"b":{"maximum":1}}}}}`, false},
		{"unsupported in additionalProperties", `{"type":"object","additionalProperties":{"not":{}}}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := Compile(json.RawMessage(tt.schema))
			if err != nil {
				t.Fatalf("Compile(%s): %v", tt.schema, err)
			}
			if got := v.fast != nil; got != tt.fast {
				t.Errorf("Compile(%s): fast path %v, want %v", tt.schema, got, tt.fast)
			}
		})
	}
}

// TestCompileFastMoreThan64Required: the fast path tracks required names in
// a 64-bit mask.
func TestCompileFastMoreThan64Required(t *testing.T) {
	req := make([]string, 65)
	for i := range req {
		req[i] = string(rune('a'+i%26)) + string(rune('a'+i/26))
	}
	schema, _ := json.Marshal(map[string]any{"type": "object", "required": req})
	v, err := Compile(schema)
	if err != nil {
		t.Fatal(err)
	}
	if v.fast != nil {
		t.Error("65 required names: got a fast path")
	}
	schema, _ = json.Marshal(map[string]any{"type": "object", "required": req[:64]})
	if v, err = Compile(schema); err != nil {
		t.Fatal(err)
	}
	if v.fast == nil {
		t.Error("64 required names: no fast path")
	}
}

const (
	fastTypesSchema  = `{"type":"object","properties":{"s":{"type":"string"},"n":{"type":"number"},"i":{"type":"integer"},"b":{"type":"boolean"},"z":{"type":"null"},"sn":{"type":["string","null"]},"o":{"type":"object"},"a":{"type":"array"},"any":{}},"required":["s"]}`
	fastClosedSchema = `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}},"required":["a"],"additionalProperties":false}`
	fastNestedSchema = `{"type":"object","properties":{"l":{"type":"array","items":{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}},"m":{"type":"object","additionalProperties":{"type":"array","items":{"type":"boolean"}}}}}`
	fastManySchema   = `{"type":"object","properties":{"p1":{"type":"string"},"p2":{"type":"string"},"p3":{"type":"string"},"p4":{"type":"string"},"p5":{"type":"string"},"p6":{"type":"string"},"p7":{"type":"string"},"p8":{"type":"string"},"p9":{"type":"integer"}},"required":["p9","p1"]}`
)

// fastTests are instances against schemas of the simple shape; fast says
// whether the fast path must find the instance valid by itself. Whatever
// the fast path says, ValidateJSON's answer must be the library's.
var fastTests = []struct {
	name, schema, instance string
	fast                   bool
}{
	{"echo", echoSchema, `{"text":"hello"}`, true},
	{"echo with ms", echoSchema, ` {"text":"hello", "ms":25}` + "\n", true},
	{"echo unknown member", echoSchema, `{"text":"a","x":[1,{"y":"\u0000"}]}`, true},
	{"echo escaped value", echoSchema, `{"text":"a\"\\\u00e9"}`, true},
	{"echo invalid UTF-8 value", echoSchema, "{\"text\":\"\xff\"}", true},
	{"echo missing required", echoSchema, `{"ms":1}`, false},
	{"echo wrong type", echoSchema, `{"text":1}`, false},
	{"echo integer with fraction", echoSchema, `{"text":"a","ms":1.0}`, false},
	{"echo integer with exponent", echoSchema, `{"text":"a","ms":1e2}`, false},
	{"echo fraction", echoSchema, `{"text":"a","ms":1.5}`, false},
	{"echo negative integer", echoSchema, `{"text":"a","ms":-12}`, true},
	{"echo huge integer", echoSchema, `{"text":"a","ms":123456789012345678901234567890}`, true},
	{"echo escaped key", echoSchema, `{"t\u0065xt":"a"}`, false},
	{"echo escaped key, wrong value", echoSchema, `{"t\u0065xt":1}`, false},
	{"echo invalid UTF-8 key", echoSchema, "{\"text\":\"a\",\"\xff\":1}", false},
	{"echo duplicate key, both valid", echoSchema, `{"text":"a","text":"b"}`, true},
	{"echo duplicate key, first invalid", echoSchema, `{"text":1,"text":"b"}`, false},
	{"echo duplicate key, last invalid", echoSchema, `{"text":"a","text":1}`, false},
	{"echo key in other case", echoSchema, `{"Text":"a"}`, false},
	{"echo null", echoSchema, `null`, false},
	{"echo array", echoSchema, `[]`, false},
	{"echo string", echoSchema, `"text"`, false},
	{"echo empty", echoSchema, ``, false},
	{"echo invalid JSON", echoSchema, `{"text":"a"`, false},
	{"echo trailing data", echoSchema, `{"text":"a"} {}`, false},
	{"echo trailing comma", echoSchema, `{"text":"a",}`, false},
	{"echo bad escape", echoSchema, `{"text":"\x"}`, false},
	{"echo control character", echoSchema, "{\"text\":\"\t\"}", false},
	{"echo leading zero", echoSchema, `{"text":"a","ms":01}`, false},
	{"no required: empty", `{"type":"object","properties":{"a":{"type":"string"}}}`, ``, true},
	{"no required: blank", `{"type":"object","properties":{"a":{"type":"string"}}}`, " \t\r\n", true},
	{"required: blank", `{"type":"object","required":["a"]}`, ` `, false},
	{"untyped root: any object", `{}`, `{"\u0061":[{}],"a":1,"a":2}`, true},
	{"untyped root: array", `{}`, `[1]`, false},
	{"types", fastTypesSchema, `{"s":"x","n":-1.5e-3,"i":7,"b":false,"z":null,"sn":null,"o":{"k":[]},"a":[{},1],"any":{"deep":[[[["x"]]]]}}`, true},
	{"types: string for null", fastTypesSchema, `{"s":"x","z":"null"}`, false},
	{"types: null for string or null", fastTypesSchema, `{"s":"x","sn":"s"}`, true},
	{"types: number for boolean", fastTypesSchema, `{"s":"x","b":0}`, false},
	{"types: array for object", fastTypesSchema, `{"s":"x","o":[]}`, false},
	{"types: object for array", fastTypesSchema, `{"s":"x","a":{}}`, false},
	{"types: string for number", fastTypesSchema, `{"s":"x","n":"1"}`, false},
	{"types: true for integer", fastTypesSchema, `{"s":"x","i":true}`, false},
	{"types: deep invalid JSON", fastTypesSchema, `{"s":"x","any":[[[[1,]]]]}`, false},
	{"closed ok", fastClosedSchema, `{"a":"x","b":1}`, true},
	{"closed extra", fastClosedSchema, `{"a":"x","c":1}`, false},
	{"closed extra escaped", fastClosedSchema, `{"a":"x","\u0063":1}`, false},
	{"nested ok", fastNestedSchema, `{"l":[{"n":1},{"n":2,"x":"y"}],"m":{"k":[true,false],"j":[]}}`, true},
	{"nested empty", fastNestedSchema, `{"l":[],"m":{}}`, true},
	{"nested spaces", fastNestedSchema, `{ "l" : [ { "n" : 1 } , { "n" : 2 } ] , "m" : { "k" : [ true , false ] } }`, true},
	{"nested item missing required", fastNestedSchema, `{"l":[{"n":1},{}]}`, false},
	{"nested item wrong type", fastNestedSchema, `{"l":[{"n":1},{"n":"2"}]}`, false},
	{"nested item not an object", fastNestedSchema, `{"l":[{"n":1},null]}`, false},
	{"nested map value wrong", fastNestedSchema, `{"m":{"k":[true,1]}}`, false},
	{"nested strings with brackets", fastNestedSchema, `{"l":[{"n":1,"s":"]}\"["},{"n":2}],"m":{"\"]":[true]}}`, true},
	{"many ok", fastManySchema, `{"p1":"a","p5":"b","p9":3,"other":null}`, true},
	{"many missing", fastManySchema, `{"p1":"a","p5":"b"}`, false},
	{"many wrong", fastManySchema, `{"p1":"a","p8":1,"p9":3}`, false},
	{"required only, closed", `{"type":"object","required":["a"],"additionalProperties":false}`, `{"a":1}`, false},
	{"required only, typed others", `{"type":"object","required":["lang"],"additionalProperties":{"type":"string"}}`, `{"lang":5}`, false},
	{"required only, typed others ok", `{"type":"object","required":["lang"],"additionalProperties":{"type":"string"}}`, `{"lang":"go","x":"y"}`, true},
	{"required and declared, closed", `{"type":"object","properties":{"a":{}},"required":["a","b"],"additionalProperties":false}`, `{"a":1,"b":2}`, false},
}

func TestValidateJSONFastPath(t *testing.T) {
	for _, tt := range fastTests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := Compile(json.RawMessage(tt.schema))
			if err != nil {
				t.Fatal(err)
			}
			if v.fast == nil {
				t.Fatalf("%s: no fast path", tt.schema)
			}
			b := []byte(tt.instance)
			if isBlank(b) {
				b = emptyObject
			}
			if got := v.fast.validJSON(b); got != tt.fast {
				t.Errorf("fast path on %s: %v, want %v", tt.instance, got, tt.fast)
			}
			got, want := errString(v.ValidateJSON(json.RawMessage(tt.instance))), errString(v.validateJSON(json.RawMessage(tt.instance)))
			if got != want {
				t.Errorf("ValidateJSON(%s) = %q, the library says %q", tt.instance, got, want)
			}
			if tt.fast && want != "" {
				t.Errorf("the fast path accepts %s, the library says %q", tt.instance, want)
			}
		})
	}
}

// FuzzValidateJSONFast compares the fast path with the library: when the
// fast path finds an instance valid, the library must find it valid too,
// and ValidateJSON must always give the library's answer.
func FuzzValidateJSONFast(f *testing.F) {
	for _, tt := range fastTests {
		f.Add(tt.schema, []byte(tt.instance))
	}
	for _, tt := range validateTests {
		f.Add(tt.schema, []byte(tt.instance))
	}
	plain, err := For(reflect.TypeFor[fastPlain](), nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(plain), []byte(`{"s":"x","i":1,"b":true,"p":null,"q":"1","t":"2026-01-01T00:00:00Z","raw":"AA==","any":1,"msg":{},"l":["a"],"m":{"k":1},"in":{"n":1},"ll":[[{"n":2}]],"mm":{"k":[true]}}`))
	f.Fuzz(func(t *testing.T, schema string, instance []byte) {
		v, err := Compile(json.RawMessage(schema))
		if err != nil || v.fast == nil {
			return
		}
		b := instance
		if isBlank(b) {
			b = emptyObject
		}
		fast := v.fast.validJSON(b)
		want := errString(v.validateJSON(instance))
		if fast && want != "" {
			t.Fatalf("the fast path accepts %q against %s, the library says %q", instance, schema, want)
		}
		if got := errString(v.ValidateJSON(instance)); got != want {
			t.Fatalf("ValidateJSON(%q) against %s = %q, the library says %q", instance, schema, got, want)
		}
	})
}
