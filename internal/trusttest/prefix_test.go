package trusttest

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/testenv"
)

// TestPrefixesDoNotCross: two deployments on one nats-server (and one
// Redis), with --subject-prefix alpha and beta, each a frontend and a
// worker serving different tools. Each frontend sees only its own
// workers' tools, and a call of the other deployment's tool is unknown:
// neither serves the other's requests.
func TestPrefixesDoNotCross(t *testing.T) {
	_, natsURL := testenv.StartNATSServer(t)
	_, redisURL := testenv.StartRedisServer(t)
	testenv.StartWorker(t, natsURL, "--subject-prefix", "alpha", "--tools", "echo", "--prompts", "none", "--resources", "none")
	testenv.StartWorker(t, natsURL, "--subject-prefix", "beta", "--tools", "touch_resource", "--prompts", "none", "--resources", "none")
	_, alpha := testenv.StartFrontend(t, natsURL, redisURL, "--subject-prefix", "alpha")
	_, beta := testenv.StartFrontend(t, natsURL, redisURL, "--subject-prefix", "beta")

	for _, d := range []struct {
		name, url, own, other string
	}{{"alpha", alpha, "echo", "touch_resource"}, {"beta", beta, "touch_resource", "echo"}} {
		c := testenv.NewClient(t, d.url)
		c.Initialize(nil)
		var list struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		}
		if err := json.Unmarshal(c.Call(1, "tools/list", nil), &list); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tl := range list.Tools {
			names = append(names, tl.Name)
		}
		if !slices.Equal(names, []string{d.own}) {
			t.Errorf("%s: tools/list %v, want only its own worker's [%s]", d.name, names, d.own)
		}
		res := c.Call(2, "tools/call", callParams(d.own, map[string]any{"text": "hi", "uri": "test://x"}))
		if !strings.Contains(string(res), "hi") && !strings.Contains(string(res), "touched") {
			t.Errorf("%s: its own tool: %s", d.name, res)
		}
		r := c.Post(testenv.Request(3, "tools/call", callParams(d.other, map[string]any{"text": "hi", "uri": "test://x"})), nil)
		if resp := r.Response(); resp == nil || (resp.Error == nil && !strings.Contains(string(resp.Result), `"isError":true`)) {
			t.Errorf("%s: the other deployment's tool %s was served: %s", d.name, d.other, r)
		}
	}
}
