package uritemplate

import (
	"maps"
	"math/rand/v2"
	"strings"
	"testing"
)

var matchTests = []struct {
	name     string
	template string
	uri      string
	want     map[string]string // nil: no match
}{
	{"id", "test://template/{id}/data", "test://template/123/data", map[string]string{"id": "123"}},
	{"id decoded", "test://template/{id}/data", "test://template/a%20b%2Fc/data", map[string]string{"id": "a b/c"}},
	{"id keeps plus", "test://template/{id}/data", "test://template/a+b/data", map[string]string{"id": "a+b"}},
	{"id spans no slash", "test://template/{id}/data", "test://template/1/2/data", nil},
	{"id must not be empty", "test://template/{id}/data", "test://template//data", nil},
	{"id wrong literal", "test://template/{id}/data", "test://template/123/dat", nil},
	{"id trailing text", "test://template/{id}/data", "test://template/123/data/x", nil},
	{"id leading text", "test://template/{id}/data", "xtest://template/123/data", nil},
	{"id bad escape", "test://template/{id}/data", "test://template/%zz/data", nil},
	{"split keeps triplets whole", "{a}{b}", "%41%42", map[string]string{"a": "A", "b": "B"}},
	{"repeated adjacent variable", "{x}{x}", "%A6%A6", map[string]string{"x": "\xa6"}},
	{"id no query", "test://template/{id}/data", "test://template/1?x/data", nil},
	{"literal only", "test://static", "test://static", map[string]string{}},
	{"literal only mismatch", "test://static", "test://stati", nil},
	{"regexp metacharacters in literal", "a.b+c(d)/{x}", "a.b+c(d)/1", map[string]string{"x": "1"}},
	{"regexp metacharacters not wildcards", "a.b/{x}", "aXb/1", nil},
	{"two vars", "users://{org}/{user}", "users://acme/bob", map[string]string{"org": "acme", "user": "bob"}},
	{"shortest first var", "{a}-{b}", "x-y-z", map[string]string{"a": "x", "b": "y-z"}},
	{"name and extension", "files://{name}{.ext}", "files://a.b.c", map[string]string{"name": "a.b", "ext": "c"}},
	{"extension absent", "files://{name}{.ext}", "files://readme", map[string]string{"name": "readme"}},
	{"repeated var agrees", "{x}/{x}", "a/a", map[string]string{"x": "a"}},
	{"repeated var disagrees", "{x}/{x}", "a/b", nil},
	{"prefix limits length", "{x:3}", "abcd", nil},
	{"prefix within length", "{x:3}", "ab", map[string]string{"x": "ab"}},
	{"prefix checked after the split", "{y}{x:3}", "abcdef", nil},
	{"prefix after literal", "{y}-{x:3}", "abc-def", map[string]string{"y": "abc", "x": "def"}},
	{"label with encoded dot", "x{.a}", "x.b%2Ec", map[string]string{"a": "b.c"}},
	{"label with raw dot", "x{.a}", "x.b.c", nil},
	{"prefix and full agree", "{/var:1,var}", "/v/value", map[string]string{"var": "value"}},
	{"prefix and full disagree", "{/var:1,var}", "/w/value", nil},
	{"multi simple", "map?{x,y}", "map?1024,768", map[string]string{"x": "1024", "y": "768"}},
	{"multi simple left to right", "map?{x,y}", "map?1024", map[string]string{"x": "1024"}},
	{"multi simple empty second", "?{x,empty}", "?1024,", map[string]string{"x": "1024", "empty": ""}},
	{"reserved path", "file:///{+path}", "file:///home/user/a%20b.txt", map[string]string{"path": "home/user/a b.txt"}},
	{"reserved path one segment", "file:///{+path}", "file:///x", map[string]string{"path": "x"}},
	{"reserved path empty", "file:///{+path}", "file:///", nil},
	{"reserved path with query", "file:///{+path}", "file:///a/b?c=d", map[string]string{"path": "a/b?c=d"}},
	{"reserved before literal", "{+path}/here", "/foo/bar/here", map[string]string{"path": "/foo/bar"}},
	{"reserved then query", "repo://{+path}{?ref}", "repo://a/b?ref=main", map[string]string{"path": "a/b", "ref": "main"}},
	{"reserved two", "{+path,x}/here", "/foo/bar,1024/here", map[string]string{"path": "/foo/bar", "x": "1024"}},
	{"fragment", "doc{#section}", "doc#intro/part", map[string]string{"section": "intro/part"}},
	{"fragment empty", "doc{#section}", "doc#", map[string]string{"section": ""}},
	{"fragment absent", "doc{#section}", "doc", map[string]string{}},
	{"path segments", "api{/version,id}", "api/v1/42", map[string]string{"version": "v1", "id": "42"}},
	{"path segments partial", "api{/version,id}", "api/v1", map[string]string{"version": "v1"}},
	{"path segment absent", "api{/version}", "api", map[string]string{}},
	{"path segment decoded", "{/who,dub}", "/fred/me%2Ftoo", map[string]string{"who": "fred", "dub": "me/too"}},
	{"path segment too many", "api{/version}", "api/v1/42", nil},
	{"params", "x{;a,b}", "x;b=2;a=1", map[string]string{"a": "1", "b": "2"}},
	{"params empty", "x{;v,empty,who}", "x;v=6;empty;who=fred", map[string]string{"v": "6", "empty": "", "who": "fred"}},
	{"params undeclared", "x{;a}", "x;c=1", nil},
	{"query", "search{?q,lang}", "search?q=mcp&lang=en", map[string]string{"q": "mcp", "lang": "en"}},
	{"query any order", "search{?q,lang}", "search?lang=en&q=mcp", map[string]string{"q": "mcp", "lang": "en"}},
	{"query optional", "search{?q,lang}", "search?lang=en", map[string]string{"lang": "en"}},
	{"query absent", "search{?q,lang}", "search", map[string]string{}},
	{"query bare question mark", "search{?q,lang}", "search?", map[string]string{}},
	{"query empty value", "search{?q}", "search?q=", map[string]string{"q": ""}},
	{"query no equals", "search{?q}", "search?q", map[string]string{"q": ""}},
	{"query decoded", "search{?q}", "search?q=a%20b%26c%3Dd", map[string]string{"q": "a b&c=d"}},
	{"query value with equals", "search{?q}", "search?q=a=b", map[string]string{"q": "a=b"}},
	{"query undeclared", "search{?q}", "search?q=1&x=2", nil},
	{"query repeated", "search{?q}", "search?q=1&q=2", nil},
	{"query bad escape", "search{?q}", "search?q=%2", nil},
	{"query and continuation", "s{?a}{&b,c}", "s?c=3&a=1&b=2", map[string]string{"a": "1", "b": "2", "c": "3"}},
	{"continuation only", "s{?a}{&b}", "s&b=2", map[string]string{"b": "2"}},
	{"continuation after literal", "s?fixed=yes{&x}", "s?fixed=yes&x=1024", map[string]string{"x": "1024"}},
	{"continuation absent", "s?fixed=yes{&x}", "s?fixed=yes", map[string]string{}},
	{"query then fragment", "s{?q}{#f}", "s?q=1#top", map[string]string{"q": "1", "f": "top"}},
	{"path then query", "r://{id}{/sub}{?v}", "r://1/x?v=2", map[string]string{"id": "1", "sub": "x", "v": "2"}},
	{"encoded literal", "/a b/{x}", "/a%20b/1", map[string]string{"x": "1"}},
	{"unicode value", "u/{x}", "u/%C3%BC", map[string]string{"x": "ü"}},
	{"raw unicode value", "u/{x}", "u/ü", map[string]string{"x": "ü"}},
	{"longest URI", "{+x}", strings.Repeat("a", MaxURILength), map[string]string{"x": strings.Repeat("a", MaxURILength)}},
	{"URI too long", "{+x}", strings.Repeat("a", MaxURILength+1), nil},
}

