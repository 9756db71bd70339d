package deploytest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/mcpfleet/mcpfleet/internal/testenv"
)

// composeFile is the part of the compose format these files use. Decoding
// is strict: a key the test does not know fails it, so a change to the
// files that the test would not run is noticed.
type composeFile struct {
	Name     string              `json:"name"`
	Services map[string]*service `json:"services"`
	Volumes  map[string]any      `json:"volumes"`
}

type service struct {
	Image           string                `json:"image"`
	Build           *build                `json:"build"`
	Entrypoint      []string              `json:"entrypoint"`
	Command         []string              `json:"command"`
	Environment     map[string]string     `json:"environment"`
	Volumes         []string              `json:"volumes"`
	Ports           []string              `json:"ports"`
	Restart         string                `json:"restart"`
	StopGracePeriod string                `json:"stop_grace_period"`
	Healthcheck     *healthcheck          `json:"healthcheck"`
	DependsOn       map[string]dependency `json:"depends_on"`
	Profiles        []string              `json:"profiles"`
}

type build struct {
	Context    string            `json:"context"`
	Dockerfile string            `json:"dockerfile"`
	Args       map[string]string `json:"args"`
}

type healthcheck struct {
	Test        []string `json:"test"`
	Interval    string   `json:"interval"`
	Timeout     string   `json:"timeout"`
	Retries     int      `json:"retries"`
	StartPeriod string   `json:"start_period"`
}

type dependency struct {
	Condition string `json:"condition"`
}

// deployDir is deploy/ of this checkout: the compose project directory.
func deployDir(tb testing.TB) string {
	return filepath.Join(testenv.ModuleRoot(tb), "deploy")
}

// loadCompose reads the compose files in order (an override after the
// base), interpolates each with env before the merge (as compose does)
// and decodes the result strictly. used collects the variables named.
func loadCompose(env map[string]string, used map[string]bool, files ...string) (*composeFile, error) {
	var merged map[string]any
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var doc map[string]any
		if err := yaml.Unmarshal(data, &doc); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		in := &interpolator{env: env, used: used}
		v, err := in.walk(doc)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		if merged == nil {
			merged = v.(map[string]any)
			continue
		}
		if err := mergeInto(merged, v.(map[string]any), ""); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
	}
	raw, err := json.Marshal(merged)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var c composeFile
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("decoding %v: %w", files, err)
	}
	return &c, nil
}

// mergeInto merges an override into base as compose does for what the
// override files here set: mappings merge key by key; a scalar or a
// sequence replaces (compose's rule for command, entrypoint and
// healthcheck.test). Compose appends the sequences ports, volumes, dns
// and the like instead: an override setting one is refused here.
func mergeInto(base, over map[string]any, path string) error {
	for k, v := range over {
		p := path + "." + k
		if strings.Count(p, ".") == 3 && strings.HasPrefix(p, ".services.") {
			switch k {
			case "ports", "volumes", "expose", "dns", "profiles", "env_file", "extra_hosts", "secrets", "configs":
				return fmt.Errorf("%s: compose appends this sequence; the test does not merge it", p)
			}
		}
		bm, bok := base[k].(map[string]any)
		om, ook := v.(map[string]any)
		if bok && ook {
			if err := mergeInto(bm, om, p); err != nil {
				return err
			}
			continue
		}
		base[k] = v
	}
	return nil
}

// interpolator substitutes compose variables: $NAME, ${NAME},
// ${NAME:-default}, ${NAME-default}, ${NAME:?error}, ${NAME?error},
// ${NAME:+alt}, ${NAME+alt}, nested (${A:-${B}}), and $$ for a dollar.
// Stricter than compose in one way: a variable with no default that is
// unset is an error (compose warns and substitutes "").
type interpolator struct {
	env  map[string]string
	used map[string]bool
}

