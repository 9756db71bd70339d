package main

import (
	"fmt"
	"strings"
	"testing"
)

// A fixture in perf script's layout (-F comm,ip,sym of a perf record -g
// profile): the name and a space, then a frame a line, innermost first,
// then a blank line.
const fixture = "frontend \n" +
	"\t           293bf runtime.mallocgc\n" +
	"\t         157db5b github.com/mcpfleet/mcpfleet/pkg/frontend.(*Frontend).serveMCP\n" +
	"\t          4c1d2a github.com/gin-gonic/gin.(*Engine).ServeHTTP\n" +
	"\t          4a0001 net/http.(*conn).serve\n" +
	"\t          4a0002 runtime.goexit.abi0\n" +
	"\n" +
	"frontend \n" +
	"\tffffffff81000001 tcp_sendmsg\n" +
	"\tffffffff81000002 do_syscall_64\n" +
	"\t          4a0003 syscall.write\n" +
	"\t          4a0004 net/http.(*response).finishRequest\n" +
	"\t          4a0001 net/http.(*conn).serve\n" +
	"\n" +
	"frontend \n" +
	"\t          4a0005 internal/poll.(*FD).Read\n" +
	"\t          4a0006 bufio.(*Reader).Peek\n" +
	"\t          4a0001 net/http.(*conn).serve\n" +
	"\n" +
	"frontend \n" +
	"\t          4a0007 runtime.memmove\n" +
	"\t          4a0008 [unknown]\n" +
	"\n" +
	"frontend 4a0009 runtime.nanotime\n" +
	"\n" +
	"Web Content \n" +
	"\t          4c0001 runtime.sysmon\n" +
	"\n" +
	"worker \n" +
	"\t          4b0001 runtime.usleep.abi0\n" +
	"\t          4b0002 runtime.sysmon\n" +
	"\n"

func TestRunSortsSamplesIntoBuckets(t *testing.T) {
	var out strings.Builder
	if err := run(strings.NewReader(fixture), &out, []string{"frontend", "worker", "Web Content", "nats-server"}, 3); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"frontend: 4 samples\n",
		"  (1 samples without a call chain left out)\n",
		"   25.0%  (in system calls  0.0%)  handler (gin and mcpfleet)\n",
		"   25.0%  (in system calls 25.0%)  http: response flush and write\n",
		"   25.0%  (in system calls  0.0%)  http: wait for the next request\n",
		"   25.0%  (in system calls  0.0%)  other\n",
		"  in system calls, all buckets: 25.0%\n",
		"        other, innermost  25.0%  runtime.memmove\n",
		"worker: 1 samples\n",
		"  100.0%  (in system calls  0.0%)  go: sysmon (runtime monitor thread)\n",
		"Web Content: 1 samples\n",
		"nats-server: no samples\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if i, j := strings.Index(got, "frontend:"), strings.Index(got, "worker:"); i < 0 || j < 0 || i > j {
		t.Errorf("processes not in the order asked:\n%s", got)
	}
}

func TestRunAllProcessesByName(t *testing.T) {
	var out strings.Builder
	if err := run(strings.NewReader(fixture), &out, nil, 0); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	if !strings.HasPrefix(got, "Web Content: 1 samples") || !strings.Contains(got, "frontend: 4 samples") || !strings.Contains(got, "worker: 1 samples") {
		t.Fatalf("output:\n%s", got)
	}
	if strings.Contains(got, "innermost") {
		t.Fatalf("-other 0 listed frames:\n%s", got)
	}
}

func TestHeaderComm(t *testing.T) {
	for line, want := range map[string]string{
		"frontend ":                     "frontend",
		"Web Content ":                  "Web Content",
		"frontend 4a0009 runtime.x":     "frontend",
		"Web Content 4a0009 runtime.x":  "Web Content",
		"frontend":                      "frontend",
		"nats-server 4a0009 [unknown]":  "nats-server",
		"redis-server ffff81 pvm_irq_x": "redis-server",
	} {
		if got := headerComm(line); got != want {
			t.Errorf("headerComm(%q) = %q, want %q", line, got, want)
		}
	}
}

