package frontend

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/sessionstore"
)

// The options rule: zero is the documented default, negative is off where
// the field says so and refused where it does not; every refusal wraps
// ErrInvalidConfig.
func TestOptionsRule(t *testing.T) {
	store, err := sessionstore.NewMemory(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close(t.Context()) })

	o := Options{Store: store}
	if err := o.resolve(); err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string]any{
		"MaxBodyBytes": o.MaxBodyBytes, "RequestTimeout": o.RequestTimeout, "WorkerTimeout": o.WorkerTimeout,
		"StreamBuffer": o.StreamBuffer, "SessionTTL": o.SessionTTL, "StateTTL": o.StateTTL, "MaxListen": o.MaxListen,
		"MaxInitializeBytes": o.MaxInitializeBytes, "ListenKeepAlive": o.ListenKeepAlive,
	} {
		want := map[string]any{
			"MaxBodyBytes": int64(4 << 20), "RequestTimeout": 10 * time.Minute, "WorkerTimeout": 4 * time.Second,
			"StreamBuffer": 256, "SessionTTL": 30 * time.Minute, "StateTTL": 15 * time.Minute, "MaxListen": 1000,
			"MaxInitializeBytes": 64 << 10, "ListenKeepAlive": 15 * time.Second,
		}[name]
		if got != want {
			t.Errorf("zero %s resolved to %v, want the default %v", name, got, want)
		}
	}
	if len(o.ID) != 12 {
		t.Errorf("a zero ID resolved to %q, want 12 random hex digits", o.ID)
	}

	off := Options{Store: store, KeepAlive: -1, MaxListen: -1, MaxInitializeBytes: -1, SSERetry: -1, ListenKeepAlive: -1}
	if err := off.resolve(); err != nil {
		t.Fatalf("negative where it means off: %v", err)
	}
	if off.KeepAlive >= 0 || off.MaxListen >= 0 || off.MaxInitializeBytes >= 0 || off.SSERetry >= 0 || off.ListenKeepAlive >= 0 {
		t.Errorf("a negative (off) value was replaced: %+v", off)
	}

	for _, bad := range []Options{
		{},
		{Store: store, MaxBodyBytes: -1},
		{Store: store, RequestTimeout: -1},
		{Store: store, StreamBuffer: -1},
		{Store: store, SessionTTL: -time.Second},
		{Store: store, StateTTL: -time.Second},
		{Store: store, ID: strings.Repeat("x", MaxIDLen+1)},
	} {
		if err := bad.resolve(); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("resolve(%+v) = %v, want ErrInvalidConfig", bad, err)
		}
	}
}

// Every field of Options documents its default on a "default:" line.
func TestOptionsDocumentDefaults(t *testing.T) {
	src := readSource(t, "options.go")
	for _, f := range reflect.VisibleFields(reflect.TypeFor[Options]()) {
		i := strings.Index(src, "\n\t"+f.Name+" ")
		if i < 0 {
			t.Fatalf("field %s not found in options.go", f.Name)
		}
		doc := src[:i]
		doc = doc[strings.LastIndex(doc, "\n\t// ")+1:]
		if !strings.HasPrefix(strings.TrimSpace(doc), "// default:") {
			t.Errorf("the doc comment of Options.%s does not end with a \"// default:\" line", f.Name)
		}
	}
}

func readSource(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
