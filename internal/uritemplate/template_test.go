package uritemplate

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name     string
		template string
		wantVars []string
	}{
		{"literal only", "test://static/resource", nil},
		{"empty", "", nil},
		{"simple", "test://template/{id}/data", []string{"id"}},
		{"all operators", "{a}{+b}{#c}{.d}{/e}{;f}{?g}{&h}", []string{"a", "b", "c", "d", "e", "f", "g", "h"}},
		{"modifiers", "{/list*,path:4}{?keys*}", []string{"list", "path", "keys"}},
		{"repeated variable", "{x}/{x}{?x,y}", []string{"x", "y"}},
		{"dotted and encoded names", "{a.b,c%2Fd,_1}", []string{"a.b", "c%2Fd", "_1"}},
		{"max prefix", "{var:9999}", []string{"var"}},
		{"longest", strings.Repeat("a", MaxTemplateLength), nil},
		{"max variables", "{a}" + strings.Repeat("{/b}", MaxVarspecs-1), []string{"a", "b"}},
		{"non-URI literal", "/a b/{x}/ü", []string{"x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl, err := Parse(tt.template)
			if err != nil {
				t.Fatalf("Parse(%q) error: %v", tt.template, err)
			}
			if got := tmpl.String(); got != tt.template {
				t.Errorf("String() = %q; want %q", got, tt.template)
			}
			if got := tmpl.Vars(); !slices.Equal(got, tt.wantVars) {
				t.Errorf("Vars() = %q; want %q", got, tt.wantVars)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name     string
		template string
		wantMsg  string
	}{
		{"unclosed", "test://{id", `offset 7: unclosed "{"`},
		{"nested", "{a{b}}", `offset 0: unclosed "{"`},
		{"unmatched close", "a}b", `offset 1: unmatched "}"`},
		{"close after expression", "{a}}", `offset 3: unmatched "}"`},
		{"empty expression", "x{}", "offset 1: empty expression"},
		{"operator only", "{+}", `invalid variable name ""`},
		{"reserved operator =", "{=a}", `reserved operator '='`},
		{"reserved operator ,", "{,a}", `reserved operator ','`},
		{"reserved operator !", "{!a}", `reserved operator '!'`},
		{"reserved operator @", "{@a}", `reserved operator '@'`},
		{"reserved operator |", "{|a}", `reserved operator '|'`},
		{"bad operator", "{$a}", `invalid variable name "$a"`},
		{"empty varname", "{a,}", `invalid variable name ""`},
		{"space in name", "{a b}", `invalid variable name "a b"`},
		{"hyphen in name", "{a-b}", `invalid variable name "a-b"`},
		{"leading dot", "{.a.}", `invalid variable name "a."`},
		{"double dot", "{a..b}", `invalid variable name "a..b"`},
		{"bad pct in name", "{a%2}", `invalid variable name "a%2"`},
		{"non-ASCII name", "{é}", `invalid variable name "é"`},
		{"zero prefix", "{a:0}", `invalid prefix modifier "a:0"`},
		{"empty prefix", "{a:}", `invalid prefix modifier "a:"`},
		{"long prefix", "{a:10000}", `invalid prefix modifier "a:10000"`},
		{"leading zero prefix", "{a:01}", `invalid prefix modifier "a:01"`},
		{"signed prefix", "{a:+1}", `invalid prefix modifier "a:+1"`},
		{"prefix and explode", "{a:3*}", `invalid variable name "a:3"`},
		{"explode twice", "{a**}", `invalid variable name "a*"`},
		{"too long", strings.Repeat("a", MaxTemplateLength+1), "longer than 8192 bytes"},
		{"too many variables", "{a}" + strings.Repeat("{/b,c}", MaxVarspecs/2), "offset 189: more than 64 variables"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl, err := Parse(tt.template)
			if err == nil {
				t.Fatalf("Parse(%q) = %v; want error", tt.template, tmpl)
			}
			if !errors.Is(err, ErrInvalidTemplate) {
				t.Errorf("Parse(%q) error = %v; want %v", tt.template, err, ErrInvalidTemplate)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("Parse(%q) error = %q; want it to contain %q", tt.template, err, tt.wantMsg)
			}
		})
	}
}
