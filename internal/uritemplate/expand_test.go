package uritemplate

import "testing"

// rfcVars are the string variables of RFC 6570 section 3.2.
var rfcVars = map[string]string{
	"var":   "value",
	"hello": "Hello World!",
	"half":  "50%",
	"empty": "",
	"path":  "/foo/bar",
	"x":     "1024",
	"y":     "768",
	"base":  "http://example.com/home/",
	"who":   "fred",
	"v":     "6",
	"dub":   "me/too",
}

// expandTests are the RFC 6570 section 3.2 examples whose variables are
// strings (the list and associative-array examples are out of scope), plus
// a few edge cases.
var expandTests = []struct {
	name     string
	template string
	want     string
}{
	// 3.2.2 Simple String Expansion
	{"simple var", "{var}", "value"},
	{"simple hello", "{hello}", "Hello%20World%21"},
	{"simple half", "{half}", "50%25"},
	{"simple empty", "O{empty}X", "OX"},
	{"simple undef", "O{undef}X", "OX"},
	{"simple two", "{x,y}", "1024,768"},
	{"simple three", "{x,hello,y}", "1024,Hello%20World%21,768"},
	{"simple trailing empty", "?{x,empty}", "?1024,"},
	{"simple trailing undef", "?{x,undef}", "?1024"},
	{"simple leading undef", "?{undef,y}", "?768"},
	{"simple prefix", "{var:3}", "val"},
	{"simple long prefix", "{var:30}", "value"},
	// 3.2.3 Reserved Expansion
	{"reserved var", "{+var}", "value"},
	{"reserved hello", "{+hello}", "Hello%20World!"},
	{"reserved half", "{+half}", "50%25"},
	{"simple base", "{base}index", "http%3A%2F%2Fexample.com%2Fhome%2Findex"},
	{"reserved base", "{+base}index", "http://example.com/home/index"},
	{"reserved empty", "O{+empty}X", "OX"},
	{"reserved undef", "O{+undef}X", "OX"},
	{"reserved path", "{+path}/here", "/foo/bar/here"},
	{"reserved in query", "here?ref={+path}", "here?ref=/foo/bar"},
	{"reserved then simple", "up{+path}{var}/here", "up/foo/barvalue/here"},
	{"reserved three", "{+x,hello,y}", "1024,Hello%20World!,768"},
	{"reserved two", "{+path,x}/here", "/foo/bar,1024/here"},
	{"reserved prefix", "{+path:6}/here", "/foo/b/here"},
	// 3.2.4 Fragment Expansion
	{"fragment var", "{#var}", "#value"},
	{"fragment hello", "{#hello}", "#Hello%20World!"},
	{"fragment half", "{#half}", "#50%25"},
	{"fragment empty", "foo{#empty}", "foo#"},
	{"fragment undef", "foo{#undef}", "foo"},
	{"fragment three", "{#x,hello,y}", "#1024,Hello%20World!,768"},
	{"fragment two", "{#path,x}/here", "#/foo/bar,1024/here"},
	{"fragment prefix", "{#path:6}/here", "#/foo/b/here"},
	// 3.2.5 Label Expansion with Dot-Prefix
	{"label who", "{.who}", ".fred"},
	{"label twice", "{.who,who}", ".fred.fred"},
	{"label half", "{.half,who}", ".50%25.fred"},
	{"label var", "X{.var}", "X.value"},
	{"label empty", "X{.empty}", "X."},
	{"label undef", "X{.undef}", "X"},
	{"label prefix", "X{.var:3}", "X.val"},
	// 3.2.6 Path Segment Expansion
	{"path who", "{/who}", "/fred"},
	{"path twice", "{/who,who}", "/fred/fred"},
	{"path half", "{/half,who}", "/50%25/fred"},
	{"path slash encoded", "{/who,dub}", "/fred/me%2Ftoo"},
	{"path var", "{/var}", "/value"},
	{"path empty", "{/var,empty}", "/value/"},
	{"path undef", "{/var,undef}", "/value"},
	{"path then literal", "{/var,x}/here", "/value/1024/here"},
	{"path prefix", "{/var:1,var}", "/v/value"},
	// 3.2.7 Path-Style Parameter Expansion
	{"param who", "{;who}", ";who=fred"},
	{"param half", "{;half}", ";half=50%25"},
	{"param empty", "{;empty}", ";empty"},
	{"param three", "{;v,empty,who}", ";v=6;empty;who=fred"},
	{"param undef", "{;v,bar,who}", ";v=6;who=fred"},
	{"param two", "{;x,y}", ";x=1024;y=768"},
	{"param trailing empty", "{;x,y,empty}", ";x=1024;y=768;empty"},
	{"param trailing undef", "{;x,y,undef}", ";x=1024;y=768"},
	{"param prefix", "{;hello:5}", ";hello=Hello"},
	// 3.2.8 Form-Style Query Expansion
	{"query who", "{?who}", "?who=fred"},
	{"query half", "{?half}", "?half=50%25"},
	{"query two", "{?x,y}", "?x=1024&y=768"},
	{"query empty", "{?x,y,empty}", "?x=1024&y=768&empty="},
	{"query undef", "{?x,y,undef}", "?x=1024&y=768"},
	{"query prefix", "{?var:3}", "?var=val"},
	// 3.2.9 Form-Style Query Continuation
	{"continuation who", "{&who}", "&who=fred"},
	{"continuation half", "{&half}", "&half=50%25"},
	{"continuation after literal", "?fixed=yes{&x}", "?fixed=yes&x=1024"},
	{"continuation empty", "{&x,y,empty}", "&x=1024&y=768&empty="},
	{"continuation prefix", "{&var:3}", "&var=val"},
	// Levels 1-4 from section 1.2 that use strings.
	{"level 3 query", "map?{x,y}", "map?1024,768"},
	{"level 3 path", "{/var,x}/here", "/value/1024/here"},
	// Edge cases.
	{"explode is a no-op for strings", "{/who*}{?x*}", "/fred?x=1024"},
	{"all undefined", "{undef}{+undef}{#undef}{.undef}{/undef}{;undef}{?undef}{&undef}", ""},
	{"unicode is UTF-8 encoded", "{u}", "%C3%BC%E2%82%AC"},
	{"unicode prefix counts characters", "{u:1}", "%C3%BC"},
	{"reserved keeps pct triplets", "{+pct}", "a%2Fb%25zz"},
	{"literal encoding", "/a b/{who}/ü%41%", "/a%20b/fred/%C3%BC%41%25"},
	{"matching example", "test://template/{id}/data", "test://template/123/data"},
}

func TestExpand(t *testing.T) {
	vars := map[string]string{"u": "ü€", "pct": "a%2Fb%zz", "id": "123"}
	for k, v := range rfcVars {
		vars[k] = v
	}
	for _, tt := range expandTests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl, err := Parse(tt.template)
			if err != nil {
				t.Fatalf("Parse(%q) error: %v", tt.template, err)
			}
			if got := tmpl.Expand(vars); got != tt.want {
				t.Errorf("Parse(%q).Expand() = %q; want %q", tt.template, got, tt.want)
			}
		})
	}
}
