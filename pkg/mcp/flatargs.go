package mcp

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"

	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// flatArgs decodes a typed tool's arguments into its input struct as
// json.Unmarshal does, without encoding/json's reflection walk, when the
// struct is flat (its fields strings, booleans and numbers) and the
// arguments can be read plainly: most tools' inputs. Anything else takes
// encoding/json's path, which also reports every error.
type flatArgs struct {
	names  []string    // the fields' json names, as protocol.ScanMembers wants them
	fields []flatField // in the order of names
}

type flatField struct {
	index int // in the struct
	kind  reflect.Kind
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
	jsonNumber      = reflect.TypeFor[json.Number]()
)

// newFlatArgs returns the decoder of struct type t, or nil when t is not
// flat: a field embedded, of another kind, with the ",string" option, a
// name that is not plain ASCII or that another field's matches when
// letter case is ignored (encoding/json's rules for those are subtle), or
// a type with a decoding method of its own.
func newFlatArgs(t reflect.Type) *flatArgs {
	if t.Kind() != reflect.Struct || hasUnmarshaler(t) {
		return nil
	}
	d := &flatArgs{}
	seen := map[string]bool{}
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			return nil
		}
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if strings.Contains(","+opts+",", ",string,") {
			return nil
		}
		if name == "" {
			name = f.Name
		}
		if !plainName(name) || seen[strings.ToLower(name)] {
			return nil
		}
		seen[strings.ToLower(name)] = true
		switch f.Type.Kind() {
		case reflect.String, reflect.Bool,
			reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
			reflect.Float32, reflect.Float64:
		default:
			return nil
		}
		if hasUnmarshaler(f.Type) || f.Type == jsonNumber {
			return nil // json.Number: encoding/json checks its strings are numbers
		}
		d.names = append(d.names, name)
		d.fields = append(d.fields, flatField{index: i, kind: f.Type.Kind()})
	}
	return d
}

func hasUnmarshaler(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	return p.Implements(jsonUnmarshaler) || p.Implements(textUnmarshaler) ||
		t.Implements(jsonUnmarshaler) || t.Implements(textUnmarshaler)
}

// plainName reports whether name is a non-empty name of ASCII letters,
// digits, '_' and '-': one encoding/json takes as written.
func plainName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// decode sets the fields of v (a zero struct of d's type) from args. ok
// is false when args cannot be read plainly or json.Unmarshal would
// report an error; v may then hold some fields, and the caller starts
// again from a zero value with encoding/json.
func (d *flatArgs) decode(args []byte, v reflect.Value) (ok bool) {
	var buf [8][]byte
	vals := buf[:min(len(d.names), len(buf))]
	if len(d.names) > len(buf) {
		vals = make([][]byte, len(d.names))
	}
	if !protocol.ScanMembers(args, d.names, vals) {
		return false
	}
	for i, raw := range vals {
		if raw == nil || string(raw) == "null" {
			continue // absent, or null: encoding/json leaves the field alone
		}
		f := d.fields[i]
		fv := v.Field(f.index)
		switch f.kind {
		case reflect.String:
			s, ok := protocol.PlainString(raw)
			if !ok {
				return false
			}
			fv.SetString(s)
		case reflect.Bool:
			switch string(raw) {
			case "true":
				fv.SetBool(true)
			case "false":
				fv.SetBool(false)
			default:
				return false
			}
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			if !isNumber(raw) {
				return false
			}
			n, err := strconv.ParseInt(string(raw), 10, 64)
			if err != nil || fv.OverflowInt(n) {
				return false
			}
			fv.SetInt(n)
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			if !isNumber(raw) {
				return false
			}
			n, err := strconv.ParseUint(string(raw), 10, 64)
			if err != nil || fv.OverflowUint(n) {
				return false
			}
			fv.SetUint(n)
		case reflect.Float32, reflect.Float64:
			if !isNumber(raw) {
				return false
			}
			n, err := strconv.ParseFloat(string(raw), fv.Type().Bits())
			if err != nil || fv.OverflowFloat(n) {
				return false
			}
			fv.SetFloat(n)
		}
	}
	return true
}

// isNumber reports whether raw, one well-formed JSON value, is a number.
func isNumber(raw []byte) bool {
	return raw[0] == '-' || '0' <= raw[0] && raw[0] <= '9'
}