func TestMatch(t *testing.T) {
	for _, tt := range matchTests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl, err := Parse(tt.template)
			if err != nil {
				t.Fatalf("Parse(%q) error: %v", tt.template, err)
			}
			got, ok := tmpl.Match(tt.uri)
			if ok != (tt.want != nil) || !maps.Equal(got, tt.want) {
				t.Errorf("Parse(%q).Match(%q) = %v, %t; want %v, %t", tt.template, tt.uri, got, ok, tt.want, tt.want != nil)
			}
		})
	}
}

// TestMatchExpandExamples matches every expansion example against its
// template: each must match, and the values found must expand to the same
// URI.
func TestMatchExpandExamples(t *testing.T) {
	for _, tt := range expandTests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl, err := Parse(tt.template)
			if err != nil {
				t.Fatal(err)
			}
			vars, ok := tmpl.Match(tt.want)
			if !ok {
				if strings.HasPrefix(tt.template, "O{") && tt.want == "OX" {
					return // a simple variable must match at least one character
				}
				if tt.want == "" && strings.HasPrefix(tt.name, "all undefined") {
					return
				}
				t.Fatalf("Parse(%q).Match(%q) did not match", tt.template, tt.want)
			}
			if tt.name == "reserved keeps pct triplets" {
				return // "%2F" decodes to "/", which reserved expansion keeps
			}
			if got := tmpl.Expand(vars); got != tt.want {
				t.Errorf("Expand(Match(%q)) = %q (vars %v)", tt.want, got, vars)
			}
		})
	}
}

