package trusttest

import (
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/mcpfleet/mcpfleet/internal/testenv"
	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

var subj = bus.Subjects{} // the prefix deploy/nats-auth.conf is written for

// forgedEnvelope is a legacy tools/call echo envelope claiming principal,
// answered on frontend "forge"'s stream.
func forgedEnvelope(t *testing.T, stream, principal, text string) []byte {
	t.Helper()
	msg := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + text + `"}}}`
	b, err := bus.EncodeRequest(&bus.RequestHeader{
		Era: protocol.EraLegacy, Frontend: "forge", Stream: stream, Principal: principal,
		Session: &bus.SessionInfo{ID: "forged-session", ProtocolVersion: "2025-11-25"},
	}, []byte(msg))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestWorkerRoleCannotRunRequests: a connection with the worker role's
// credentials publishes a request envelope naming a principal of its
// choosing; the server refuses the publish (a permissions violation), so
// no worker runs it. The same envelope from a frontend-role connection
// is run: the refusal is the permissions', not a bad envelope's. The
// worker role can neither send the other messages a principal rides on
// (clients' answers, task control) nor read frontends' streams, session
// control or replies.
func TestWorkerRoleCannotRunRequests(t *testing.T) {
	n := startAuthNATS(t)
	testenv.StartWorker(t, n.URL, n.workerArgs()...)
	fe := mustDial(t, n.URL, "frontend", n.FrontendPW, subj.InboxPrefix("fe"))
	evil := mustDial(t, n.URL, "worker", n.WorkerPW, subj.InboxPrefix("w"))

	frames := make(chan *nats.Msg, 16)
	if _, err := fe.ChanSubscribe(subj.FrontendStreams("forge"), frames); err != nil {
		t.Fatal(err)
	}
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}

	// The worker role's forgeries: each publish is refused by the server.
	for _, f := range []struct{ what, subject string }{
		{"a request envelope", subj.Request(protocol.MethodToolsCall, "echo")},
		{"an unnamed request envelope", subj.Request("ping", "")},
		{"a pool request envelope", subj.PoolRequest("default", protocol.MethodToolsCall)},
		{"a client's answer", subj.WorkerInbox("some-worker")},
		{"task control", subj.TaskControl("some-task")},
		{"a cancellation", subj.Cancel()},
		{"session control", subj.SessionControl("forged-session")},
	} {
		if err := evil.PublishMsg(&nats.Msg{Subject: f.subject, Reply: subj.Stream("forge", "evil"), Data: forgedEnvelope(t, "evil", "https://idp.example#admin", "forged")}); err != nil {
			t.Fatal(err)
		}
		evil.violation(t, "worker role publishing "+f.what, f.subject)
	}
	// Nor can it read what frontends are sent.
	for _, s := range []string{subj.FrontendStreams("forge"), subj.SessionControl("forged-session"), subj.FrontendControl("forge"), subj.Live("s", "t"), "_INBOX.mcp.fe.x"} {
		if _, err := evil.SubscribeSync(s); err != nil {
			t.Fatal(err)
		}
		evil.violation(t, "worker role subscribing", s)
	}

	// The frontend role's identical envelope runs: the path works.
	if err := fe.PublishMsg(&nats.Msg{Subject: subj.Request(protocol.MethodToolsCall, "echo"), Reply: subj.Stream("forge", "control"), Data: forgedEnvelope(t, "control", "https://idp.example#alice", "genuine")}); err != nil {
		t.Fatal(err)
	}
	guard := time.After(testenv.HangGuard(10 * time.Second))
	for {
		select {
		case m := <-frames:
			if bus.StreamID(m.Subject) != "control" {
				t.Fatalf("a frame reached %s: a worker-role request was run: %q", m.Subject, m.Data)
			}
			if k, p := bus.ParseFrame(m.Data, m.Header.Get("Status")); k == bus.FrameResponse {
				if !strings.Contains(string(p), "genuine") {
					t.Fatalf("control response %s", p)
				}
				if len(frames) > 0 {
					m := <-frames
					t.Fatalf("a frame reached %s: %q", m.Subject, m.Data)
				}
				return
			}
		case <-guard:
			t.Fatal("the frontend role's request got no response")
		}
	}
}

// TestAnonymousRefused: without credentials, or with a wrong password,
// the server refuses the connection; a frontend given a wrong password
// exits with an error that does not quote it.
func TestAnonymousRefused(t *testing.T) {
	n := startAuthNATS(t)
	for _, c := range []struct{ what, user, pw string }{
		{"anonymous", "", ""},
		{"wrong password", "frontend", "not-the-password"},
		{"another role's password", "frontend", n.WorkerPW},
		{"unknown user", "root", n.FrontendPW},
	} {
		_, err := dial(t, n.URL, c.user, c.pw, "")
		if !errors.Is(err, nats.ErrAuthorization) && (err == nil || !strings.Contains(strings.ToLower(err.Error()), "authorization violation")) {
			t.Errorf("%s: connect: %v, want an authorization violation", c.what, err)
		}
	}

	const secret = "wrong-secret-f00d"
	cmd := exec.Command(filepath.Join(testenv.Binaries(t), "frontend"), "--listen", "127.0.0.1:0", "--nats-url", n.URL,
		"--nats-user", "frontend", "--nats-password", secret, "--redis-url", "redis://127.0.0.1:1/0", "--connect-timeout", "0")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("frontend with a wrong password: %v, want exit status 1\n%s", err, out)
	}
	if !violationRE.Match(out) {
		t.Errorf("frontend with a wrong password does not say why:\n%s", out)
	}
	if strings.Contains(string(out), secret) {
		t.Errorf("the frontend printed the password:\n%s", out)
	}
}