// Each rule, with the frames of a real stack that should land in it (the
// innermost first), and frames that an earlier rule must not take.
func TestBucketOf(t *testing.T) {
	cases := []struct {
		want   string
		frames []string
	}{
		{"go: sysmon (runtime monitor thread)", []string{"runtime.usleep.abi0", "runtime.sysmon", "runtime.mstart1"}},
		{"go: garbage collector", []string{"runtime.scanobject", "runtime.gcDrain", "runtime.gcBgMarkWorker"}},
		{"go: garbage collector", []string{"runtime.sweepone", "runtime.bgsweep"}},
		{"go: garbage collector", []string{"runtime.scavengeOne", "runtime.bgscavenge"}},
		{"nats client: read loop", []string{"do_syscall_64", "syscall.read", "github.com/nats-io/nats%2ego.(*Conn).readLoop"}},
		{"nats client: flusher", []string{"github.com/mcpfleet/mcpfleet/pkg/bus.(*batchConn).Write", "github.com/nats-io/nats%2ego.(*Conn).flusher"}},
		// A worker's request handling on the subscription's goroutine is
		// the worker's.
		{"worker: request decode, hand-off and handler", []string{"github.com/mcpfleet/mcpfleet/pkg/bus.DecodeRequest", "github.com/mcpfleet/mcpfleet/pkg/worker.(*Worker).onRequest", "github.com/nats-io/nats%2ego.(*Conn).waitForMsgs"}},
		{"worker: request decode, hand-off and handler", []string{"github.com/mcpfleet/mcpfleet/pkg/worker.(*pool).run"}},
		{"frontend: reply routing (on the subscription's goroutine)", []string{"github.com/mcpfleet/mcpfleet/pkg/frontend/stream.(*Streams).OnFrame", "github.com/nats-io/nats%2ego.(*Conn).waitForMsgs"}},
		{"nats client: subscription delivery", []string{"sync.(*Cond).Wait", "github.com/nats-io/nats%2ego.(*Conn).waitForMsgs"}},
		{"bus: batched socket writes", []string{"syscall.write", "github.com/mcpfleet/mcpfleet/pkg/bus.(*batchConn).writeLoop"}},
		{"redis client", []string{"github.com/redis/go-redis/v9.(*baseClient).pipelineProcessCmds", "github.com/mcpfleet/mcpfleet/pkg/frontend.(*Frontend).serveMCP", "github.com/gin-gonic/gin.(*Engine).ServeHTTP"}},
		{"http: background read", []string{"syscall.read", "net/http.(*connReader).backgroundRead"}},
		{"http: response flush and write", []string{"syscall.write", "net/http.(*response).finishRequest", "net/http.(*conn).serve"}},
		{"handler (gin and mcpfleet)", []string{"github.com/gin-gonic/gin.(*Engine).ServeHTTP", "net/http.serverHandler.ServeHTTP", "net/http.(*conn).serve"}},
		{"http: request read and parse", []string{"net/textproto.readMIMEHeader", "net/http.(*conn).readRequest", "net/http.(*conn).serve"}},
		{"http: wait for the next request", []string{"bufio.(*Reader).Peek", "net/http.(*conn).serve"}},
		{"http: connection loop, other", []string{"net.(*conn).SetReadDeadline", "net/http.(*conn).serve"}},
		{"nats-server: client read loop", []string{"github.com/nats-io/nats-server/v2/server.(*client).readLoop"}},
		{"nats-server: client write loop", []string{"github.com/nats-io/nats-server/v2/server.(*client).writeLoop"}},
		{"go: scheduler", []string{"runtime.findRunnable", "runtime.schedule"}},
		{"go: scheduler", []string{"runtime.park_m", "runtime.mcall"}},
		{"", []string{"runtime.memmove", "[unknown]"}},
	}
	seen := map[string]bool{}
	for i, c := range cases {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			if got := bucketOf(sample{comm: "p", frames: c.frames}); got != c.want {
				t.Fatalf("bucketOf(%q) = %q, want %q", c.frames, got, c.want)
			}
		})
		seen[c.want] = true
	}
	for _, r := range rules {
		if !seen[r.name] {
			t.Errorf("no case for the rule %q", r.name)
		}
	}
}

func TestInKernel(t *testing.T) {
	if !inKernel("do_syscall_64") || !inKernel("entry_SYSCALL_64_after_hwframe") || inKernel("syscall.write") {
		t.Fatal("inKernel")
	}
}
