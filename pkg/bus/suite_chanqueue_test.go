package bus_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/mcpfleet/mcpfleet/pkg/bus"
)

// suiteChanQueue: ChanQueueSubscribe spreads a subject's messages over
// the members of a queue group, each message to one member's channel;
// several subscriptions may share one channel (a worker's request
// subjects); once a subscription is drained, nothing more of its subject
// reaches the channel, while the others sharing it go on.
func suiteChanQueue(t *testing.T, conn func(string) bus.Conn) {
	const n = 200
	pub := conn("pub")
	a, b := conn("a"), conn("b")
	chA, chB := make(chan *nats.Msg, 2*n+8), make(chan *nats.Msg, 2*n+8)
	var subsA []bus.Subscription
	for _, subj := range []string{"cq.one", "cq.two"} {
		s, err := a.ChanQueueSubscribe(subj, "g", chA)
		if err != nil {
			t.Fatalf("ChanQueueSubscribe(%s): %v", subj, err)
		}
		subsA = append(subsA, s)
		if _, err := b.ChanQueueSubscribe(subj, "g", chB); err != nil {
			t.Fatalf("ChanQueueSubscribe(%s): %v", subj, err)
		}
	}
	if _, err := a.ChanQueueSubscribe("cq.one", "g", nil); err == nil {
		t.Error("ChanQueueSubscribe with a nil channel: no error")
	}
	flushConn(t, a, b)
	for i := range n {
		publish(t, pub, "cq.one", "1:"+strconv.Itoa(i))
		publish(t, pub, "cq.two", "2:"+strconv.Itoa(i))
	}
	flushConn(t, pub)
	seen := map[string]int{}
	got := [2]int{}
	for len(seen) < 2*n {
		select {
		case m := <-chA:
			seen[string(m.Data)]++
			got[0]++
		case m := <-chB:
			seen[string(m.Data)]++
			got[1]++
		case <-time.After(deadline):
			t.Fatalf("%d of %d messages arrived", len(seen), 2*n)
		}
	}
	for k, c := range seen {
		if c != 1 {
			t.Errorf("message %s delivered %d times in the group, want once", k, c)
		}
	}
	if got[0] == 0 || got[1] == 0 {
		t.Errorf("members got %v of %d messages: not spread", got, 2*n)
	}

	// Drain a's subscription to cq.one: from then on a gets only cq.two.
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	if err := subsA[0].DrainWait(ctx); err != nil {
		t.Fatalf("DrainWait: %v", err)
	}
	for i := range n {
		publish(t, pub, "cq.one", "late1:"+strconv.Itoa(i))
		publish(t, pub, "cq.two", "late2:"+strconv.Itoa(i))
	}
	publish(t, pub, "cq.one", "last")
	flushConn(t, pub)
	lastSeen := false
	for !lastSeen {
		select {
		case m := <-chA:
			if !strings.HasPrefix(string(m.Data), "late2:") {
				t.Fatalf("a's channel got %q after its cq.one subscription was drained", m.Data)
			}
		case m := <-chB:
			lastSeen = string(m.Data) == "last"
		case <-time.After(deadline):
			t.Fatal("the last message never reached b")
		}
	}
	for len(chA) > 0 {
		if m := <-chA; !strings.HasPrefix(string(m.Data), "late2:") {
			t.Fatalf("a's channel got %q after its cq.one subscription was drained", m.Data)
		}
	}
}
