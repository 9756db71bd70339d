package clienttest

import (
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"
)

// wireEntry is one HTTP exchange a client made.
type wireEntry struct {
	HTTP   string // GET, POST, DELETE
	RPC    string // the JSON-RPC method, "response" for a client response, "" without a body
	Status int    // -1 when the request failed
	Type   string // the response media type
	Host   string // the frontend it went to
}

// wireLog is an http.RoundTripper that records every exchange and, given
// several endpoints, sends each request to the next of them in turn (so
// one client's requests alternate between a cluster's frontends).
type wireLog struct {
	base      http.RoundTripper
	endpoints []*url.URL
	mu        sync.Mutex
	next      int
	entries   []wireEntry
}

func newWireLog(endpoints []string) *wireLog {
	w := &wireLog{base: http.DefaultTransport.(*http.Transport).Clone()}
	for _, e := range endpoints {
		u, err := url.Parse(e)
		if err != nil {
			panic(err)
		}
		w.endpoints = append(w.endpoints, u)
	}
	return w
}

func (w *wireLog) RoundTrip(req *http.Request) (*http.Response, error) {
	w.mu.Lock()
	target := w.endpoints[w.next%len(w.endpoints)]
	w.next++
	w.mu.Unlock()
	out := req.Clone(req.Context())
	out.URL.Scheme, out.URL.Host, out.URL.Path = target.Scheme, target.Host, target.Path
	out.Host = ""
	entry := wireEntry{HTTP: req.Method, Status: -1, Host: target.Host}
	if req.GetBody != nil {
		if body, err := req.GetBody(); err == nil {
			b, _ := io.ReadAll(body)
			body.Close()
			var m struct {
				Method string          `json:"method"`
				Result json.RawMessage `json:"result"`
				Error  json.RawMessage `json:"error"`
			}
			if json.Unmarshal(b, &m) == nil {
				entry.RPC = m.Method
				if m.Method == "" && (m.Result != nil || m.Error != nil) {
					entry.RPC = "response"
				}
			}
		}
	}
	resp, err := w.base.RoundTrip(out)
	if err == nil {
		entry.Status = resp.StatusCode
		entry.Type, _, _ = mime.ParseMediaType(resp.Header.Get("Content-Type"))
	}
	w.mu.Lock()
	w.entries = append(w.entries, entry)
	w.mu.Unlock()
	return resp, err
}

// snapshot returns the exchanges so far.
func (w *wireLog) snapshot() []wireEntry {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.entries)
}

// len returns how many exchanges were recorded.
func (w *wireLog) len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.entries)
}

// since returns the exchanges recorded after the first n.
func (w *wireLog) since(n int) []wireEntry { return w.snapshot()[n:] }

// find returns the first of entries that matches, if any.
func find(entries []wireEntry, match func(wireEntry) bool) (wireEntry, bool) {
	for _, e := range entries {
		if match(e) {
			return e, true
		}
	}
	return wireEntry{}, false
}

// waitFor polls the log until an exchange after the first n matches.
func (w *wireLog) waitFor(n int, d time.Duration, match func(wireEntry) bool) (wireEntry, bool) {
	deadline := time.Now().Add(d)
	for {
		if e, ok := find(w.since(n), match); ok {
			return e, true
		}
		if time.Now().After(deadline) {
			return wireEntry{}, false
		}
		time.Sleep(10 * time.Millisecond) // the polling interval of a wait with a deadline for the event, not a synchronisation
	}
}

// waiter collects events and lets a scenario wait for one that matches,
// including events that arrived before the wait began (after the last
// reset).
type waiter[T any] struct {
	mu     sync.Mutex
	events []T
}

func (w *waiter[T]) push(v T) {
	w.mu.Lock()
	w.events = append(w.events, v)
	w.mu.Unlock()
}

func (w *waiter[T]) reset() {
	w.mu.Lock()
	w.events = nil
	w.mu.Unlock()
}

func (w *waiter[T]) count(match func(T) bool) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, e := range w.events {
		if match(e) {
			n++
		}
	}
	return n
}

// waitCount waits until n events match; it reports whether they did within d.
func (w *waiter[T]) waitCount(d time.Duration, n int, match func(T) bool) bool {
	deadline := time.Now().Add(d)
	for w.count(match) < n {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond) // the polling interval of a wait with a deadline for the event, not a synchronisation
	}
	return true
}
