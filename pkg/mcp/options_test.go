package mcp_test

import (
	"errors"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

var optionsInfo = protocol.Implementation{Name: "options", Version: "1"}

func TestServerOptionsInvalid(t *testing.T) {
	for name, o := range map[string]*mcp.ServerOptions{
		"negative PageSize":  {PageSize: -1},
		"negative StateTTL":  {StateTTL: -time.Second},
		"unknown CacheScope": {CacheScope: "shared"},
		"short StateKey":     {StateKey: make([]byte, 5)},
		"short OldStateKey":  {OldStateKeys: [][]byte{make([]byte, 5)}},
	} {
		t.Run(name, func(t *testing.T) {
			err := o.Validate()
			if !errors.Is(err, mcp.ErrInvalidOptions) {
				t.Fatalf("Validate = %v, want one wrapping ErrInvalidOptions", err)
			}
			defer func() {
				p := recover()
				perr, _ := p.(error)
				if !errors.Is(perr, mcp.ErrInvalidOptions) {
					t.Errorf("NewServer panicked with %v, want an error wrapping ErrInvalidOptions", p)
				}
			}()
			mcp.NewServer(optionsInfo, o)
		})
	}
}

func TestServerOptionsZeroIsDefault(t *testing.T) {
	var nilOpts *mcp.ServerOptions
	if err := nilOpts.Validate(); err != nil {
		t.Errorf("nil options: %v", err)
	}
	for _, o := range []*mcp.ServerOptions{nil, {}, {CacheTTL: -time.Second}} {
		if err := o.Validate(); err != nil {
			t.Errorf("Validate(%+v) = %v", o, err)
		}
		got := mcp.NewServer(optionsInfo, o).Options()
		if got.PageSize != 500 || got.StateTTL != 10*time.Minute || got.CacheTTL != 0 || got.CacheScope != protocol.CacheScopePublic {
			t.Errorf("NewServer(%+v).Options() = page %d, state TTL %v, cache TTL %v, scope %q; want 500, 10m, 0, public",
				o, got.PageSize, got.StateTTL, got.CacheTTL, got.CacheScope)
		}
	}
	set := mcp.NewServer(optionsInfo, &mcp.ServerOptions{PageSize: 7, StateTTL: time.Minute, CacheScope: protocol.CacheScopePrivate}).Options()
	if set.PageSize != 7 || set.StateTTL != time.Minute || set.CacheScope != protocol.CacheScopePrivate {
		t.Errorf("set options not kept: %+v", set)
	}
}

func TestSetStateKeysInvalid(t *testing.T) {
	s := mcp.NewServer(optionsInfo, nil)
	err := s.SetStateKeys(make([]byte, 5))
	if !errors.Is(err, mcp.ErrInvalidOptions) {
		t.Fatalf("SetStateKeys(5 bytes) = %v, want one wrapping ErrInvalidOptions", err)
	}
	if want := "mcp: a requestState key must be 32 bytes, got 5"; err.Error() != want {
		t.Errorf("message %q, want %q", err, want)
	}
}
