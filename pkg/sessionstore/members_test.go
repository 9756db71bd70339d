package sessionstore

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// TestMembersCopyKnowsEveryField fails when a protocol type that
// members.copyTo deep-copies gains (or loses) a field: copyTo must then
// copy what the new field points to, or copies would share it.
func TestMembersCopyKnowsEveryField(t *testing.T) {
	for typ, n := range map[reflect.Type]int{
		reflect.TypeFor[protocol.Implementation]():        6,
		reflect.TypeFor[protocol.Icon]():                  4,
		reflect.TypeFor[protocol.ClientCapabilities]():    6,
		reflect.TypeFor[protocol.RootsCapability]():       1,
		reflect.TypeFor[protocol.SamplingCapability]():    2,
		reflect.TypeFor[protocol.ElicitationCapability](): 2,
	} {
		if typ.NumField() != n {
			t.Errorf("%v has %d fields, members.copyTo knows %d: update copyTo and this test", typ, typ.NumField(), n)
		}
	}
}

// TestMembersCopy: a copy equals a fresh decode, and changing it changes
// neither the members nor the next copy.
func TestMembersCopy(t *testing.T) {
	info, caps, err := encodeJSONMembers(fullSession())
	if err != nil {
		t.Fatal(err)
	}
	checkMembersCopy(t, info, caps)
	checkMembersCopy(t, []byte(`{"name":"n","version":"1","icons":[]}`), []byte(`{"experimental":{},"tasks":{},"extensions":{"e":null}}`))
	checkMembersCopy(t, []byte(`{"name":"n","version":"1"}`), []byte(`{}`))
}

// FuzzMembersCopy compares the copy of decoded members (the path of every
// Get and Begin) with decoding the JSON again (the path it replaces).
func FuzzMembersCopy(f *testing.F) {
	info, caps, err := encodeJSONMembers(fullSession())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(info, caps)
	f.Add([]byte(`{"name":"n","version":"1","icons":[{"src":"s","sizes":[]}]}`), []byte(`{"roots":{},"sampling":{"tools":{}},"elicitation":{"url":{}},"tasks":[1],"experimental":{"a":"b"}}`))
	f.Add([]byte(`{}`), []byte(`{"extensions":{}}`))
	f.Add([]byte(`null`), []byte(`{"roots":null}`))
	f.Fuzz(func(t *testing.T, info, caps []byte) {
		if _, err := decodeMembers(info, caps); err != nil {
			var s Session
			if decodeJSONMembers(&s, info, caps) == nil {
				t.Fatalf("decodeMembers fails (%v) where decodeJSONMembers does not", err)
			}
			return
		}
		checkMembersCopy(t, info, caps)
	})
}

// checkMembersCopy checks two copies of the members of info and caps
// against decoding them, modifying the first copy in every place it
// holds memory before taking the second.
func checkMembersCopy(t *testing.T, info, caps []byte) {
	t.Helper()
	m, err := decodeMembers(info, caps)
	if err != nil {
		t.Fatal(err)
	}
	var want Session
	if err := decodeJSONMembers(&want, info, caps); err != nil {
		t.Fatal(err)
	}
	var got Session
	m.copyTo(&got)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("copy differs from a decode:\ncopy   %#v\ndecode %#v", got, want)
	}
	scribble(&got)
	var again Session
	m.copyTo(&again)
	if !reflect.DeepEqual(again, want) {
		t.Fatalf("a copy changed the members:\ncopy   %#v\ndecode %#v", again, want)
	}
}

// scribble changes everything s's members point to.
func scribble(s *Session) {
	for i := range s.ClientInfo.Icons {
		ic := &s.ClientInfo.Icons[i]
		ic.Src += "x"
		for j := range ic.Sizes {
			ic.Sizes[j] += "x"
		}
	}
	c := &s.ClientCapabilities
	for _, m := range []map[string]json.RawMessage{c.Experimental, c.Extensions} {
		for k, v := range m {
			for i := range v {
				v[i] = '#'
			}
			m[k+"x"] = nil
		}
	}
	for i := range c.Tasks {
		c.Tasks[i] = '#'
	}
	if c.Roots != nil {
		c.Roots.ListChanged = !c.Roots.ListChanged
	}
	if c.Sampling != nil {
		c.Sampling.Context, c.Sampling.Tools = nil, &struct{}{}
	}
	if c.Elicitation != nil {
		c.Elicitation.Form, c.Elicitation.URL = nil, &struct{}{}
	}
}

// TestMemoryGetDecodesOnce: a Memory store's Get copies the members
// decoded once instead of decoding their JSON again (46 allocations for
// fullSession's; the copy takes 13 with the session itself).
func TestMemoryGetDecodesOnce(t *testing.T) {
	m, err := NewMemory(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close(t.Context()) })
	s := fullSession()
	mustCreate(t, m, s)
	ctx := t.Context()
	if n := testing.AllocsPerRun(100, func() {
		if _, err := m.Get(ctx, s.ID); err != nil {
			t.Fatal(err)
		}
	}); n > 20 {
		t.Errorf("Get allocates %v times, want at most 20", n)
	}
}
