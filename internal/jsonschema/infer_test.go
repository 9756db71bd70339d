package jsonschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// canonicalJSON re-encodes a JSON document with sorted object keys and no
// insignificant whitespace, so that documents can be compared as strings.
func canonicalJSON(tb testing.TB, s string) string {
	tb.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		tb.Fatalf("invalid JSON %s: %v", s, err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

type (
	inferSimple struct {
		Text    string  `json:"text" jsonschema:"the text to echo"`
		Count   int     `json:"count,omitempty"`
		Ratio   float64 `json:"ratio,omitzero"`
		Enabled *bool   `json:"enabled"`
		Skipped string  `json:"-"`
		hidden  string
		NoTag   uint8
		Dash    string `json:"-,"`
		Quoted  int64  `json:"quoted,string"`
	}
	inferAddress struct {
		Street string `json:"street"`
		City   string `json:"city,omitempty"`
	}
	inferNested struct {
		Home  inferAddress            `json:"home"`
		Work  *inferAddress           `json:"work"`
		Tags  []string                `json:"tags"`
		Pairs [2]int                  `json:"pairs"`
		Attrs map[string]inferAddress `json:"attrs"`
		ByID  map[int]string          `json:"byId"`
		Data  []byte                  `json:"data"`
		When  time.Time               `json:"when"`
		Any   any                     `json:"any"`
		Raw   json.RawMessage         `json:"raw"`
		Num   json.Number             `json:"num"`
		Level inferLevel              `json:"level"`
	}
	inferBase struct {
		ID      string `json:"id"`
		Shadow  string `json:"shadow"`
		Ignored string
	}
	inferExtra struct {
		Note   string `json:"note"`
		Shadow string `json:"shadow"`
	}
	inferOther struct {
		Ignored string
	}
	inferEmbedded struct {
		inferBase
		*inferExtra
		inferOther
		Tagged inferAddress `json:"tagged"`
		Shadow int          `json:"shadow"`
	}
	inferTaggedWins struct {
		inferTaggedA
		inferTaggedB
	}
	inferTaggedA struct {
		Name string `json:"name"`
	}
	inferTaggedB struct {
		Name string
	}
	inferTree struct {
		Value    int          `json:"value"`
		Children []*inferTree `json:"children,omitempty"`
	}
	inferForest struct {
		Trees []inferTree `json:"trees"`
		Root  *inferTree  `json:"root"`
	}
	inferA struct {
		B *inferB `json:"b"`
	}
	inferB struct {
		A *inferA `json:"a"`
	}
	inferList    []inferList
	inferBadChan struct {
		C chan int `json:"c"`
	}
	inferBadKey struct {
		M map[inferAddress]int `json:"m"`
	}
)

// inferLevel decodes from a string through encoding.TextUnmarshaler.
type inferLevel int

func (l *inferLevel) UnmarshalText(b []byte) error { *l = inferLevel(len(b)); return nil }

func (l inferLevel) MarshalText() ([]byte, error) { return bytes.Repeat([]byte("x"), int(l)), nil }

func TestFor(t *testing.T) {
	tests := []struct {
		name string
		typ  reflect.Type
		opts *ForOptions
		want string
	}{
		{"bool", reflect.TypeFor[bool](), nil, `{"type":"boolean"}`},
		{"int", reflect.TypeFor[int](), nil, `{"type":"integer"}`},
		{"uint64", reflect.TypeFor[uint64](), nil, `{"type":"integer"}`},
		{"float32", reflect.TypeFor[float32](), nil, `{"type":"number"}`},
		{"string", reflect.TypeFor[string](), nil, `{"type":"string"}`},
		{"pointer", reflect.TypeFor[**string](), nil, `{"type":"string"}`},
		{"any", reflect.TypeFor[any](), nil, `{}`},
		{"error interface", reflect.TypeFor[error](), nil, `{}`},
		{"raw message", reflect.TypeFor[json.RawMessage](), nil, `{}`},
		{"time", reflect.TypeFor[time.Time](), nil, `{"type":"string","format":"date-time"}`},
		{"bytes", reflect.TypeFor[[]byte](), nil, `{"type":"string","contentEncoding":"base64"}`},
		{"slice", reflect.TypeFor[[]string](), nil, `{"type":"array","items":{"type":"string"}}`},
		{"array", reflect.TypeFor[[3]float64](), nil, `{"type":"array","items":{"type":"number"}}`},
		{"map", reflect.TypeFor[map[string]int](), nil, `{"type":"object","additionalProperties":{"type":"integer"}}`},
		{"map of any", reflect.TypeFor[map[string]any](), nil, `{"type":"object","additionalProperties":{}}`},
		{"text unmarshaler", reflect.TypeFor[inferLevel](), nil, `{"type":"string"}`},
		{"empty struct", reflect.TypeFor[struct{}](), nil, `{"type":"object","properties":{}}`},
		{
			"schema uri", reflect.TypeFor[struct{}](), &ForOptions{IncludeSchemaURI: true},
			`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{}}`,
		},
		{
			"required and optional", reflect.TypeFor[inferSimple](), nil,
			`{"type":"object","properties":{
				"text":{"type":"string","description":"the text to echo"},
				"count":{"type":"integer"},
				"ratio":{"type":"number"},
				"enabled":{"type":"boolean"},
				"NoTag":{"type":"integer"},
				"-":{"type":"string"},
				"quoted":{"type":"string"}},
			"required":["text","NoTag","-","quoted"]}`,
		},
		{
			"nested", reflect.TypeFor[*inferNested](), &ForOptions{RequireObject: true},
			`{"type":"object","properties":{
				"home":{"type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"}},"required":["street"]},
				"work":{"type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"}},"required":["street"]},
				"tags":{"type":"array","items":{"type":"string"}},
				"pairs":{"type":"array","items":{"type":"integer"}},
				"attrs":{"type":"object","additionalProperties":{"type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"}},"required":["street"]}},
				"byId":{"type":"object","additionalProperties":{"type":"string"}},
				"data":{"type":"string","contentEncoding":"base64"},
				"when":{"type":"string","format":"date-time"},
				"any":{},
				"raw":{},
				"num":{"type":"number"},
				"level":{"type":"string"}},
			"required":["home","tags","pairs","attrs","byId","data","when","any","raw","num","level"]}`,
		},
		{
			// Shadow: the outer field wins over the promoted ones. Ignored:
			// two promoted fields at the same depth cancel out. Fields of the
			// embedded pointer are optional.
			"embedded", reflect.TypeFor[inferEmbedded](), nil,
			`{"type":"object","properties":{
				"id":{"type":"string"},
				"note":{"type":"string"},
				"tagged":{"type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"}},"required":["street"]},
				"shadow":{"type":"integer"}},
			"required":["id","tagged","shadow"]}`,
		},
		{
			"tagged field wins at equal depth", reflect.TypeFor[inferTaggedWins](), nil,
			`{"type":"object","properties":{"name":{"type":"string"},"Name":{"type":"string"}},"required":["name","Name"]}`,
		},
		{
			"recursive root", reflect.TypeFor[inferTree](), nil,
			`{"type":"object","properties":{"value":{"type":"integer"},"children":{"type":"array","items":{"$ref":"#"}}},"required":["value"]}`,
		},
		{
			"recursive definition", reflect.TypeFor[inferForest](), nil,
			`{"type":"object","properties":{
				"trees":{"type":"array","items":{"$ref":"#/$defs/inferTree"}},
				"root":{"$ref":"#/$defs/inferTree"}},
			"required":["trees"],
			"$defs":{"inferTree":{"type":"object","properties":{"value":{"type":"integer"},"children":{"type":"array","items":{"$ref":"#/$defs/inferTree"}}},"required":["value"]}}}`,
		},
		{
			"mutual recursion", reflect.TypeFor[struct {
				A inferA `json:"a"`
			}](), nil,
			// Only inferA needs a definition: once it is a $ref, the
			// cycle through inferB is broken and inferB is inlined.
			`{"type":"object","properties":{"a":{"$ref":"#/$defs/inferA"}},"required":["a"],
			"$defs":{"inferA":{"type":"object","properties":{"b":{"type":"object","properties":{"a":{"$ref":"#/$defs/inferA"}}}}}}}`,
		},
		{"recursive slice", reflect.TypeFor[inferList](), nil, `{"type":"array","items":{"$ref":"#"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := For(tt.typ, tt.opts)
			if err != nil {
				t.Fatalf("For(%s) error: %v", tt.typ, err)
			}
			if g, w := canonicalJSON(t, string(got)), canonicalJSON(t, tt.want); g != w {
				t.Errorf("For(%s)\ngot  %s\nwant %s", tt.typ, got, w)
			}
			// Every derived schema must be usable.
			if _, err := Compile(got); err != nil {
				t.Errorf("Compile(derived schema) error: %v", err)
			}
		})
	}
}

func TestForOrderIsFieldOrder(t *testing.T) {
	type ordered struct {
		Zeta  string `json:"zeta"`
		Alpha int    `json:"alpha"`
		Mid   bool   `json:"mid,omitempty"`
		Beta  string `json:"beta" jsonschema:"a <b> & c"`
	}
	want := `{"type":"object","properties":{"zeta":{"type":"string"},"alpha":{"type":"integer"},` +
		`"mid":{"type":"boolean"},"beta":{"type":"string","description":"a <b> & c"}},"required":["zeta","alpha","beta"]}`
	for range 3 {
		got, err := ForType[ordered]()
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want {
			t.Fatalf("ForType[ordered]()\ngot  %s\nwant %s", got, want)
		}
	}
}

func TestForErrors(t *testing.T) {
	tests := []struct {
		name    string
		typ     reflect.Type
		opts    *ForOptions
		wantErr error
		wantMsg string
	}{
		{"nil type", nil, nil, ErrUnsupportedType, "nil reflect.Type"},
		{"chan field", reflect.TypeFor[inferBadChan](), nil, ErrUnsupportedType, `chan int at "/properties/c"`},
		{"func", reflect.TypeFor[func()](), nil, ErrUnsupportedType, `func() at "/"`},
		{"complex in slice", reflect.TypeFor[[]complex64](), nil, ErrUnsupportedType, `at "/items"`},
		{"struct map key", reflect.TypeFor[inferBadKey](), nil, ErrUnsupportedType, "map key type"},
		{"string root for object", reflect.TypeFor[string](), &ForOptions{RequireObject: true}, ErrNotObject, "string"},
		{"any root for object", reflect.TypeFor[any](), &ForOptions{RequireObject: true}, ErrNotObject, "interface {}"},
		{"slice root for object", reflect.TypeFor[[]inferSimple](), &ForOptions{RequireObject: true}, ErrNotObject, "[]jsonschema.inferSimple"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := For(tt.typ, tt.opts)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("For(%v) = %s, %v; want error %v", tt.typ, got, err, tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("For(%v) error = %q; want it to contain %q", tt.typ, err, tt.wantMsg)
			}
		})
	}
}

func TestForObject(t *testing.T) {
	if _, err := ForObject[*inferSimple](); err != nil {
		t.Errorf("ForObject[*inferSimple]() error: %v", err)
	}
	if _, err := ForObject[map[string]any](); err != nil {
		t.Errorf("ForObject[map[string]any]() error: %v", err)
	}
	if _, err := ForObject[int](); !errors.Is(err, ErrNotObject) {
		t.Errorf("ForObject[int]() error = %v; want %v", err, ErrNotObject)
	}
}

// TestForAcceptsEncodedValues checks the contract that matters to tools: the
// JSON encoding of a populated Go value satisfies the schema derived from its
// type, and a required property left out is reported.
func TestForAcceptsEncodedValues(t *testing.T) {
	yes := true
	tests := []struct {
		name  string
		value any
	}{
		{"simple", inferSimple{Text: "hi", Enabled: &yes, Quoted: 7}},
		{"nested", inferNested{
			Home: inferAddress{Street: "s"}, Work: &inferAddress{Street: "w"}, Tags: []string{"a"}, Attrs: map[string]inferAddress{"x": {Street: "y"}},
			ByID: map[int]string{1: "one"}, Data: []byte("hi"), Any: []int{1}, Raw: json.RawMessage(`{"k":[1]}`),
			Num: "1.5", Level: 2,
		}},
		{"embedded", inferEmbedded{inferBase: inferBase{ID: "i"}, inferExtra: &inferExtra{Note: "n"}}},
		{"tree", inferTree{Value: 1, Children: []*inferTree{{Value: 2, Children: []*inferTree{{Value: 3}}}}}},
		{"forest", inferForest{Trees: []inferTree{{Value: 1}}, Root: &inferTree{Value: 2}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			schema, err := For(reflect.TypeOf(tt.value), nil)
			if err != nil {
				t.Fatal(err)
			}
			v, err := Compile(schema)
			if err != nil {
				t.Fatal(err)
			}
			b, err := json.Marshal(tt.value)
			if err != nil {
				t.Fatal(err)
			}
			if err := v.ValidateJSON(b); err != nil {
				t.Errorf("ValidateJSON(%s) = %v; want nil\nschema: %s", b, err, schema)
			}
		})
	}

	schema, err := ForType[inferTree]()
	if err != nil {
		t.Fatal(err)
	}
	v, err := Compile(schema)
	if err != nil {
		t.Fatal(err)
	}
	err = v.ValidateJSON([]byte(`{"value":1,"children":[{"children":[]}]}`))
	if got, want := errString(err), `/children/0: missing required property "value"`; got != want {
		t.Errorf("ValidateJSON(tree missing value) = %q; want %q", got, want)
	}
}
