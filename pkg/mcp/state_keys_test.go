package mcp_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

func TestStateKeyConfigured(t *testing.T) {
	if newServer(t, nil).StateKeyConfigured() {
		t.Error("a server with a random key reports a configured one")
	}
	if !newServer(t, &mcp.ServerOptions{StateKey: mcp.RandomStateKey()}).StateKeyConfigured() {
		t.Error("a server given ServerOptions.StateKey reports no configured key")
	}
	s := newServer(t, nil)
	if err := s.SetStateKeys(make([]byte, mcp.StateKeySize-1)); err == nil {
		t.Error("SetStateKeys accepted a short key")
	}
	if err := s.SetStateKeys(mcp.RandomStateKey(), make([]byte, mcp.StateKeySize+1)); err == nil {
		t.Error("SetStateKeys accepted a long old key")
	}
	if err := s.SetStateKeys(nil); err == nil {
		t.Error("SetStateKeys accepted no key")
	}
	if s.StateKeyConfigured() {
		t.Error("a refused SetStateKeys configured a key")
	}
	if err := s.SetStateKeys(mcp.RandomStateKey()); err != nil {
		t.Fatal(err)
	}
	if !s.StateKeyConfigured() {
		t.Error("SetStateKeys left the key unconfigured")
	}
}

// TestSetStateKeysRotation checks a key installed after construction:
// states sealed before open only when the replaced key is given as old, a
// refused key changes nothing, and the new key seals (a peer holding only
// it opens the states).
func TestSetStateKeysRotation(t *testing.T) {
	const method, params = protocol.MethodToolsCall, `{"name":"ask"}`
	k1, k2 := mcp.RandomStateKey(), mcp.RandomStateKey()
	f := newMRTRFixture(t, &mcp.ServerOptions{StateKey: k1})
	before := f.firstRound(t, method, params, "alice")

	if err := f.s.SetStateKeys(k2[:8], k1); err == nil {
		t.Fatal("SetStateKeys accepted a short key")
	}
	f.wantAccepted(t, method, params, before, "alice", "tools/call ask") // still k1

	if err := f.s.SetStateKeys(k2); err != nil {
		t.Fatal(err)
	}
	f.wantRefused(t, method, params, before, "alice", "invalid")

	if err := f.s.SetStateKeys(k2, k1); err != nil {
		t.Fatal(err)
	}
	f.wantAccepted(t, method, params, before, "alice", "tools/call ask")

	after := f.firstRound(t, method, params, "alice")
	peer := newMRTRFixture(t, nil)
	if err := peer.s.SetStateKeys(k2); err != nil {
		t.Fatal(err)
	}
	peer.wantAccepted(t, method, params, after, "alice", "tools/call ask")
	peer.wantRefused(t, method, params, before, "alice", "invalid")
}

// TestSetStateKeysConcurrent rotates the keys while multi-round requests
// run (for the race detector): with both keys always among those that
// open, every retry succeeds whichever key sealed its state.
func TestSetStateKeysConcurrent(t *testing.T) {
	const method, params = protocol.MethodToolsCall, `{"name":"ask"}`
	k1, k2 := mcp.RandomStateKey(), mcp.RandomStateKey()
	f := newMRTRFixture(t, &mcp.ServerOptions{StateKey: k1, OldStateKeys: [][]byte{k2}})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			seal, open := k1, k2
			if i%2 == 1 {
				seal, open = k2, k1
			}
			if err := f.s.SetStateKeys(seal, open); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	var rounds sync.WaitGroup
	for range 4 {
		rounds.Add(1)
		go func() {
			defer rounds.Done()
			for range 25 {
				res, err := f.s.Handle(context.Background(), mrtrReq(method, "alice"), json.RawMessage(params))
				ir, ok := res.(*protocol.InputRequiredResult)
				if err != nil || !ok {
					t.Errorf("a first round during key rotation: %v, %v; want input_required", res, err)
					return
				}
				retry := `{"name":"ask","requestState":` + quote(ir.RequestState) + `,"inputResponses":{"answer":` + mrtrAnswer + `}}`
				res, err = f.s.Handle(context.Background(), mrtrReq(method, "alice"), json.RawMessage(retry))
				if err != nil || res.Base().ResultType != protocol.ResultTypeComplete {
					t.Errorf("a retry during key rotation: %v, %v; want a complete result", res, err)
					return
				}
			}
		}()
	}
	rounds.Wait()
	close(stop)
	wg.Wait()
	if !f.s.StateKeyConfigured() {
		t.Error("the key is not configured after SetStateKeys")
	}
}
