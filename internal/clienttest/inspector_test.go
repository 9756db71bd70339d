package clienttest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// inspectorCheck is one Inspector CLI invocation and what its JSON output
// must say.
type inspectorCheck struct {
	Name string
	Args []string
	// Eras are the --protocol-era values the check runs in; nil: every era.
	Eras []string
	// Roots connects through a --config file (instead of the URL argument)
	// whose server entry gives the client rootURI as its one root: the CLI
	// has no flag for roots.
	Roots bool
	Check func(era string, result json.RawMessage) error
}

// inspectorEras are the CLI's --protocol-era values and the protocol
// version each must end up with.
var inspectorEras = []struct{ Era, Version string }{
	{"legacy", legacyVersion},
	{"auto", modernVersion},
	{"modern", modernVersion},
}

// The eras a check can be limited to.
var (
	legacyEra  = []string{"legacy"}
	modernEras = []string{"auto", "modern"}
)

// runsIn reports whether c runs in era.
func (c inspectorCheck) runsIn(era string) bool {
	return c.Eras == nil || slices.Contains(c.Eras, era)
}

// inspectorProgressToken is the progressToken the progress checks put in
// the request's _meta.
const inspectorProgressToken = "inspector-progress"

// inspectorChecks is the CLI's part of the scenario list every client runs
// (scenariosFor). The CLI is one-shot: one process, one request after
// connecting, one printed result; its --cli methods are initialize,
// tools/list, tools/call, resources/list, resources/read,
// resources/templates/list, prompts/list, prompts/get, logging/setLevel,
// skills/*, resources/directory/read (any other --method is "Unsupported
// method"). The scenarios it cannot run, one line each:
//
//   - progress_sleep, progress_tool: the CLI's client runs with progress: false and prints no notifications/progress (progress_token_* check the server's half).
//   - logging (the messages): no notifications/message is printed, logging/tail is no --cli method (logging_setlevel, logging_tool check the rest).
//   - resource_updated: resources/subscribe and subscriptions/listen are no --cli methods (and touch_resource would reach the session runs' listeners).
//   - tools_list_changed: the CLI prints no notifications (and test_trigger_tool_change would reach the session runs' listeners).
//   - cancel_sleep: the one-shot CLI has no cancel, no request-timeout flag and no follow-up call in the same process.
//   - completion: prompts/complete is in the CLI's method runner but not among its --cli methods (no --complete-* options either).
//   - ping (legacy): the CLI's client has ping(), but no --method calls it.
//   - sampling, elicitation (legacy): the CLI runs with sample: false, elicit: false: neither capability declared, no handler.
//   - session_delete (legacy): the CLI disconnects without terminating the session: it sends no DELETE.
//   - logging_setlevel_rejected (modern): the CLI refuses logging/setLevel on a 2026-07-28 connection itself, it never reaches the server.
//   - mrtr_elicitation, mrtr_sampling, mrtr_multi_round, mrtr_multiple_inputs (modern): no elicitation or sampling handler; only mrtr_list_roots is answerable.
//   - discover, auto_negotiation (modern): the server/discover result shows only through --method initialize, so connect covers both (no supportedVersions).
var inspectorChecks = []inspectorCheck{
	{
		// The CLI's initialize method reports the negotiated version and
		// what the server said about itself: from initialize in legacy,
		// from server/discover in the modern eras (in auto, the era the
		// CLI chose after probing server/discover).
		Name: "connect", Args: []string{"--method", "initialize"},
		Check: func(era string, raw json.RawMessage) error {
			var r struct {
				ProtocolVersion string `json:"protocolVersion"`
				ServerInfo      struct {
					Name string `json:"name"`
				} `json:"serverInfo"`
				Capabilities struct {
					Tools       *struct{ ListChanged bool }            `json:"tools"`
					Prompts     *struct{ ListChanged bool }            `json:"prompts"`
					Resources   *struct{ Subscribe, ListChanged bool } `json:"resources"`
					Logging     json.RawMessage                        `json:"logging"`
					Completions json.RawMessage                        `json:"completions"`
				} `json:"capabilities"`
			}
			if err := json.Unmarshal(raw, &r); err != nil {
				return err
			}
			if want := eraVersion(era); r.ProtocolVersion != want {
				return fmt.Errorf("protocolVersion %q, want %q", r.ProtocolVersion, want)
			}
			if r.ServerInfo.Name != expectedServer {
				return fmt.Errorf("serverInfo.name %q, want %q", r.ServerInfo.Name, expectedServer)
			}
			c := r.Capabilities
			if c.Tools == nil || !c.Tools.ListChanged || c.Prompts == nil || !c.Prompts.ListChanged ||
				c.Resources == nil || !c.Resources.Subscribe || !c.Resources.ListChanged || c.Logging == nil || c.Completions == nil {
				return fmt.Errorf("capabilities %s, want tools, prompts and resources with listChanged, resources.subscribe, logging and completions", raw)
			}
			return nil
		},
	},
	{
		Name: "list_tools", Args: []string{"--method", "tools/list"},
		Check: func(era string, raw json.RawMessage) error {
			var r struct {
				Tools []struct {
					Name        string `json:"name"`
					InputSchema struct {
						Type       string                     `json:"type"`
						Properties map[string]json.RawMessage `json:"properties"`
						Required   []string                   `json:"required"`
					} `json:"inputSchema"`
				} `json:"tools"`
			}
			if err := json.Unmarshal(raw, &r); err != nil {
				return err
			}
			have := map[string]int{}
			for i, tl := range r.Tools {
				have[tl.Name] = i + 1
			}
			for _, n := range []string{"echo", "sleep", "touch_resource", "test_tool_with_progress", "test_tool_with_logging", "test_trigger_tool_change", "test_input_required_result_elicitation", "test_input_required_result_list_roots"} {
				if have[n] == 0 {
					return fmt.Errorf("tools/list lacks %s (%d tools)", n, len(r.Tools))
				}
			}
			echo := r.Tools[have["echo"]-1].InputSchema
			if echo.Type != "object" || echo.Properties["text"] == nil || !slices.Equal(echo.Required, []string{"text"}) {
				return fmt.Errorf("echo inputSchema %+v, want an object with the required property text", echo)
			}
			return nil
		},
	},
	{
		Name: "list_prompts", Args: []string{"--method", "prompts/list"},
		Check: func(era string, raw json.RawMessage) error {
			var r struct {
				Prompts []struct {
					Name      string `json:"name"`
					Arguments []struct {
						Name     string `json:"name"`
						Required bool   `json:"required"`
					} `json:"arguments"`
				} `json:"prompts"`
			}
			if err := json.Unmarshal(raw, &r); err != nil {
				return err
			}
			got := map[string]string{}
			for _, p := range r.Prompts {
				var args []string
				for _, a := range p.Arguments {
					if a.Required {
						a.Name += "*"
					}
					args = append(args, a.Name)
				}
				got[p.Name] = strings.Join(args, ",")
			}
			if _, ok := got["test_simple_prompt"]; !ok {
				return fmt.Errorf("prompts/list lacks test_simple_prompt: %s", raw)
			}
			if got["test_prompt_with_arguments"] != "arg1*,arg2*" {
				return fmt.Errorf("test_prompt_with_arguments arguments %q, want arg1*,arg2*: %s", got["test_prompt_with_arguments"], raw)
			}
			return nil
		},
	},
	{
		Name: "list_resources", Args: []string{"--method", "resources/list"},
		Check: func(era string, raw json.RawMessage) error {
			var r struct {
				Resources []struct {
					URI      string `json:"uri"`
					Name     string `json:"name"`
					MimeType string `json:"mimeType"`
				} `json:"resources"`
			}
			if err := json.Unmarshal(raw, &r); err != nil {
				return err
			}
			got := map[string]string{}
			for _, res := range r.Resources {
				got[res.URI] = res.Name + " " + res.MimeType
			}
			for uri, want := range map[string]string{
				"test://static-text":   "static-text text/plain",
				"test://static-binary": "static-binary image/png",
				watchedURI:             "watched-resource text/plain",
			} {
				if got[uri] != want {
					return fmt.Errorf("resources/list has %s as %q, want %q: %s", uri, got[uri], want, raw)
				}
			}
			return nil
		},
	},
	{
		Name: "list_resource_templates", Args: []string{"--method", "resources/templates/list"},
		Check: func(era string, raw json.RawMessage) error {
			var r struct {
				ResourceTemplates []struct {
					URITemplate string `json:"uriTemplate"`
					Name        string `json:"name"`
					MimeType    string `json:"mimeType"`
				} `json:"resourceTemplates"`
			}
			if err := json.Unmarshal(raw, &r); err != nil {
				return err
			}
			for _, tp := range r.ResourceTemplates {
				if tp.URITemplate == "test://template/{id}/data" {
					if tp.Name != "template" || tp.MimeType != "application/json" {
						return fmt.Errorf("template %+v, want name template, mimeType application/json", tp)
					}
					return nil
				}
			}
			return fmt.Errorf("resources/templates/list lacks test://template/{id}/data: %s", raw)
		},
	},
	{
		Name: "call_echo", Args: []string{"--method", "tools/call", "--tool-name", "echo", "--tool-arg", "text=inspector says hi"},
		Check: func(era string, raw json.RawMessage) error {
			return wantText(raw, "content", "inspector says hi")
		},
	},
	{
		// The progressToken given in _meta reaches the handler (it puts the
		// token in its text), and the result arrives after the three
		// notifications/progress on the same stream.
		Name: "progress_token_tool", Args: []string{"--method", "tools/call", "--tool-name", "test_tool_with_progress", "--tool-metadata", "progressToken=" + inspectorProgressToken},
		Check: func(era string, raw json.RawMessage) error {
			return wantText(raw, "content", fmt.Sprintf("Progress tool completed (token %q)", inspectorProgressToken))
		},
	},
	{
		// sleep reports progress every 100 ms while a progressToken is set:
		// the result arrives after those notifications on the same stream.
		Name: "progress_token_sleep", Args: []string{"--method", "tools/call", "--tool-name", "sleep", "--tool-arg", "ms=450", "--tool-metadata", "progressToken=" + inspectorProgressToken},
		Check: func(era string, raw json.RawMessage) error {
			return wantText(raw, "content", "slept")
		},
	},
	{
		Name: "logging_setlevel", Args: []string{"--method", "logging/setLevel", "--log-level", "debug"}, Eras: legacyEra,
		Check: func(era string, raw json.RawMessage) error {
			var r map[string]json.RawMessage
			if err := json.Unmarshal(raw, &r); err != nil {
				return err
			}
			if len(r) != 0 {
				return fmt.Errorf("logging/setLevel result %s, want {}", raw)
			}
			return nil
		},
	},
	{
		// The CLI asks for debug logs (legacy: logging/setLevel right after
		// initialize; modern: the level in every request's _meta), so the
		// tool's three log messages precede its result on the stream.
		Name: "logging_tool", Args: []string{"--method", "tools/call", "--tool-name", "test_tool_with_logging"},
		Check: func(era string, raw json.RawMessage) error {
			return wantText(raw, "content", "Tool with logging executed successfully")
		},
	},
	{
		Name: "read_static", Args: []string{"--method", "resources/read", "--uri", "test://static-text"},
		Check: func(era string, raw json.RawMessage) error {
			return wantContents(raw, "test://static-text", "text/plain", "This is the content of the static text resource.")
		},
	},
	{
		Name: "read_template", Args: []string{"--method", "resources/read", "--uri", "test://template/99/data"},
		Check: func(era string, raw json.RawMessage) error {
			return wantContents(raw, "test://template/99/data", "application/json", `{"id":"99","templateTest":true,"data":"Data for ID: 99"}`)
		},
	},
	{
		Name: "prompt_with_args", Args: []string{"--method", "prompts/get", "--prompt-name", "test_prompt_with_arguments", "--prompt-args", "arg1=red", "arg2=blue"},
		Check: func(era string, raw json.RawMessage) error {
			var r struct {
				Messages []struct {
					Role    string `json:"role"`
					Content struct {
						Type string `json:"type"`
						Text string `json:"text"`
					} `json:"content"`
				} `json:"messages"`
			}
			if err := json.Unmarshal(raw, &r); err != nil {
				return err
			}
			if len(r.Messages) != 1 || r.Messages[0].Role != "user" || r.Messages[0].Content.Type != "text" ||
				r.Messages[0].Content.Text != "Prompt with arguments: arg1='red', arg2='blue'" {
				return fmt.Errorf("prompt messages %s", raw)
			}
			return nil
		},
	},
	{
		// The tool's first answer is input_required with a roots/list
		// request; the CLI answers it from its configured roots and retries
		// with inputResponses and the requestState.
		Name: "mrtr_list_roots", Args: []string{"--method", "tools/call", "--tool-name", "test_input_required_result_list_roots"}, Eras: modernEras, Roots: true,
		Check: func(era string, raw json.RawMessage) error {
			return wantText(raw, "content", "Client roots: "+rootURI)
		},
	},
}

