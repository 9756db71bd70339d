package trusttest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/conf"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/mcpfleet/mcpfleet/internal/testenv"
	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// shippedPermissions reads the FRONTEND and WORKER blocks of the shipped
// deploy/nats-auth.conf with nats-server's own parser and returns them as
// JWT user permissions, so operator mode is tested with exactly the
// permissions of the user/password mode. A key the conversion does not
// know fails the test rather than being dropped.
func shippedPermissions(t *testing.T) map[string]jwt.Permissions {
	t.Helper()
	// The file's authorization block reads the passwords from the
	// environment; the parser needs them set, their values are unused.
	t.Setenv("NATS_FRONTEND_PASSWORD", "unused")
	t.Setenv("NATS_WORKER_PASSWORD", "unused")
	m, err := conf.ParseFile(filepath.Join(testenv.ModuleRoot(t), "deploy", "nats-auth.conf"))
	if err != nil {
		t.Fatal(err)
	}
	keys := func(what string, v any, known ...string) map[string]any {
		mm, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("deploy/nats-auth.conf: %s is %T, want a map", what, v)
		}
		for k := range mm {
			if !slices.Contains(known, k) {
				t.Fatalf("deploy/nats-auth.conf: %s has %q, which the operator-mode test does not convert", what, k)
			}
		}
		return mm
	}
	list := func(what string, v any) jwt.StringList {
		var l jwt.StringList
		switch v := v.(type) {
		case nil:
		case string:
			l = append(l, v)
		case []any:
			for _, s := range v {
				str, ok := s.(string)
				if !ok {
					t.Fatalf("deploy/nats-auth.conf: %s holds %T, want subjects", what, s)
				}
				l = append(l, str)
			}
		default:
			t.Fatalf("deploy/nats-auth.conf: %s is %T, want a list of subjects", what, v)
		}
		return l
	}
	perms := map[string]jwt.Permissions{}
	for _, role := range []string{"FRONTEND", "WORKER"} {
		b := keys(role, m[role], "publish", "subscribe", "allow_responses")
		var p jwt.Permissions
		for dir, perm := range map[string]*jwt.Permission{"publish": &p.Pub, "subscribe": &p.Sub} {
			d := keys(role+"."+dir, b[dir], "allow", "deny")
			perm.Allow, perm.Deny = list(role+"."+dir+".allow", d["allow"]), list(role+"."+dir+".deny", d["deny"])
			if len(perm.Allow) == 0 {
				t.Fatalf("deploy/nats-auth.conf: %s.%s allows nothing", role, dir)
			}
		}
		switch r := b["allow_responses"].(type) {
		case nil:
		case bool:
			if r {
				// allow_responses: true is one reply within the
				// server's default expiry, as a zero Expires is.
				p.Resp = &jwt.ResponsePermission{MaxMsgs: 1}
			}
		default:
			t.Fatalf("deploy/nats-auth.conf: %s.allow_responses is %T, the test converts only true or false", role, r)
		}
		perms[role] = p
	}
	return perms
}

// operatorNATS is a nats-server in operator (decentralized JWT) mode with
// one account, whose users log in with .creds files.
type operatorNATS struct {
	URL     string
	dir     string
	account nkeys.KeyPair
}

func mustKey(t *testing.T, create func() (nkeys.KeyPair, error)) (nkeys.KeyPair, string) {
	t.Helper()
	kp, err := create()
	if err != nil {
		t.Fatal(err)
	}
	pub, err := kp.PublicKey()
	if err != nil {
		t.Fatal(err)
	}
	return kp, pub
}

