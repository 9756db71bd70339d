package clienttest

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// inspectorCheck is one Inspector CLI invocation and what its JSON output
// must say.
type inspectorCheck struct {
	Name   string
	Args   []string
	Legacy bool // run in the legacy era only
	Check  func(era string, result json.RawMessage) error
}

// inspectorEras are the CLI's --protocol-era values and the protocol
// version each must end up with.
var inspectorEras = []struct{ Era, Version string }{
	{"legacy", legacyVersion},
	{"auto", modernVersion},
	{"modern", modernVersion},
}

var inspectorChecks = []inspectorCheck{
	{
		// The CLI's initialize method reports the negotiated version: in
		// auto mode it is the era the CLI detected with server/discover.
		Name: "era_detection", Args: []string{"--method", "initialize"},
		Check: func(era string, raw json.RawMessage) error {
			var r struct {
				ProtocolVersion string `json:"protocolVersion"`
				ServerInfo      struct {
					Name string `json:"name"`
				} `json:"serverInfo"`
				Capabilities map[string]json.RawMessage `json:"capabilities"`
			}
			if err := json.Unmarshal(raw, &r); err != nil {
				return err
			}
			want := modernVersion
			if era == "legacy" {
				want = legacyVersion
			}
			if r.ProtocolVersion != want {
				return fmt.Errorf("protocolVersion %q, want %q", r.ProtocolVersion, want)
			}
			if r.ServerInfo.Name != expectedServer {
				return fmt.Errorf("serverInfo.name %q, want %q", r.ServerInfo.Name, expectedServer)
			}
			if r.Capabilities["tools"] == nil {
				return fmt.Errorf("capabilities lack tools: %s", raw)
			}
			return nil
		},
	},
	{
		Name: "tools_list", Args: []string{"--method", "tools/list"},
		Check: func(era string, raw json.RawMessage) error {
			var r struct {
				Tools []struct {
					Name string `json:"name"`
				} `json:"tools"`
			}
			if err := json.Unmarshal(raw, &r); err != nil {
				return err
			}
			have := map[string]bool{}
			for _, tl := range r.Tools {
				have[tl.Name] = true
			}
			for _, n := range []string{"echo", "sleep", "touch_resource", "test_tool_with_progress", "test_input_required_result_elicitation"} {
				if !have[n] {
					return fmt.Errorf("tools/list lacks %s (%d tools)", n, len(r.Tools))
				}
			}
			return nil
		},
	},
	{
		Name: "tools_call_echo", Args: []string{"--method", "tools/call", "--tool-name", "echo", "--tool-arg", "text=inspector says hi"},
		Check: func(era string, raw json.RawMessage) error {
			return wantText(raw, "content", "inspector says hi")
		},
	},
	{
		Name: "prompts_get_args", Args: []string{"--method", "prompts/get", "--prompt-name", "test_prompt_with_arguments", "--prompt-args", "arg1=red", "arg2=blue"},
		Check: func(era string, raw json.RawMessage) error {
			var r struct {
				Messages []struct {
					Role    string `json:"role"`
					Content struct {
						Text string `json:"text"`
					} `json:"content"`
				} `json:"messages"`
			}
			if err := json.Unmarshal(raw, &r); err != nil {
				return err
			}
			if len(r.Messages) != 1 || r.Messages[0].Content.Text != "Prompt with arguments: arg1='red', arg2='blue'" {
				return fmt.Errorf("prompt messages %s", raw)
			}
			return nil
		},
	},
	{
		Name: "resources_read_static", Args: []string{"--method", "resources/read", "--uri", "test://static-text"},
		Check: func(era string, raw json.RawMessage) error {
			return wantText(raw, "contents", "This is the content of the static text resource.")
		},
	},
	{
		Name: "resources_read_template", Args: []string{"--method", "resources/read", "--uri", "test://template/99/data"},
		Check: func(era string, raw json.RawMessage) error {
			return wantText(raw, "contents", `{"id":"99","templateTest":true,"data":"Data for ID: 99"}`)
		},
	},
	{
		Name: "logging_set_level", Args: []string{"--method", "logging/setLevel", "--log-level", "debug"}, Legacy: true,
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
		if !c.Legacy || era == "legacy" {
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
		if c.Legacy && era != "legacy" {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			args := append([]string{e.Inspector, "--cli", url, "--protocol-era", era, "--format", "json", "--connect-timeout", "20000"}, c.Args...)
			r := runNode(e, t.TempDir(), 60*time.Second, args...)
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