// eraVersion is the protocol version the CLI must negotiate in era.
func eraVersion(era string) string {
	for _, e := range inspectorEras {
		if e.Era == era {
			return e.Version
		}
	}
	return "(unknown era " + era + ")"
}

// wantContents checks that a resources/read result holds exactly one
// text resource: uri, of type mime, with text want.
func wantContents(raw json.RawMessage, uri, mime, want string) error {
	var r struct {
		Contents []struct {
			URI      string `json:"uri"`
			MimeType string `json:"mimeType"`
			Text     string `json:"text"`
		} `json:"contents"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return err
	}
	if len(r.Contents) != 1 || r.Contents[0].URI != uri || r.Contents[0].MimeType != mime || r.Contents[0].Text != want {
		return fmt.Errorf("contents %s, want one %s resource %s with text %q", raw, mime, uri, want)
	}
	return nil
}

// wantText checks that raw[field] holds exactly one block, with text want.
func wantText(raw json.RawMessage, field, want string) error {
	var r map[string]json.RawMessage
	if err := json.Unmarshal(raw, &r); err != nil {
		return err
	}
	var blocks []struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal(r[field], &blocks); err != nil {
		return fmt.Errorf("%s in %s: %v", field, raw, err)
	}
	if len(blocks) != 1 || blocks[0].Text != want {
		return fmt.Errorf("%s %s, want one block with text %q", field, raw, want)
	}
	return nil
}

// inspectorScenarios lists the checks run in era.
func inspectorScenarios(era string) []string {
	var out []string
	for _, c := range inspectorChecks {
		if c.runsIn(era) {
			out = append(out, c.Name)
		}
	}
	return out
}

// runInspector runs every check in era against url, each a parallel
// subtest, and returns the run for the report.
func runInspector(t *testing.T, e *nodeEnv, url, era string, rep *report) {
	run := &clientRun{Client: "inspector-cli", Version: e.Versions[pkgInspector], Era: era}
	rep.add(run)
	for _, c := range inspectorChecks {
		if !c.runsIn(era) {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			home := t.TempDir()
			target := []string{url}
			if c.Roots {
				target = inspectorRootsConfig(t, home, url)
			}
			args := append([]string{e.Inspector, "--cli"}, target...)
			args = append(args, "--protocol-era", era, "--format", "json", "--connect-timeout", "20000")
			args = append(args, c.Args...)
			r := runNode(e, home, 60*time.Second, args...)
			res := scenarioResult{Client: run.Client, Version: run.Version, Era: era, Scenario: c.Name, Ms: r.Took.Milliseconds()}
			defer func() { rep.result(run, res) }()
			var out struct {
				Result json.RawMessage `json:"result"`
				Error  json.RawMessage `json:"error"`
			}
			if r.Err != nil || json.Unmarshal([]byte(strings.TrimSpace(r.Stdout)), &out) != nil || out.Result == nil {
				res.Detail = fmt.Sprintf("inspector %s: %v\nstdout: %s\nstderr: %s", strings.Join(c.Args, " "), r.Err, r.Stdout, tail(r.Stderr, 20))
				t.Error(res.Detail)
				return
			}
			if err := c.Check(era, out.Result); err != nil {
				res.Detail = err.Error()
				t.Errorf("inspector %s --protocol-era %s: %v", strings.Join(c.Args, " "), era, err)
				return
			}
			res.OK = true
			t.Logf("ok (%s)", r.Took.Round(time.Millisecond))
		})
	}
}

// inspectorRootsConfig writes a session config file into dir whose one
// server entry is url with rootURI as the client's root, and returns the
// CLI arguments that select it.
func inspectorRootsConfig(t *testing.T, dir, url string) []string {
	t.Helper()
	cfg := map[string]any{"mcpServers": map[string]any{"mcpfleet": map[string]any{
		"type": "streamable-http", "url": url,
		"roots": []map[string]string{{"uri": rootURI, "name": "mcpfleet client root"}},
	}}}
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "inspector-session.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{"--config", path, "--server", "mcpfleet"}
}
