package stream

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// BenchmarkSSEWrite measures writing one progress notification as an SSE
// event with an event id, flushed, to a real client over loopback HTTP.
func BenchmarkSSEWrite(b *testing.B) {
	msg := []byte(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t-1","progress":3,"total":10,"message":"working"}}`)
	start := make(chan struct{})
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(done)
		s := StartSSE(w, 5*time.Second, nil)
		<-start
		for i := 0; i < b.N; i++ {
			if err := s.Event("p1:1:42", msg); err != nil {
				b.Error(err)
				return
			}
		}
	}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	b.ReportAllocs()
	b.SetBytes(int64(len(FormatEvent("p1:1:42", msg))))
	b.ResetTimer()
	close(start)
	n, err := io.Copy(io.Discard, resp.Body)
	<-done
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	if want := int64(b.N) * int64(len(FormatEvent("p1:1:42", msg))); n != want {
		b.Fatalf("read %d bytes, want %d", n, want)
	}
}

// BenchmarkAppendEvent measures formatting one SSE event (no I/O).
func BenchmarkAppendEvent(b *testing.B) {
	msg := bytes.Repeat([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`), 4)
	buf := make([]byte, 0, 1024)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		buf = AppendEvent(buf[:0], "s1:7", msg)
	}
}
