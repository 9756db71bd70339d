package mcp

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// flatIn has a field of every kind flatArgs decodes.
type flatIn struct {
	S     string  `json:"s"`
	B     bool    `json:"b,omitempty"`
	I     int     `json:"i"`
	I8    int8    `json:"i8"`
	U16   uint16  `json:"u16"`
	U     uint    `json:"u"`
	F32   float32 `json:"f32"`
	F     float64 `json:"f"`
	Named level   `json:"level"`
	NoTag string
	Skip  string `json:"-"`
	Dash  string `json:"-,"`
	inner string
}

type level string

var flatSeeds = []string{
	`{"s":"hello","b":true,"i":-3,"i8":127,"u16":65535,"u":7,"f32":1.5,"f":-2e-3,"level":"info","NoTag":"n","-":"d"}`,
	`{}`, `{"s":null,"i":null}`, `{"x":[1,{"s":2}],"s":"a"}`, `{"s":"a","s":"b"}`, `{"S":"case"}`, `{"notag":"n"}`,
	`{"s":"esc\u0061ped"}`, `{"s":"\u00e9"}`, "{\"s\":\"\xff\"}", `{"s":5}`, `{"b":"true"}`, `{"b":1}`,
	`{"i":1.0}`, `{"i":1e2}`, `{"i":9223372036854775808}`, `{"i8":128}`, `{"i8":-129}`, `{"u16":65536}`, `{"u":-1}`,
	`{"f32":3.5e38}`, `{"f32":1e39}`, `{"f":1e400}`, `{"f":-0}`, `{"f":"1"}`, `{"i":-0}`, `{"level":7}`,
	`{"inner":"x"}`, `{"Skip":"x"}`, `[]`, `null`, `"s"`, ``, `{"s":"a"`, `{"s":"a"} x`,
}

// checkFlat: flatArgs decodes what json.Unmarshal decodes, or declines.
func checkFlat(t *testing.T, d *flatArgs, args []byte) {
	t.Helper()
	var want flatIn
	werr := json.Unmarshal(args, &want)
	var got flatIn
	if !d.decode(args, reflect.ValueOf(&got).Elem()) {
		return
	}
	if werr != nil {
		t.Fatalf("%q: decoded %+v, json.Unmarshal says %v", args, got, werr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q:\n got %+v\nwant %+v", args, got, want)
	}
}

func TestFlatArgs(t *testing.T) {
	d := newFlatArgs(reflect.TypeFor[flatIn]())
	if d == nil {
		t.Fatal("flatIn is not flat")
	}
	for _, s := range flatSeeds {
		checkFlat(t, d, []byte(s))
	}
	var in flatIn
	if !d.decode([]byte(flatSeeds[0]), reflect.ValueOf(&in).Elem()) || in.S != "hello" || in.Named != "info" || in.Dash != "d" {
		t.Errorf("the common case was declined or wrong: %+v", in)
	}
	for name, typ := range map[string]reflect.Type{
		"embedded": reflect.TypeFor[struct{ flatIn }](),
		"string option": reflect.TypeFor[struct {
			N int `json:"n,string"`
		}](),
		"pointer":        reflect.TypeFor[struct{ P *string }](),
		"slice":          reflect.TypeFor[struct{ L []string }](),
		"map":            reflect.TypeFor[struct{ M map[string]int }](),
		"interface":      reflect.TypeFor[struct{ A any }](),
		"nested struct":  reflect.TypeFor[struct{ N struct{ A int } }](),
		"unmarshaler":    reflect.TypeFor[struct{ T time.Time }](),
		"text unmarshal": reflect.TypeFor[struct{ D textField }](),
		"same name": reflect.TypeFor[struct {
			A string `json:"x"`
			B string `json:"X"`
		}](),
		"non-ASCII name": reflect.TypeFor[struct {
			A string `json:"é"`
		}](),
		"not a struct":    reflect.TypeFor[map[string]any](),
		"own unmarshaler": reflect.TypeFor[selfDecoding](),
		"json.Number":     reflect.TypeFor[struct{ N json.Number }](),
	} {
		if newFlatArgs(typ) != nil {
			t.Errorf("%s (%v): got a flat decoder", name, typ)
		}
	}
}

type textField struct{ v string }

func (f *textField) UnmarshalText(b []byte) error { f.v = string(b); return nil }

type selfDecoding struct{ A string }

func (s *selfDecoding) UnmarshalJSON([]byte) error { s.A = "mine"; return nil }

func FuzzFlatArgs(f *testing.F) {
	for _, s := range flatSeeds {
		f.Add([]byte(s))
	}
	d := newFlatArgs(reflect.TypeFor[flatIn]())
	f.Fuzz(func(t *testing.T, args []byte) {
		checkFlat(t, d, args)
	})
}
