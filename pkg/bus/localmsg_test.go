package bus

import (
	"bytes"
	"testing"

	"github.com/nats-io/nats.go"
)

// TestNewMsg: a delivered message has its own copy of the data, of every
// size (in one allocation with the message up to 408 bytes), with no room
// past its end, and its own header.
func TestNewMsg(t *testing.T) {
	for _, n := range []int{0, 1, 104, 105, 184, 185, 280, 281, 408, 409, 5000} {
		data := bytes.Repeat([]byte{'x'}, n)
		hdr := nats.Header{"K": []string{"v"}}
		m := newMsg("s", "r", hdr, data)
		if m.Subject != "s" || m.Reply != "r" || !bytes.Equal(m.Data, data) || m.Data == nil {
			t.Fatalf("%d bytes: got %q %q %d bytes", n, m.Subject, m.Reply, len(m.Data))
		}
		if cap(m.Data) != n {
			t.Errorf("%d bytes: capacity %d", n, cap(m.Data))
		}
		if n > 0 {
			data[0] = 'y'
			if m.Data[0] != 'x' {
				t.Errorf("%d bytes: the message aliases the publisher's data", n)
			}
		}
		hdr["K"][0] = "changed"
		if m.Header.Get("K") != "v" {
			t.Errorf("%d bytes: the message aliases the publisher's header", n)
		}
		other := newMsg("s", "", nil, data)
		_ = append(m.Data, 'z')
		if n > 0 && !bytes.Equal(other.Data, data) {
			t.Errorf("%d bytes: appending to one message changed another", n)
		}
	}
	if m := newMsg("s", "", nil, nil); m.Data != nil {
		t.Errorf("no data: got %q", m.Data)
	}
	if got := testing.AllocsPerRun(100, func() { _ = newMsg("s", "r", nil, make([]byte, 100)[:100:100]) }); got > 1 {
		t.Errorf("a 100-byte message: %v allocations, want the message and its data in one", got)
	}
}
