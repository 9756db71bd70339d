package trusttest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nkeys"

	"github.com/mcpfleet/mcpfleet/internal/testenv"
)

// writePEM writes blocks of kind to a file in dir and returns its path.
func writePEM(t *testing.T, dir, name, kind string, der []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// pki is a test CA with a server certificate for 127.0.0.1 and a client
// certificate, as PEM files.
type pki struct{ CA, ServerCert, ServerKey, ClientCert, ClientKey string }

func newPKI(t *testing.T) pki {
	t.Helper()
	dir := t.TempDir()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "trusttest CA"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	leaf := func(name string, serial int64, usage x509.ExtKeyUsage) (string, string) {
		k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name}, NotBefore: time.Now().Add(-time.Hour),
			NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
			IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		kd, _ := x509.MarshalECPrivateKey(k)
		return writePEM(t, dir, name+".pem", "CERTIFICATE", der), writePEM(t, dir, name+"-key.pem", "EC PRIVATE KEY", kd)
	}
	p := pki{CA: writePEM(t, dir, "ca.pem", "CERTIFICATE", caDER)}
	p.ServerCert, p.ServerKey = leaf("server", 2, x509.ExtKeyUsageServerAuth)
	p.ClientCert, p.ClientKey = leaf("client", 3, x509.ExtKeyUsageClientAuth)
	return p
}

// TestNKeyAndMutualTLS: a nats-server that demands TLS with client
// certificates and knows only NKey users; a frontend and a worker with
// --nats-nkey and --nats-tls-ca/--nats-tls-cert/--nats-tls-key serve a
// tools/call. A worker without its client certificate is refused.
func TestNKeyAndMutualTLS(t *testing.T) {
	p := newPKI(t)
	dir := t.TempDir()
	seedFile := func(name string) (string, string) {
		kp, err := nkeys.CreateUser()
		if err != nil {
			t.Fatal(err)
		}
		seed, _ := kp.Seed()
		pub, _ := kp.PublicKey()
		f := filepath.Join(dir, name+".nk")
		if err := os.WriteFile(f, seed, 0o600); err != nil {
			t.Fatal(err)
		}
		return f, pub
	}
	feSeed, fePub := seedFile("frontend")
	wSeed, wPub := seedFile("worker")
	port := testenv.FreePort(t)
	conf := filepath.Join(dir, "nats.conf")
	body := fmt.Sprintf(`listen: 127.0.0.1:%d
max_payload: 8MB
tls { cert_file: %q, key_file: %q, ca_file: %q, verify: true, timeout: 5 }
authorization { users: [ {nkey: %s}, {nkey: %s} ] }
`, port, p.ServerCert, p.ServerKey, p.CA, fePub, wPub)
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	bin := testenv.FindBinary(t, "nats-server", "go install github.com/nats-io/nats-server/v2@v2.15.2")
	testenv.Start(t, "nats-server", bin, "-c", conf)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	testenv.WaitTCP(t, addr, 10*time.Second)
	natsURL := "tls://" + addr
	tlsArgs := []string{"--nats-tls-ca", p.CA, "--nats-tls-cert", p.ClientCert, "--nats-tls-key", p.ClientKey}

	_, redisURL := testenv.StartRedisServer(t)
	testenv.StartWorker(t, natsURL, append([]string{"--nats-nkey", wSeed}, tlsArgs...)...)
	_, url := testenv.StartFrontend(t, natsURL, redisURL, append([]string{"--nats-nkey", feSeed}, tlsArgs...)...)
	c := testenv.NewClient(t, url)
	c.Initialize(nil)
	if res := c.Call(1, "tools/call", callParams("echo", map[string]any{"text": "over mTLS"})); !strings.Contains(string(res), "over mTLS") {
		t.Fatalf("tools/call: %s", res)
	}

	// Without the client certificate the server refuses the worker.
	w := testenv.Start(t, "worker-no-cert", filepath.Join(testenv.Binaries(t), "worker"), "--nats-url", natsURL, "--state-key", testenv.StateKey,
		"--nats-nkey", wSeed, "--nats-tls-ca", p.CA, "--connect-timeout", "0", "--log-format", "text")
	w.ExpectExit(1)
	select {
	case <-w.Done():
	case <-time.After(testenv.HangGuard(20 * time.Second)):
		t.Fatal("the worker without a client certificate did not exit")
	}
	if !strings.Contains(strings.ToLower(w.Log()), "certificate") && !strings.Contains(strings.ToLower(w.Log()), "tls") {
		t.Errorf("worker without a client certificate: %s", w.Log())
	}
}
