package jsonschema

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	lib "github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// ValidationError reports why a value does not satisfy a schema. Its message
// is written for the caller of a tool, often a language model, to correct
// its arguments: one short clause per problem, for example
//
//	missing required property "text"; /ms: got string, want integer
type ValidationError struct {
	// Problems holds one line per failed assertion: "<JSON pointer>:
	// <message>", or just "<message>" for the root value. Lines are sorted
	// by location (array indexes numerically) and then text, without
	// duplicates, so the result does not depend on map iteration order. A failed anyOf or oneOf is a single
	// line listing what each alternative was missing.
	Problems []string
}

// maxReportedProblems bounds how many lines [ValidationError.Error] shows.
const maxReportedProblems = 8

// Error joins the first problems with "; ", and says how many were left out.
func (e *ValidationError) Error() string {
	if len(e.Problems) <= maxReportedProblems {
		return strings.Join(e.Problems, "; ")
	}
	return fmt.Sprintf("%s; and %d more problems",
		strings.Join(e.Problems[:maxReportedProblems], "; "), len(e.Problems)-maxReportedProblems)
}

func newValidationError(e *lib.ValidationError) *ValidationError {
	return &ValidationError{Problems: render(flatten(e))}
}

type problem struct {
	location []string // JSON pointer tokens of the instance location
	msg      string
}

// compareProblems orders problems by location, comparing array indexes
// numerically (so /2 sorts before /10), and then by message.
func compareProblems(a, b problem) int {
	for i := 0; i < len(a.location) && i < len(b.location); i++ {
		x, y := a.location[i], b.location[i]
		if x == y {
			continue
		}
		xi, xerr := strconv.ParseUint(x, 10, 64)
		yi, yerr := strconv.ParseUint(y, 10, 64)
		if xerr == nil && yerr == nil {
			return cmp.Compare(xi, yi)
		}
		return strings.Compare(x, y)
	}
	return cmp.Or(cmp.Compare(len(a.location), len(b.location)), strings.Compare(a.msg, b.msg))
}

// flatten turns the library's error tree into a sorted list of leaf
// problems. Grouping nodes (the root, allOf, $ref) are dissolved; anyOf and
// oneOf failures stay one problem each, because their causes only make sense
// together.
func flatten(e *lib.ValidationError) []problem {
	var out []problem
	collect(e, &out)
	slices.SortFunc(out, compareProblems)
	return slices.CompactFunc(out, func(a, b problem) bool { return compareProblems(a, b) == 0 })
}

func render(ps []problem) []string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		if len(p.location) == 0 {
			lines[i] = p.msg
		} else {
			lines[i] = jsonPointer(p.location) + ": " + p.msg
		}
	}
	return lines
}

