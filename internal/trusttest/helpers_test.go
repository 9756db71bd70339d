package trusttest

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/mcpfleet/mcpfleet/internal/testenv"
)

// authNATS is a real nats-server running deploy/nats-auth.conf, with the
// role passwords it reads from its environment.
type authNATS struct {
	Proc                 *testenv.Proc
	URL                  string
	FrontendPW, WorkerPW string
}

func randomSecret(t testing.TB) string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// startAuthNATS runs nats-server with the shipped deploy/nats-auth.conf,
// verbatim: beside it, in a temporary directory, the nats.conf it
// includes listens on a free loopback port (the shipped one is for
// compose).
func startAuthNATS(t testing.TB) *authNATS {
	t.Helper()
	bin := testenv.FindBinary(t, "nats-server", "go install github.com/nats-io/nats-server/v2@v2.15.2")
	shipped, err := os.ReadFile(filepath.Join(testenv.ModuleRoot(t), "deploy", "nats-auth.conf"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	port := testenv.FreePort(t)
	if err := os.WriteFile(filepath.Join(dir, "nats.conf"), []byte(fmt.Sprintf("listen: 127.0.0.1:%d\nmax_payload: 8MB\n", port)), 0o600); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "nats-auth.conf")
	if err := os.WriteFile(conf, shipped, 0o600); err != nil {
		t.Fatal(err)
	}
	n := &authNATS{FrontendPW: randomSecret(t), WorkerPW: randomSecret(t)}
	env := append(os.Environ(), "NATS_FRONTEND_PASSWORD="+n.FrontendPW, "NATS_WORKER_PASSWORD="+n.WorkerPW)
	n.Proc = testenv.StartEnv(t, "nats-server", bin, env, "-c", conf)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	testenv.WaitTCP(t, addr, 10*time.Second)
	n.URL = "nats://" + addr
	return n
}

// frontendArgs and workerArgs are the credential flags of each role.
func (n *authNATS) frontendArgs() []string {
	return []string{"--nats-user", "frontend", "--nats-password", n.FrontendPW}
}

func (n *authNATS) workerArgs() []string {
	return []string{"--nats-user", "worker", "--nats-password", n.WorkerPW}
}

// conn is a raw NATS connection whose asynchronous errors (the server's
// permissions violations) arrive on errs.
type conn struct {
	*nats.Conn
	errs chan error
}

// dial connects as user (empty: anonymous) with the role's inbox prefix
// (the one the binaries use, see bus.Subjects.InboxPrefix).
func dial(t testing.TB, url, user, pw, inbox string) (*conn, error) {
	t.Helper()
	if user == "" {
		return dialWith(t, url, inbox)
	}
	return dialWith(t, url, inbox, nats.UserInfo(user, pw))
}

// dialWith connects with the credential options auth (none: anonymous)
// and the role's inbox prefix (empty: the default).
func dialWith(t testing.TB, url, inbox string, auth ...nats.Option) (*conn, error) {
	t.Helper()
	c := &conn{errs: make(chan error, 64)}
	opts := []nats.Option{
		nats.Timeout(testenv.HangGuard(5 * time.Second)),
		nats.MaxReconnects(0),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			select {
			case c.errs <- err:
			default:
			}
		}),
	}
	opts = append(opts, auth...)
	if inbox != "" {
		opts = append(opts, nats.CustomInboxPrefix(inbox))
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return nil, err
	}
	t.Cleanup(nc.Close)
	c.Conn = nc
	return c, nil
}

func mustDial(t testing.TB, url, user, pw, inbox string) *conn {
	t.Helper()
	c, err := dial(t, url, user, pw, inbox)
	if err != nil {
		t.Fatalf("connecting as %q: %v", user, err)
	}
	return c
}

// violation waits for the server's permissions violation naming
// subject; timeout is a hang guard.
func (c *conn) violation(t testing.TB, what, subject string) {
	t.Helper()
	re := regexp.MustCompile(`(?i)permissions violation for (publish|subscription) to "?` + regexp.QuoteMeta(subject) + `"?`)
	deadline := time.After(testenv.HangGuard(10 * time.Second))
	for {
		select {
		case err := <-c.errs:
			if re.MatchString(err.Error()) {
				return
			}
			t.Logf("%s: other async error: %v", what, err)
		case <-deadline:
			t.Fatalf("%s: the server reported no permissions violation for %s", what, subject)
		}
	}
}

// callParams are tools/call params.
func callParams(name string, args map[string]any) map[string]any {
	return map[string]any{"name": name, "arguments": args}
}
