package auth_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/auth"
)

func TestOptionsInvalid(t *testing.T) {
	base := auth.Options{Issuer: issuer, Audience: audience, JWKSFile: "unused.json"}
	for name, tc := range map[string]struct {
		edit func(*auth.Options)
		msg  string // "" when the message is new
	}{
		"no issuer":             {func(o *auth.Options) { o.Issuer = "" }, "auth: an issuer is required"},
		"no audience":           {func(o *auth.Options) { o.Audience = "" }, "auth: an audience (this resource's URL) is required"},
		"both JWKS":             {func(o *auth.Options) { o.JWKSURL = "https://auth.example.com/jwks" }, "auth: exactly one of a JWKS file and a JWKS URL is required"},
		"negative Refresh":      {func(o *auth.Options) { o.Refresh = -time.Second }, ""},
		"negative MinRefresh":   {func(o *auth.Options) { o.MinRefresh = -time.Second }, ""},
		"negative FetchTimeout": {func(o *auth.Options) { o.FetchTimeout = -time.Second }, ""},
		"http JWKS URL":         {func(o *auth.Options) { o.JWKSFile, o.JWKSURL = "", "http://auth.example.com/jwks" }, ""},
		"http loopback JWKS":    {func(o *auth.Options) { o.JWKSFile, o.JWKSURL = "", "http://127.0.0.1:8080/jwks" }, ""},
		"relative JWKS URL":     {func(o *auth.Options) { o.JWKSFile, o.JWKSURL = "", "/jwks" }, ""},
		"ftp JWKS URL":          {func(o *auth.Options) { o.JWKSFile, o.JWKSURL = "", "ftp://auth.example.com/jwks" }, ""},
		"insecure but not http": {func(o *auth.Options) { o.JWKSFile, o.JWKSURL, o.AllowInsecureJWKS = "", "file:///etc/jwks", true }, ""},
	} {
		t.Run(name, func(t *testing.T) {
			o := base
			tc.edit(&o)
			if err := o.Validate(); !errors.Is(err, auth.ErrInvalidOptions) {
				t.Errorf("Validate = %v, want one wrapping ErrInvalidOptions", err)
			}
			_, err := auth.New(t.Context(), o)
			if !errors.Is(err, auth.ErrInvalidOptions) {
				t.Fatalf("New = %v, want one wrapping ErrInvalidOptions", err)
			}
			if tc.msg != "" && err.Error() != tc.msg {
				t.Errorf("message %q, want %q as before", err, tc.msg)
			}
		})
	}
	if err := base.Validate(); err != nil {
		t.Errorf("valid options: %v", err)
	}
	for _, o := range []auth.Options{
		{Issuer: issuer, Audience: audience, JWKSURL: "https://auth.example.com/jwks"},
		{Issuer: issuer, Audience: audience, JWKSURL: "http://127.0.0.1:8080/jwks", AllowInsecureJWKS: true},
	} {
		if err := o.Validate(); err != nil {
			t.Errorf("valid options %+v: %v", o, err)
		}
	}
}

// Zero Leeway is the default 30 s; negative turns the leeway off.
func TestOptionsLeeway(t *testing.T) {
	k := newRSA(t, "r1")
	file := jwksFile(t, k)
	expired := k.token(t, claims(map[string]any{"exp": time.Now().Add(-10 * time.Second).Unix()}))
	for _, tc := range []struct {
		leeway time.Duration
		ok     bool
	}{{0, true}, {-1, false}, {time.Second, false}} {
		v, err := auth.New(t.Context(), auth.Options{Issuer: issuer, Audience: audience, JWKSFile: file, Leeway: tc.leeway})
		if err != nil {
			t.Fatal(err)
		}
		_, err = v.Verify(t.Context(), expired)
		if (err == nil) != tc.ok {
			t.Errorf("Leeway %v: a token expired 10 s ago: %v, want accepted %v", tc.leeway, err, tc.ok)
		}
	}
}

func TestNewHonoursContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := auth.New(ctx, auth.Options{Issuer: issuer, Audience: audience, JWKSFile: jwksFile(t, newRSA(t, "r1"))})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("New with a done context = %v, want context.Canceled", err)
	}
}
