package main

import (
	"strings"
	"testing"
)

// A fixture in perf script's layout: five samples of two processes.
const fixture = `frontend 
	           293bf runtime.mallocgc
	         157db5b github.com/mcpfleet/mcpfleet/pkg/frontend.(*Frontend).serveMCP
	          4c1d2a github.com/gin-gonic/gin.(*Engine).ServeHTTP
	          4a0001 net/http.(*conn).serve
	          4a0002 runtime.goexit.abi0

frontend 
	ffffffff81000001 [k] tcp_sendmsg
	ffffffff81000002 [k] do_syscall_64
	          4a0003 syscall.write
	          4a0004 net/http.(*response).finishRequest
	          4a0001 net/http.(*conn).serve

frontend 
	          4a0005 internal/poll.(*FD).Read
	          4a0006 bufio.(*Reader).Peek
	          4a0001 net/http.(*conn).serve

frontend 
	          4a0007 runtime.memmove
	          4a0008 somewhere.unknown

worker 
	          4b0001 runtime.usleep.abi0
	          4b0002 runtime.sysmon

`

func TestRunSortsSamplesIntoBuckets(t *testing.T) {
	var out strings.Builder
	if err := run(strings.NewReader(fixture), &out, []string{"frontend", "worker", "nats-server"}, 3); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"frontend: 4 samples\n",
		"   25.0%  (in system calls  0.0%)  handler (gin and mcpfleet)\n",
		"   25.0%  (in system calls 25.0%)  http: response flush and write\n",
		"   25.0%  (in system calls  0.0%)  http: wait for the next request\n",
		"   25.0%  (in system calls  0.0%)  other\n",
		"  in system calls, all buckets: 25.0%\n",
		"        other, innermost  25.0%  runtime.memmove\n",
		"worker: 1 samples\n",
		"  100.0%  (in system calls  0.0%)  go: sysmon (runtime monitor thread)\n",
		"nats-server: no samples\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Index(got, "frontend:") > strings.Index(got, "worker:") {
		t.Errorf("processes not in the order asked:\n%s", got)
	}
}

func TestBucketOfNeedsEveryPattern(t *testing.T) {
	// The connection loop without Peek is not the idle wait.
	s := sample{comm: "frontend", frames: []string{"x", "net/http.(*conn).serve"}}
	if got := bucketOf(s); got != "http: connection loop, other" {
		t.Fatalf("bucketOf = %q", got)
	}
	s.frames = append([]string{"bufio.(*Reader).Peek"}, s.frames...)
	if got := bucketOf(s); got != "http: wait for the next request" {
		t.Fatalf("bucketOf = %q", got)
	}
}

func TestRunAllProcessesByName(t *testing.T) {
	var out strings.Builder
	if err := run(strings.NewReader(fixture), &out, nil, 0); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	if !strings.HasPrefix(got, "frontend: 4 samples") || !strings.Contains(got, "worker: 1 samples") {
		t.Fatalf("output:\n%s", got)
	}
	if strings.Contains(got, "innermost") {
		t.Fatalf("-other 0 listed frames:\n%s", got)
	}
}
