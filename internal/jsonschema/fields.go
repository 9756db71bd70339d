package jsonschema

import (
	"reflect"
	"slices"
	"strings"
	"unicode"
)

// field is a JSON object member of a struct, as encoding/json sees it.
type field struct {
	name        string
	tagged      bool  // the name came from a json tag
	index       []int // path of field indexes through embedded structs
	typ         reflect.Type
	optional    bool
	quoted      bool // ",string" option on a scalar
	description string
}

// jsonFields mirrors typeFields in encoding/json: it walks embedded structs
// breadth first, and when several fields share a name keeps the shallowest
// one, preferring a tagged field at equal depth, and drops the name if it is
// still ambiguous. The result is in struct field order.
func jsonFields(t reflect.Type) []field {
	type level struct {
		typ    reflect.Type
		index  []int
		viaPtr bool // reached through an embedded pointer
	}
	var (
		current []level
		next    = []level{{typ: t}}
		// count and nextCount record how many times a struct type was
		// embedded at the current and next depth.
		count, nextCount map[reflect.Type]int
		visited          = map[reflect.Type]bool{}
		fields           []field
	)
	for len(next) > 0 {
		current, next = next, current[:0]
		count, nextCount = nextCount, map[reflect.Type]int{}
		for _, f := range current {
			if visited[f.typ] {
				continue
			}
			visited[f.typ] = true
			for i := range f.typ.NumField() {
				sf := f.typ.Field(i)
				if sf.Anonymous {
					et := sf.Type
					if et.Kind() == reflect.Pointer {
						et = et.Elem()
					}
					if !sf.IsExported() && et.Kind() != reflect.Struct {
						continue
					}
				} else if !sf.IsExported() {
					continue
				}
				tag := sf.Tag.Get("json")
				if tag == "-" {
					continue
				}
				name, opts, _ := strings.Cut(tag, ",")
				if !isValidTag(name) {
					name = ""
				}
				index := append(slices.Clip(f.index), i)
				ft := sf.Type
				if ft.Name() == "" && ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if name != "" || !sf.Anonymous || ft.Kind() != reflect.Struct {
					quoted := false
					if hasOption(opts, "string") {
						switch ft.Kind() {
						case reflect.Bool,
							reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
							reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
							reflect.Float32, reflect.Float64,
							reflect.String:
							quoted = true
						}
					}
					fl := field{
						name:   name,
						tagged: name != "",
						index:  index,
						typ:    sf.Type,
						optional: f.viaPtr || sf.Type.Kind() == reflect.Pointer ||
							hasOption(opts, "omitempty") || hasOption(opts, "omitzero"),
						quoted:      quoted,
						description: sf.Tag.Get("jsonschema"),
					}
					if fl.name == "" {
						fl.name = sf.Name
					}
					fields = append(fields, fl)
					if count[f.typ] > 1 {
						// The enclosing struct was embedded more than once
						// at this depth: add a duplicate so that the
						// conflict resolution below drops the name.
						fields = append(fields, fl)
					}
					continue
				}
				nextCount[ft]++
				if nextCount[ft] == 1 {
					next = append(next, level{
						typ:    ft,
						index:  index,
						viaPtr: f.viaPtr || sf.Type.Kind() == reflect.Pointer,
					})
				}
			}
		}
	}

	slices.SortStableFunc(fields, func(a, b field) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		if c := len(a.index) - len(b.index); c != 0 {
			return c
		}
		if a.tagged != b.tagged {
			if a.tagged {
				return -1
			}
			return 1
		}
		return slices.Compare(a.index, b.index)
	})
	out := fields[:0]
	for i := 0; i < len(fields); {
		j := i + 1
		for j < len(fields) && fields[j].name == fields[i].name {
			j++
		}
		group := fields[i:j]
		if len(group) == 1 || len(group[0].index) != len(group[1].index) || group[0].tagged != group[1].tagged {
			out = append(out, group[0])
		}
		i = j
	}
	slices.SortFunc(out, func(a, b field) int { return slices.Compare(a.index, b.index) })
	return out
}

func hasOption(opts, name string) bool {
	for opts != "" {
		var o string
		o, opts, _ = strings.Cut(opts, ",")
		if o == name {
			return true
		}
	}
	return false
}

// isValidTag reports whether s is a json tag name encoding/json accepts.
func isValidTag(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
}
