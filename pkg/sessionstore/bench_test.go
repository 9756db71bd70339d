package sessionstore

import (
	"context"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testutil"
)

// BenchmarkGet measures the hot path of every legacy request.
func BenchmarkGet(b *testing.B) {
	b.Run("memory", func(b *testing.B) {
		m, err := NewMemory(nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = m.Close(context.Background()) })
		benchmarkGet(b, m)
	})
	b.Run("redis", func(b *testing.B) {
		benchmarkGet(b, openRedisForTest(b, testutil.StartRedis(b), Options{}))
	})
}

func benchmarkGet(b *testing.B, st Store) {
	s := fullSession()
	mustCreate(b, st, s)
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := st.Get(ctx, s.ID); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBegin measures the hot path of a legacy request with an id:
// Begin when it arrives, End when it is answered.
func BenchmarkBegin(b *testing.B) {
	b.Run("memory", func(b *testing.B) {
		m, err := NewMemory(nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = m.Close(context.Background()) })
		benchmarkBegin(b, m)
	})
	b.Run("redis", func(b *testing.B) {
		benchmarkBegin(b, openRedisForTest(b, testutil.StartRedis(b), Options{}))
	})
}

func benchmarkBegin(b *testing.B, st Store) {
	s := fullSession()
	mustCreate(b, st, s)
	ctx := b.Context()
	const rid, token = `"req-42"`, "0123456789abcdef"
	b.ReportAllocs()
	for b.Loop() {
		if _, err := st.Begin(ctx, s.ID, rid, token, time.Minute); err != nil {
			b.Fatal(err)
		}
		if err := st.End(ctx, s.ID, rid, token); err != nil {
			b.Fatal(err)
		}
	}
}
