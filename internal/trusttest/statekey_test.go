package trusttest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/mcpfleet/mcpfleet/internal/testenv"
	"github.com/mcpfleet/mcpfleet/pkg/bus"
)

// TestStateKeyNeverOnTheBus: on an open nats-server (no permissions at
// all, the worst case), a spy subscribed to every subject watches a
// frontend and two workers serve legacy and 2026-07-28 requests: no
// message carries the workers' requestState key, in any encoding; then
// nothing answers the subject that used to hand it out, nor other
// subjects a key could be asked on. Each worker has the key from its own
// configuration (--state-key). On the shipped permissions neither role
// may even ask.
func TestStateKeyNeverOnTheBus(t *testing.T) {
	_, natsURL := testenv.StartNATSServer(t)
	_, redisURL := testenv.StartRedisServer(t)
	spy := mustDial(t, natsURL, "", "", "")
	var mu sync.Mutex
	var seen [][]byte
	var subjects []string
	sub, err := spy.Subscribe(">", func(m *nats.Msg) {
		mu.Lock()
		seen = append(seen, append([]byte(m.Subject+" "+m.Reply+" "), m.Data...))
		subjects = append(subjects, m.Subject)
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := spy.Flush(); err != nil {
		t.Fatal(err)
	}
	testenv.StartWorker(t, natsURL)
	testenv.StartWorker(t, natsURL)
	_, url := testenv.StartFrontend(t, natsURL, redisURL)

	c := testenv.NewClient(t, url)
	c.Initialize(nil)
	c.Call(1, "tools/call", callParams("echo", map[string]any{"text": "x"}))
	mc := testenv.NewModernClient(t, url)
	for i := 0; i < 4; i++ {
		msg, hdr := testenv.ModernRequest(10+i, "tools/call", callParams("echo", map[string]any{"text": "y"}), nil)
		if r := mc.Post(msg, hdr); r.Response() == nil {
			t.Fatalf("modern tools/call: %s", r)
		}
	}
	if err := spy.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := sub.Unsubscribe(); err != nil { // the spy would be a responder itself
		t.Fatal(err)
	}
	// Someone on the bus asks for the key where it used to be served,
	// and on other subjects a key could be asked on.
	asker := mustDial(t, natsURL, "", "", "")
	for _, s := range []string{"mcp.ctl.statekey", "mcp.ctl.state", "mcp.statekey", "mcp.ctl.key", "mcp.key"} {
		_, err := asker.Request(s, nil, testenv.HangGuard(5*time.Second))
		if !errors.Is(err, nats.ErrNoResponders) {
			t.Errorf("a request on %s: %v, want no responders", s, err)
		}
	}

	raw, err := base64.StdEncoding.DecodeString(testenv.StateKey)
	if err != nil {
		t.Fatal(err)
	}
	hexKey, _ := json.Marshal(raw) // JSON encodes []byte as base64: covered below
	forms := [][]byte{raw, []byte(testenv.StateKey), []byte(base64.RawStdEncoding.EncodeToString(raw)),
		[]byte(base64.URLEncoding.EncodeToString(raw)), []byte(base64.RawURLEncoding.EncodeToString(raw)), bytes.Trim(hexKey, `"`)}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) < 10 {
		t.Fatalf("the spy saw only %d messages: it does not see the traffic", len(seen))
	}
	for _, m := range seen {
		for _, f := range forms {
			if bytes.Contains(m, f) {
				t.Fatalf("a message carries the requestState key: %q", m)
			}
		}
	}
	for _, s := range subjects {
		if strings.Contains(strings.ToLower(s), "statekey") || strings.Contains(s, ".ctl.") {
			t.Errorf("traffic on %s", s)
		}
	}
	t.Logf("the spy saw %d messages; none carries the key", len(seen))
}

// TestStateKeySubjectForbiddenByRoles: with the shipped permissions
// neither role may publish outside its subjects, so not even a request
// for a key reaches anyone.
func TestStateKeySubjectForbiddenByRoles(t *testing.T) {
	n := startAuthNATS(t)
	for _, r := range []struct{ user, pw, inbox string }{
		{"frontend", n.FrontendPW, bus.Subjects{}.InboxPrefix("fe")},
		{"worker", n.WorkerPW, bus.Subjects{}.InboxPrefix("w")},
	} {
		c := mustDial(t, n.URL, r.user, r.pw, r.inbox)
		if err := c.PublishRequest("mcp.ctl.statekey", r.inbox+".x", nil); err != nil {
			t.Fatal(err)
		}
		c.violation(t, r.user+" role asking for the state key", "mcp.ctl.statekey")
	}
}
