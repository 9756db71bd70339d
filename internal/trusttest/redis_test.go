package trusttest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testenv"
)

// TestRedisACLUserOverTLS: a real redis-server that listens only on TLS
// and whose default user is off; a frontend with
// rediss://alice:PASSWORD@host (an ACL user, the server's certificate
// signed by a CA the process trusts through SSL_CERT_FILE) stores a
// session there and serves it. A wrong password makes it exit with an
// error that does not quote the password.
func TestRedisACLUserOverTLS(t *testing.T) {
	p := newPKI(t)
	pw := randomSecret(t)
	port := testenv.FreePort(t)
	bin := testenv.FindBinary(t, "redis-server", "apt-get install redis-server")
	testenv.Start(t, "redis-server", bin, "--bind", "127.0.0.1", "--port", "0", "--tls-port", fmt.Sprint(port),
		"--tls-cert-file", p.ServerCert, "--tls-key-file", p.ServerKey, "--tls-ca-cert-file", p.CA, "--tls-auth-clients", "no",
		"--save", "", "--appendonly", "no", "--dir", t.TempDir(),
		"--user", "default", "off", "--user", "alice", "on", ">"+pw, "~*", "&*", "+@all")
	testenv.WaitTCP(t, fmt.Sprintf("127.0.0.1:%d", port), 10*time.Second)
	_, natsURL := testenv.StartNATSServer(t)
	testenv.StartWorker(t, natsURL)

	env := append(os.Environ(), "SSL_CERT_FILE="+p.CA)
	feBin := filepath.Join(testenv.Binaries(t), "frontend")
	redisURL := fmt.Sprintf("rediss://alice:%s@127.0.0.1:%d/0", pw, port)
	fe := testenv.StartEnv(t, "frontend", feBin, env, "--listen", "127.0.0.1:0", "--nats-url", natsURL, "--redis-url", redisURL,
		"--log-format", "text", "--drain-delay", "0")
	url := fe.WaitLog(t, testenv.ServingRE, 20*time.Second)
	c := testenv.NewClient(t, url)
	c.Initialize(nil)
	if res := c.Call(1, "tools/call", callParams("echo", map[string]any{"text": "redis acl"})); !strings.Contains(string(res), "redis acl") {
		t.Fatalf("tools/call: %s", res)
	}
	if strings.Contains(fe.Log(), pw) {
		t.Errorf("the frontend logged the Redis password:\n%s", fe.Log())
	}

	const wrong = "wrong-redis-secret-beef"
	cmd := exec.Command(feBin, "--listen", "127.0.0.1:0", "--nats-url", natsURL, "--connect-timeout", "0",
		"--redis-url", fmt.Sprintf("rediss://alice:%s@127.0.0.1:%d/0", wrong, port))
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(out), "WRONGPASS") {
		t.Fatalf("frontend with a wrong Redis password: %v, want exit status 1 naming WRONGPASS\n%s", err, out)
	}
	if strings.Contains(string(out), wrong) {
		t.Errorf("the frontend printed the Redis password:\n%s", out)
	}
}