func encode(t *testing.T, c jwt.Claims, signer nkeys.KeyPair) string {
	t.Helper()
	s, err := c.Encode(signer)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// startOperatorNATS generates an operator, a system account and the
// application account (no nsc: jwt/v2 and nkeys), and runs nats-server
// trusting the operator, with both accounts preloaded in a memory
// resolver. nats-server v2.15.2 starts without a system account too, but
// logs that it has none; the operator's claims name this one, as nsc
// does.
func startOperatorNATS(t *testing.T) *operatorNATS {
	t.Helper()
	op, opPub := mustKey(t, nkeys.CreateOperator)
	_, sysPub := mustKey(t, nkeys.CreateAccount)
	acc, accPub := mustKey(t, nkeys.CreateAccount)
	oc := jwt.NewOperatorClaims(opPub)
	oc.Name, oc.SystemAccount = "trusttest", sysPub
	sc := jwt.NewAccountClaims(sysPub)
	sc.Name = "SYS"
	ac := jwt.NewAccountClaims(accPub)
	ac.Name = "mcpfleet"

	n := &operatorNATS{dir: t.TempDir(), account: acc}
	port := testenv.FreePort(t)
	body := fmt.Sprintf(`listen: 127.0.0.1:%d
max_payload: 8MB
operator: %s
system_account: %s
resolver: MEMORY
resolver_preload: {
  %s: %s
  %s: %s
}
`, port, encode(t, oc, op), sysPub, sysPub, encode(t, sc, op), accPub, encode(t, ac, op))
	cf := filepath.Join(n.dir, "nats-operator.conf")
	if err := os.WriteFile(cf, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	bin := testenv.FindBinary(t, "nats-server", "go install github.com/nats-io/nats-server/v2@v2.15.2")
	testenv.Start(t, "nats-server", bin, "-c", cf)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	testenv.WaitTCP(t, addr, 10*time.Second)
	n.URL = "nats://" + addr
	return n
}

// creds writes the .creds file (mode 0600) of a new user named name with
// perms, signed by signer (the account's key, or another one).
func (n *operatorNATS) creds(t *testing.T, name string, perms jwt.Permissions, signer nkeys.KeyPair) string {
	t.Helper()
	u, uPub := mustKey(t, nkeys.CreateUser)
	uc := jwt.NewUserClaims(uPub)
	uc.Name, uc.Permissions = name, perms
	seed, err := u.Seed()
	if err != nil {
		t.Fatal(err)
	}
	b, err := jwt.FormatUserConfig(encode(t, uc, signer), seed)
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(n.dir, name+".creds")
	if err := os.WriteFile(f, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestCredsOperatorMode: a nats-server in operator mode (JWTs generated
// here, memory resolver) and, in one account, a frontend user and a
// worker user carrying the FRONTEND and WORKER permissions of the shipped
// deploy/nats-auth.conf. A real frontend and worker started with
// --nats-creds serve a legacy tools/call without meeting a permissions
// violation. A connection with the worker's .creds file cannot publish a
// request envelope (the server reports the violation, and no worker runs
// it, while the same envelope from the frontend's .creds is run). No
// credentials, or a user JWT signed by an account the operator did not
// issue, are refused.
func TestCredsOperatorMode(t *testing.T) {
	perms := shippedPermissions(t)
	n := startOperatorNATS(t)
	feCreds := n.creds(t, "frontend", perms["FRONTEND"], n.account)
	wCreds := n.creds(t, "worker", perms["WORKER"], n.account)

	_, redisURL := testenv.StartRedisServer(t)
	w := testenv.StartWorker(t, n.URL, "--nats-creds", wCreds)
	fe, url := testenv.StartFrontend(t, n.URL, redisURL, "--nats-creds", feCreds)
	c := testenv.NewClient(t, url)
	c.Initialize(nil)
	if res := c.Call(1, "tools/call", callParams("echo", map[string]any{"text": "with creds"})); !strings.Contains(string(res), "with creds") {
		t.Fatalf("tools/call echo: %s", res)
	}
	for _, p := range []*testenv.Proc{fe, w} {
		if m := violationRE.FindString(p.Log()); m != "" {
			t.Errorf("%s met %q with its role's .creds:\n%s", p.Name, m, p.Log())
		}
	}

	// The worker's .creds cannot publish a request envelope.
	feConn, err := dialWith(t, n.URL, subj.InboxPrefix("fe"), nats.UserCredentials(feCreds))
	if err != nil {
		t.Fatalf("connecting with the frontend's .creds: %v", err)
	}
	evil, err := dialWith(t, n.URL, subj.InboxPrefix("w"), nats.UserCredentials(wCreds))
	if err != nil {
		t.Fatalf("connecting with the worker's .creds: %v", err)
	}
	frames := make(chan *nats.Msg, 16)
	if _, err := feConn.ChanSubscribe(subj.FrontendStreams("forge"), frames); err != nil {
		t.Fatal(err)
	}
	if err := feConn.Flush(); err != nil {
		t.Fatal(err)
	}
	forged := subj.Request(protocol.MethodToolsCall, "echo")
	if err := evil.PublishMsg(&nats.Msg{Subject: forged, Reply: subj.Stream("forge", "evil"), Data: forgedEnvelope(t, "evil", "https://idp.example#admin", "forged")}); err != nil {
		t.Fatal(err)
	}
	evil.violation(t, "worker .creds publishing a request envelope", forged)
	// The frontend's .creds publishes the same envelope and it is run:
	// the refusal is the permissions', not a bad envelope's, and no
	// frame of the forged one (refused before this was sent) comes.
	if err := feConn.PublishMsg(&nats.Msg{Subject: forged, Reply: subj.Stream("forge", "control"), Data: forgedEnvelope(t, "control", "https://idp.example#alice", "genuine")}); err != nil {
		t.Fatal(err)
	}
	guard := time.After(testenv.HangGuard(10 * time.Second))
	for done := false; !done; {
		select {
		case m := <-frames:
			if bus.StreamID(m.Subject) != "control" {
				t.Fatalf("a frame reached %s: the worker .creds' request was run: %q", m.Subject, m.Data)
			}
			if k, p := bus.ParseFrame(m.Data, m.Header.Get("Status")); k == bus.FrameResponse {
				if !strings.Contains(string(p), "genuine") {
					t.Fatalf("control response %s", p)
				}
				done = true
			}
			if done && len(frames) > 0 {
				m := <-frames
				t.Fatalf("a frame reached %s: %q", m.Subject, m.Data)
			}
		case <-guard:
			t.Fatal("the frontend .creds' request got no response")
		}
	}

	// No credentials, or a user of an account the operator never
	// signed, are refused.
	rogue, _ := mustKey(t, nkeys.CreateAccount)
	for _, r := range []struct {
		what string
		auth []nats.Option
	}{
		{"no credentials", nil},
		{"a user of an unknown account", []nats.Option{nats.UserCredentials(n.creds(t, "rogue", perms["FRONTEND"], rogue))}},
	} {
		_, err := dialWith(t, n.URL, "", r.auth...)
		if !errors.Is(err, nats.ErrAuthorization) && (err == nil || !strings.Contains(strings.ToLower(err.Error()), "authorization violation")) {
			t.Errorf("%s: connect: %v, want an authorization violation", r.what, err)
		}
	}
}
