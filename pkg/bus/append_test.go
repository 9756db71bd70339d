package bus

import (
	"bytes"
	"errors"
	"testing"

	"github.com/nats-io/nats.go"
)

func TestAppendEnvelopeRoundTrip(t *testing.T) {
	frame := AppendFrame(nil, FrameNotification, []byte(`{"jsonrpc":"2.0","method":"x"}`))
	h := &AppendHeader{Session: "s1", Frontend: "fe.1", Stream: "abc", Seq: 7}
	data, err := EncodeAppend(h, frame)
	if err != nil {
		t.Fatal(err)
	}
	got, fr, err := DecodeAppend(data)
	if err != nil {
		t.Fatal(err)
	}
	if *got != *h || !bytes.Equal(fr, frame) {
		t.Fatalf("round trip: %+v %q", got, fr)
	}
}

func TestDecodeAppendMalformed(t *testing.T) {
	for _, in := range []string{
		"", "no newline", "{\n", `{"s":"x","fe":"f","st":"s"}` + "\nN{}", // no seq
		`{"fe":"f","st":"s","q":1}` + "\nN{}", `{"s":"x","st":"s","q":1}` + "\nN{}", `{"s":"x","fe":"f","q":1}` + "\nN{}",
		`{"s":"x","fe":"f","st":"s","q":-1}` + "\nN{}",
	} {
		if _, _, err := DecodeAppend([]byte(in)); !errors.Is(err, ErrBadEnvelope) {
			t.Errorf("DecodeAppend(%q) = %v, want ErrBadEnvelope", in, err)
		}
	}
}

func TestFrameSeq(t *testing.T) {
	m := &nats.Msg{}
	if FrameSeq(m) != 0 {
		t.Fatal("a frame without the header has no seq")
	}
	SetFrameSeq(m, 42)
	if got := FrameSeq(m); got != 42 {
		t.Fatalf("FrameSeq = %d", got)
	}
	m.Header.Set(SeqHeader, "x")
	if FrameSeq(m) != 0 {
		t.Fatal("a malformed seq reads as none")
	}
}

func TestAppendSubjects(t *testing.T) {
	s := Subjects{Prefix: "p"}
	if got := s.Append("fe.1", "st"); got != "p.append.fe~2E1.st" {
		t.Fatalf("Append = %q", got)
	}
	if s.AllAppends() != "p.append.>" {
		t.Fatal(s.AllAppends())
	}
}