// TestRoundTrip checks that Match inverts Expand for values that do not make
// the split between variables ambiguous: non-empty, and free of the
// characters a neighbouring literal or separator starts with.
func TestRoundTrip(t *testing.T) {
	tests := []struct {
		template string
		alphabet string // characters values are drawn from
	}{
		{"test://template/{id}/data", "abcXYZ019-._~ /?#&=%+:@üé€"},
		{"users://{org}/{user}/repos{?sort,page}", "abc019 /?#&=%+üé"},
		{"file:///{+path}", "abc019/-._~!$'()*+;=:@ üé"},
		{"file:///{+path}{?rev}", "abc019/-._~!$'()*+;=:@ üé"},
		{"api{/version,resource,id}{;lang}", "abc019 ?#&=%+,üé"},
		// No '%' in values of + and # expressions: reserved expansion passes
		// "%XX" through, so such a value does not survive the round trip.
		{"doc/{name}{.ext}{#section}", "abc019-_~ /?#&=+üé"},
		{"map?{x,y}", "abc019 /?#&=%+üé"},
		{"search{?q,lang,page}{&extra}", "abc019 /?#&=%+,;.üé"},
		{"x{;a,b}/y", "abc019 /?#&=%+,;üé"},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	randomValue := func(alphabet string) string {
		runes := []rune(alphabet)
		n := 1 + rng.IntN(8)
		var b strings.Builder
		for range n {
			b.WriteRune(runes[rng.IntN(len(runes))])
		}
		return b.String()
	}
	for _, tt := range tests {
		t.Run(tt.template, func(t *testing.T) {
			tmpl, err := Parse(tt.template)
			if err != nil {
				t.Fatal(err)
			}
			for range 500 {
				vars := map[string]string{}
				for _, name := range tmpl.Vars() {
					vars[name] = randomValue(tt.alphabet)
				}
				uri := tmpl.Expand(vars)
				got, ok := tmpl.Match(uri)
				if !ok || !maps.Equal(got, vars) {
					t.Fatalf("Match(Expand(%q)) = Match(%q) = %q, %t; want the values back", vars, uri, got, ok)
				}
			}
		})
	}
}

func TestMatchConcurrentUse(t *testing.T) {
	tmpl, err := Parse("test://template/{id}/data{?v}")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan bool)
	for range 8 {
		go func() {
			ok := true
			for range 200 {
				got, matched := tmpl.Match("test://template/7/data?v=1")
				ok = ok && matched && got["id"] == "7" && got["v"] == "1"
				ok = ok && tmpl.Expand(map[string]string{"id": "7"}) == "test://template/7/data"
			}
			done <- ok
		}()
	}
	for range 8 {
		if !<-done {
			t.Error("concurrent Match or Expand returned a wrong result")
		}
	}
}

func FuzzParseMatch(f *testing.F) {
	for _, tt := range matchTests {
		if len(tt.uri) <= 1024 {
			f.Add(tt.template, tt.uri)
		}
	}
	for _, tt := range expandTests {
		f.Add(tt.template, tt.want)
	}
	f.Fuzz(func(t *testing.T, template, uri string) {
		tmpl, err := Parse(template)
		if err != nil {
			return
		}
		if tmpl.String() != template {
			t.Fatalf("String() = %q; want %q", tmpl.String(), template)
		}
		vars, ok := tmpl.Match(uri)
		if !ok {
			_ = tmpl.Expand(map[string]string{"x": uri})
			return
		}
		declared := map[string]bool{}
		for _, v := range tmpl.Vars() {
			declared[v] = true
		}
		for name := range vars {
			if !declared[name] {
				t.Fatalf("Parse(%q).Match(%q) returned undeclared variable %q", template, uri, name)
			}
		}
		// Values made of unreserved characters other than '.' expand to
		// themselves, so their expansion must match again. (Other values
		// may be ambiguous: a '.' in a label, a ',' in {+x,y}.) Repeated
		// variables are checked after the split is chosen, so they are
		// exempt too (see the package documentation).
		if hasRepeatedVariable(tmpl) {
			return
		}
		for _, v := range vars {
			if strings.Trim(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_~") != "" {
				return
			}
		}
		if _, ok := tmpl.Match(tmpl.Expand(vars)); !ok {
			t.Fatalf("Parse(%q).Match(%q) = %q, but its expansion %q does not match", template, uri, vars, tmpl.Expand(vars))
		}
	})
}

func hasRepeatedVariable(tmpl *Template) bool {
	n := 0
	for _, p := range tmpl.parts {
		if p.expr != nil {
			n += len(p.expr.specs)
		}
	}
	return n != len(tmpl.Vars())
}
