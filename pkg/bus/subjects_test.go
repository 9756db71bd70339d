package bus_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/mcpfleet/mcpfleet/pkg/bus"
)

func TestToken(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"empty", "", "~"},
		{"safe", "abcXYZ019", "abcXYZ019"},
		{"safe punctuation", "tools/call_x-y:z", "tools/call_x-y:z"},
		{"dot", ".", "~2E"},
		{"dotted name", "a.b", "a~2Eb"},
		{"star", "*", "~2A"},
		{"greater", ">", "~3E"},
		{"wildcard tail", "x>", "x~3E"},
		{"space", "a b", "a~20b"},
		{"tab and newline", "\t\n", "~09~0A"},
		{"tilde", "~", "~7E"},
		{"escape-looking input", "~2E", "~7E2E"},
		{"dollar", "$SYS", "~24SYS"},
		{"unicode", "é", "~C3~A9"},
		{"emoji", "🙂", "~F0~9F~99~82"},
		{"NUL", "\x00", "~00"},
		{"high byte", "\xff", "~FF"},
		{"uri", "file:///a b.txt", "file:///a~20b~2Etxt"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := bus.Token(tc.in); got != tc.want {
				t.Errorf("Token(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// untoken inverts Token; an error means the token is not one Token makes.
func untoken(tok string) (string, error) {
	if tok == "~" {
		return "", nil
	}
	var b strings.Builder
	for i := 0; i < len(tok); i++ {
		if tok[i] != '~' {
			b.WriteByte(tok[i])
			continue
		}
		if i+2 >= len(tok) {
			return "", fmt.Errorf("truncated escape in %q", tok)
		}
		h := tok[i+1 : i+3]
		if strings.ToUpper(h) != h {
			return "", fmt.Errorf("lower-case escape in %q", tok)
		}
		n, err := strconv.ParseUint(h, 16, 8)
		if err != nil {
			return "", fmt.Errorf("bad escape in %q: %v", tok, err)
		}
		b.WriteByte(byte(n))
		i += 2
	}
	return b.String(), nil
}

// checkToken fails unless Token(in) is a single non-empty NATS token that
// decodes back to in.
func checkToken(t testing.TB, in string) string {
	t.Helper()
	tok := bus.Token(in)
	if tok == "" {
		t.Fatalf("Token(%q) is empty", in)
	}
	for _, r := range tok {
		if r == '.' || r == '*' || r == '>' || unicode.IsSpace(r) || r > unicode.MaxASCII || r < 0x20 {
			t.Fatalf("Token(%q) = %q contains %q", in, tok, r)
		}
	}
	if strings.HasPrefix(tok, "~~") {
		// Long values are hashed: stable, distinct, bounded.
		if tok != bus.Token(in) || len(tok) > bus.MaxTokenLen {
			t.Fatalf("Token(%q) = %q: an unstable or long hash token", in, tok)
		}
		return tok
	}
	back, err := untoken(tok)
	if err != nil {
		t.Fatalf("Token(%q) = %q: %v", in, tok, err)
	}
	if back != in {
		t.Fatalf("Token(%q) = %q decodes to %q", in, tok, back)
	}
	return tok
}

func TestTokenProperties(t *testing.T) {
	seen := map[string]string{} // token -> input
	add := func(in string) {
		tok := checkToken(t, in)
		if prev, dup := seen[tok]; dup && prev != in {
			t.Fatalf("Token(%q) == Token(%q) == %q", in, prev, tok)
		}
		seen[tok] = in
	}
	add("")
	for c := 0; c < 256; c++ {
		add(string(rune(0)) + string([]byte{byte(c)})) // with a prefix byte
		add(string([]byte{byte(c)}))
		for _, d := range []byte{'~', '2', 'E', '.', 'a'} {
			add(string([]byte{byte(c), d}))
		}
	}
	for _, s := range []string{"~2E", ".", "~", "~~", "~7E", "a.b", "a~2Eb", "tools/call", "é", "\xc3", "\xa9"} {
		add(s)
	}
}

func FuzzToken(f *testing.F) {
	for _, s := range [][2]string{{"", "~"}, {".", "~2E"}, {"*", ">"}, {"a b", "a~20b"}, {"~", "~7E"}, {"é", "\xc3"}, {"x", "x"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		ta, tb := checkToken(t, a), checkToken(t, b)
		if (a == b) != (ta == tb) {
			t.Fatalf("Token(%q) = %q, Token(%q) = %q: equality differs from the inputs'", a, ta, b, tb)
		}
	})
}

func TestSubjects(t *testing.T) {
	tests := []struct {
		name string
		got  func(bus.Subjects) string
		def  string // with the zero Subjects
		cust string // with Prefix "acme.prod"
	}{
		{"request with name", func(s bus.Subjects) string { return s.Request("tools/call", "a.b") },
			"mcp.req.tools/call.a~2Eb", "acme.prod.req.tools/call.a~2Eb"},
		{"request without name", func(s bus.Subjects) string { return s.Request("tools/list", "") },
			"mcp.req.tools/list", "acme.prod.req.tools/list"},
		{"request with a wildcard name", func(s bus.Subjects) string { return s.Request("prompts/get", "x>*") },
			"mcp.req.prompts/get.x~3E~2A", "acme.prod.req.prompts/get.x~3E~2A"},
		{"request method named", func(s bus.Subjects) string { return s.RequestMethodNamed("resources/read") },
			"mcp.req.resources/read.>", "acme.prod.req.resources/read.>"},
		{"all requests", bus.Subjects.AllRequests, "mcp.req.>", "acme.prod.req.>"},
		{"stream", func(s bus.Subjects) string { return s.Stream("fe-1", "st.2") },
			"mcp.fe.fe-1.st~2E2", "acme.prod.fe.fe-1.st~2E2"},
		{"frontend streams", func(s bus.Subjects) string { return s.FrontendStreams("fe 1") },
			"mcp.fe.fe~201.*", "acme.prod.fe.fe~201.*"},
		{"frontend control", func(s bus.Subjects) string { return s.FrontendControl("fe.1") },
			"mcp.fectl.fe~2E1", "acme.prod.fectl.fe~2E1"},
		{"live", func(s bus.Subjects) string { return s.Live("sess.1", "st>") },
			"mcp.live.sess~2E1.st~3E", "acme.prod.live.sess~2E1.st~3E"},
		{"worker inbox", func(s bus.Subjects) string { return s.WorkerInbox("w.1") },
			"mcp.w.w~2E1.in", "acme.prod.w.w~2E1.in"},
		{"cancel", bus.Subjects.Cancel, "mcp.cancel", "acme.prod.cancel"},
		{"session events", bus.Subjects.SessionEvents, "mcp.sevt", "acme.prod.sevt"},
		{"session control", func(s bus.Subjects) string { return s.SessionControl("abc") },
			"mcp.sessctl.abc", "acme.prod.sessctl.abc"},
		{"list changed", func(s bus.Subjects) string { return s.ListChanged("tools") },
			"mcp.evt.list.tools", "acme.prod.evt.list.tools"},
		{"all list changed", bus.Subjects.AllListChanged, "mcp.evt.list.*", "acme.prod.evt.list.*"},
		{"resource updated", func(s bus.Subjects) string { return s.ResourceUpdated("file:///a b.txt") },
			"mcp.evt.res.file:///a~20b~2Etxt", "acme.prod.evt.res.file:///a~20b~2Etxt"},
		{"empty variable parts", func(s bus.Subjects) string { return s.Stream("", "") },
			"mcp.fe.~.~", "acme.prod.fe.~.~"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.got(bus.Subjects{}); got != tc.def {
				t.Errorf("default prefix: got %q, want %q", got, tc.def)
			}
			if got := tc.got(bus.Subjects{Prefix: bus.DefaultPrefix}); got != tc.def {
				t.Errorf("explicit default prefix: got %q, want %q", got, tc.def)
			}
			if got := tc.got(bus.Subjects{Prefix: "acme.prod"}); got != tc.cust {
				t.Errorf("custom prefix: got %q, want %q", got, tc.cust)
			}
		})
	}
}

// matches reports whether NATS would deliver subject to a subscription on
// pattern ('*' one token, '>' one or more trailing tokens).
func matches(pattern, subject string) bool {
	p, s := strings.Split(pattern, "."), strings.Split(subject, ".")
	for i, tok := range p {
		if tok == ">" {
			return len(s) > i
		}
		if i >= len(s) || (tok != "*" && tok != s[i]) {
			return false
		}
	}
	return len(p) == len(s)
}

func TestSubjectsMatch(t *testing.T) {
	s := bus.Subjects{Prefix: "t"}
	tests := []struct {
		name    string
		pattern string
		subject string
		want    bool
	}{
		{"all requests: named", s.AllRequests(), s.Request("tools/call", "a.b.c"), true},
		{"all requests: unnamed", s.AllRequests(), s.Request("ping", ""), true},
		{"method named: named", s.RequestMethodNamed("tools/call"), s.Request("tools/call", "x"), true},
		{"method named: dotted name stays one token", s.RequestMethodNamed("tools/call"), s.Request("tools/call", "a.b"), true},
		{"method named: unnamed is missed", s.RequestMethodNamed("tools/call"), s.Request("tools/call", ""), false},
		{"method named: other method", s.RequestMethodNamed("tools/call"), s.Request("prompts/get", "x"), false},
		{"exact unnamed", s.Request("tools/call", ""), s.Request("tools/call", ""), true},
		{"frontend streams: own", s.FrontendStreams("fe1"), s.Stream("fe1", "a.b"), true},
		{"frontend streams: other frontend", s.FrontendStreams("fe1"), s.Stream("fe2", "x"), false},
		{"frontend streams: prefix of another frontend", s.FrontendStreams("fe"), s.Stream("fe.x", "y"), false},
		{"frontend streams: not the control subject", s.FrontendStreams("fe1"), s.FrontendControl("fe1"), false},
		{"all list changed", s.AllListChanged(), s.ListChanged("prompts"), true},
		{"all list changed: a wildcard kind is literal", s.AllListChanged(), s.ListChanged("a.b"), true},
		{"other prefix", bus.Subjects{}.AllRequests(), s.Request("ping", ""), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := matches(tc.pattern, tc.subject); got != tc.want {
				t.Errorf("matches(%q, %q) = %v, want %v", tc.pattern, tc.subject, got, tc.want)
			}
		})
	}
	// Names never add tokens.
	for _, name := range []string{"a", "a.b", "a.b.c", "*", ">", "a >", ""} {
		want := 4
		if name == "" {
			want = 3
		}
		if got := len(strings.Split(s.Request("tools/call", name), ".")); got != want {
			t.Errorf("Request(tools/call, %q) has %d tokens, want %d", name, got, want)
		}
	}
}

func TestStreamID(t *testing.T) {
	for _, s := range []bus.Subjects{{}, {Prefix: "a.b.c"}} {
		for _, st := range []string{"s1", "a.b", "", "x>y", "0123456789abcdef"} {
			t.Run(s.Prefix+"/"+st, func(t *testing.T) {
				subj := s.Stream("fe.1", st)
				if got, want := bus.StreamID(subj), bus.Token(st); got != want {
					t.Errorf("StreamID(%q) = %q, want %q", subj, got, want)
				}
				if back, err := untoken(bus.StreamID(subj)); err != nil || back != st {
					t.Errorf("StreamID(%q) unescapes to %q, %v; want %q", subj, back, err, st)
				}
			})
		}
	}
}

// IsStream is Stream compared, for clean, escaped and hashed tokens and
// near misses.
func TestIsStream(t *testing.T) {
	long := strings.Repeat("x", bus.MaxTokenLen+1)
	for _, s := range []bus.Subjects{{}, {Prefix: "tenant.a"}} {
		for _, fe := range []string{"fe1", "", "a.b", "a*b", long} {
			for _, st := range []string{"s1", "", "x>y", long} {
				subj := s.Stream(fe, st)
				if !s.IsStream(subj, fe, st) {
					t.Errorf("%+v: IsStream(%q, %q, %q) = false", s, subj, fe, st)
				}
				for _, other := range []string{subj + "x", subj[:len(subj)-1], s.Stream(fe+"z", st), s.Stream(fe, st+"z"),
					bus.Subjects{Prefix: "other"}.Stream(fe, st), s.Append(fe, st), strings.Replace(subj, ".fe.", ".fx.", 1), s.Stream(fe, "") + "."} {
					if other != subj && s.IsStream(other, fe, st) {
						t.Errorf("%+v: IsStream(%q, %q, %q) = true", s, other, fe, st)
					}
				}
			}
		}
	}
}