func collect(e *lib.ValidationError, out *[]problem) {
	add := func(msg string) {
		*out = append(*out, problem{location: e.InstanceLocation, msg: msg})
	}
	switch k := e.ErrorKind.(type) {
	case *kind.Schema, *kind.Group, *kind.AllOf, *kind.Reference:
		if len(e.Causes) == 0 {
			add("value does not match the schema")
		}
		for _, c := range e.Causes {
			collect(c, out)
		}
	case *kind.AnyOf:
		add("does not match any alternative of anyOf: " + alternatives(e.Causes))
	case *kind.OneOf:
		if len(k.Subschemas) >= 2 {
			add(fmt.Sprintf("must match exactly one alternative of oneOf, but matches alternatives %d and %d",
				k.Subschemas[0], k.Subschemas[1]))
		} else {
			add("does not match any alternative of oneOf: " + alternatives(e.Causes))
		}
	case *kind.Required:
		add("missing required " + plural("property", "properties", len(k.Missing)) + " " + quoteAll(k.Missing))
	case *kind.AdditionalProperties:
		props := slices.Sorted(slices.Values(k.Properties))
		add("unexpected " + plural("property", "properties", len(props)) + " " + quoteAll(props))
	case *kind.Type:
		add(fmt.Sprintf("got %s, want %s", k.Got, strings.Join(k.Want, " or ")))
	case *kind.Enum:
		if len(k.Want) == 1 {
			add("value must be " + display(k.Want[0]))
			break
		}
		want := make([]string, len(k.Want))
		for i, w := range k.Want {
			want[i] = display(w)
		}
		add("value must be one of " + strings.Join(want, ", "))
	case *kind.Const:
		add("value must be " + display(k.Want))
	case *kind.FalseSchema:
		// A false schema usually comes from unevaluatedProperties,
		// additionalProperties or items being false.
		switch {
		case strings.HasSuffix(e.SchemaURL, "Properties"):
			add("property is not allowed")
		case strings.HasSuffix(e.SchemaURL, "/items"), strings.HasSuffix(e.SchemaURL, "Items"):
			add("item is not allowed")
		default:
			add("value is not allowed")
		}
	case *kind.DependentRequired:
		add(fmt.Sprintf("missing %s %s, required when %s is present",
			plural("property", "properties", len(k.Missing)), quoteAll(k.Missing), display(k.Prop)))
	case *kind.Dependency:
		add(fmt.Sprintf("missing %s %s, required when %s is present",
			plural("property", "properties", len(k.Missing)), quoteAll(k.Missing), display(k.Prop)))
	case *kind.Not:
		add(`value must not match the "not" schema`)
	case *kind.Pattern:
		add(fmt.Sprintf("%s does not match pattern %s", display(k.Got), display(k.Want)))
	case *kind.Format:
		add(fmt.Sprintf("%s is not a valid %s", display(k.Got), k.Want))
	case *kind.Minimum:
		add(fmt.Sprintf("got %s, want >= %s", ratString(k.Got), ratString(k.Want)))
	case *kind.ExclusiveMinimum:
		add(fmt.Sprintf("got %s, want > %s", ratString(k.Got), ratString(k.Want)))
	case *kind.Maximum:
		add(fmt.Sprintf("got %s, want <= %s", ratString(k.Got), ratString(k.Want)))
	case *kind.ExclusiveMaximum:
		add(fmt.Sprintf("got %s, want < %s", ratString(k.Got), ratString(k.Want)))
	case *kind.MultipleOf:
		add(fmt.Sprintf("got %s, want a multiple of %s", ratString(k.Got), ratString(k.Want)))
	case *kind.MinLength:
		add(fmt.Sprintf("got %d characters, want at least %d", k.Got, k.Want))
	case *kind.MaxLength:
		add(fmt.Sprintf("got %d characters, want at most %d", k.Got, k.Want))
	case *kind.MinItems:
		add(fmt.Sprintf("got %d items, want at least %d", k.Got, k.Want))
	case *kind.MaxItems:
		add(fmt.Sprintf("got %d items, want at most %d", k.Got, k.Want))
	case *kind.MinProperties:
		add(fmt.Sprintf("got %d properties, want at least %d", k.Got, k.Want))
	case *kind.MaxProperties:
		add(fmt.Sprintf("got %d properties, want at most %d", k.Got, k.Want))
	case *kind.PropertyNames:
		msg := "invalid property name " + display(k.Property)
		if len(e.Causes) > 0 {
			msg += " (" + strings.Join(render(flatten(&lib.ValidationError{
				ErrorKind: &kind.Group{},
				Causes:    e.Causes,
			})), "; ") + ")"
		}
		add(msg)
	default:
		add(libraryMessage(e))
	}
}

const (
	maxAlternatives           = 4
	maxProblemsPerAlternative = 3
)

// alternatives describes why each branch of an anyOf or oneOf failed, as
// "(…) or (…)".
func alternatives(causes []*lib.ValidationError) string {
	var parts []string
	for i, c := range causes {
		if i == maxAlternatives {
			parts = append(parts, fmt.Sprintf("%d more", len(causes)-i))
			break
		}
		lines := render(flatten(c))
		if len(lines) > maxProblemsPerAlternative {
			lines = append(lines[:maxProblemsPerAlternative:maxProblemsPerAlternative], "…")
		}
		parts = append(parts, "("+strings.Join(lines, "; ")+")")
	}
	if len(parts) == 0 {
		return "no alternative matched"
	}
	return strings.Join(parts, " or ")
}

// libraryMessage is the library's own wording for an error kind, without
// its location prefix.
func libraryMessage(e *lib.ValidationError) string {
	leaf := &lib.ValidationError{SchemaURL: e.SchemaURL, ErrorKind: e.ErrorKind}
	return strings.TrimPrefix(leaf.Error(), "at '': ")
}

// ratString prints an exact number the way it would appear in JSON.
func ratString(r *big.Rat) string {
	if r == nil {
		return "?"
	}
	if r.IsInt() {
		return r.Num().String()
	}
	if f, exact := r.Float64(); exact {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	return r.FloatString(10)
}

func plural(one, many string, n int) string {
	if n == 1 {
		return one
	}
	return many
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = display(s)
	}
	return strings.Join(q, ", ")
}

// maxDisplayLen bounds how much of a value is echoed in a message.
const maxDisplayLen = 64

// display renders a JSON value (or Go string) compactly, as JSON.
func display(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	s := fmt.Sprint(v)
	if err := enc.Encode(v); err == nil {
		s = strings.TrimSuffix(b.String(), "\n")
	}
	if len(s) > maxDisplayLen {
		cut := maxDisplayLen
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

func jsonPointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(escapePointer(t))
	}
	return b.String()
}