func (in *interpolator) walk(v any) (any, error) {
	switch x := v.(type) {
	case string:
		return in.expand(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			r, err := in.walk(e)
			if err != nil {
				return nil, err
			}
			out[k] = r
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			r, err := in.walk(e)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	}
	return v, nil
}

var nameRE = regexp.MustCompile(`^[_a-zA-Z][_a-zA-Z0-9]*`)

func (in *interpolator) expand(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			i++
			continue
		}
		switch next := s[i+1]; {
		case next == '$':
			b.WriteByte('$')
			i += 2
		case next == '{':
			end, depth := i+2, 1
			for ; end < len(s); end++ {
				if strings.HasPrefix(s[end:], "${") {
					depth++
					end++
				} else if s[end] == '}' {
					if depth--; depth == 0 {
						break
					}
				}
			}
			if depth != 0 {
				return "", fmt.Errorf("%q: unterminated ${", s)
			}
			v, err := in.braced(s[i+2 : end])
			if err != nil {
				return "", err
			}
			b.WriteString(v)
			i = end + 1
		default:
			name := nameRE.FindString(s[i+1:])
			if name == "" {
				b.WriteByte('$')
				i++
				continue
			}
			v, err := in.braced(name)
			if err != nil {
				return "", err
			}
			b.WriteString(v)
			i += 1 + len(name)
		}
	}
	return b.String(), nil
}

func (in *interpolator) braced(expr string) (string, error) {
	name := nameRE.FindString(expr)
	if name == "" {
		return "", fmt.Errorf("${%s}: not a variable", expr)
	}
	in.used[name] = true
	val, set := in.env[name]
	rest := expr[len(name):]
	op := ""
	for _, o := range []string{":-", ":?", ":+", "-", "?", "+"} {
		if strings.HasPrefix(rest, o) {
			op = o
			break
		}
	}
	if op == "" && rest != "" {
		return "", fmt.Errorf("${%s}: unsupported syntax", expr)
	}
	arg := func() (string, error) { return in.expand(rest[len(op):]) }
	nonEmpty := set && val != ""
	switch op {
	case "":
		if !set {
			return "", fmt.Errorf("${%s} is not set and has no default", name)
		}
		return val, nil
	case ":-", "-":
		if nonEmpty || (op == "-" && set) {
			return val, nil
		}
		return arg()
	case ":?", "?":
		if nonEmpty || (op == "?" && set) {
			return val, nil
		}
		msg, err := arg()
		if err != nil {
			return "", err
		}
		return "", fmt.Errorf("required variable %s is missing a value: %s", name, msg)
	default: // ":+", "+"
		if nonEmpty || (op == "+" && set) {
			return arg()
		}
		return "", nil
	}
}

// envExample reads deploy/.env.example: the variables it sets (KEY=value)
// and those it documents commented out (#KEY=value).
func envExample(tb testing.TB) (set map[string]string, documented map[string]bool) {
	tb.Helper()
	return parseEnvFile(tb, filepath.Join(deployDir(tb), ".env.example"))
}

// parseEnvFile reads an env file as compose's dotenv does for these files
// (KEY=value lines, the value unquoted), and the #KEY=value lines apart.
func parseEnvFile(tb testing.TB, path string) (set map[string]string, documented map[string]bool) {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	set, documented = map[string]string{}, map[string]bool{}
	line := regexp.MustCompile(`^(#?)([A-Z][A-Z0-9_]*)=(.*)$`)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		m := line.FindStringSubmatch(strings.TrimSpace(sc.Text()))
		if m == nil {
			continue
		}
		documented[m[2]] = true
		if m[1] == "" {
			set[m[2]] = m[3]
		}
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return set, documented
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func TestInterpolate(t *testing.T) {
	env := map[string]string{"A": "a", "EMPTY": "", "P": "8080"}
	for _, c := range []struct{ in, want, err string }{
		{in: "x$A-${A}", want: "xa-a"},
		{in: "$$A ${A:-d}", want: "$A a"},
		{in: "${EMPTY:-d}|${EMPTY-d}|${UNSET-d}", want: "d||d"},
		{in: "${UNSET:-localhost:${P:-1},127.0.0.1:${P}}", want: "localhost:8080,127.0.0.1:8080"},
		{in: "${UNSET:-m:${V:-dev}}", want: "m:dev"},
		{in: "${A:+yes}${EMPTY:+no}${EMPTY+set}", want: "yesset"},
		{in: "${EMPTY:?need it}", err: "missing a value: need it"},
		{in: "${UNSET}", err: "not set"},
		{in: "${A", err: "unterminated"},
		{in: "cost $5", want: "cost $5"},
	} {
		got, err := (&interpolator{env: env, used: map[string]bool{}}).expand(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: error %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}
