package httpx

import (
	"mime"
	"net/http"
	"strings"
	"testing"
)

// acceptsRef and isJSONContentTypeRef are Accepts and IsJSONContentType
// as they were before their fast path: every entry parsed.
func acceptsRef(r *http.Request, mediaType string) bool {
	for _, v := range r.Header.Values("Accept") {
		for _, part := range strings.Split(v, ",") {
			mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil {
				continue
			}
			if q, ok := params["q"]; ok && (q == "0" || q == "0.0" || q == "0.00" || q == "0.000") {
				continue
			}
			if strings.EqualFold(mt, mediaType) {
				return true
			}
		}
	}
	return false
}

func isJSONContentTypeRef(r *http.Request) bool {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && strings.EqualFold(mt, "application/json")
}

var mediaTypeSeeds = []string{
	"application/json, text/event-stream",
	"application/json",
	"text/event-stream",
	"APPLICATION/JSON ,Text/Event-Stream",
	"application/json;q=0, text/event-stream; q=0.000",
	"application/json; charset=utf-8",
	"*/*",
	"application/*",
	"application",
	"application/json/x",
	"application/ json",
	"text/event-ſtream",
	"appli\u212acation/json",
	"\u00a0application/json",
	"application/json\x00",
	"",
	",,",
	"text/event-stream;",
	`text/event-stream; q="0"`,
	"application/json\t, \ttext/event-stream \r",
}

// FuzzAccepts compares Accepts and IsJSONContentType, which compare the
// plain entries without parsing them, with parsing every entry.
func FuzzAccepts(f *testing.F) {
	for _, s := range mediaTypeSeeds {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, accept, contentType string) {
		r, _ := http.NewRequest(http.MethodPost, "http://x/", nil)
		r.Header["Accept"] = []string{accept, contentType}
		r.Header.Set("Content-Type", contentType)
		for _, mt := range []string{"application/json", "text/event-stream"} {
			if got, want := Accepts(r, mt), acceptsRef(r, mt); got != want {
				t.Errorf("Accepts(%q, %q) = %v, parsing gives %v", r.Header.Values("Accept"), mt, got, want)
			}
		}
		if got, want := IsJSONContentType(r), isJSONContentTypeRef(r); got != want {
			t.Errorf("IsJSONContentType(%q) = %v, parsing gives %v", contentType, got, want)
		}
	})
}

// TestAcceptsAllocations: the headers clients send are read without
// allocating.
func TestAcceptsAllocations(t *testing.T) {
	r, _ := http.NewRequest(http.MethodPost, "http://x/", nil)
	r.Header.Set("Accept", "application/json, text/event-stream")
	r.Header.Set("Content-Type", "application/json")
	if n := testing.AllocsPerRun(100, func() {
		if !Accepts(r, "application/json") || !Accepts(r, "text/event-stream") || !IsJSONContentType(r) {
			t.Fatal("not accepted")
		}
	}); n != 0 {
		t.Errorf("%v allocations, want 0", n)
	}
}
