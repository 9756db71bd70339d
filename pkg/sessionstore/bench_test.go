package sessionstore

import (
	"context"
	"testing"

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
