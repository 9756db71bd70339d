package auth

import (
	"net/http"
	"testing"
	"time"
)

// freshness reads the cache headers of a JWKS response as RFC 9111 does,
// without overflowing or going negative on odd values.
func TestFreshness(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		h    http.Header
		want time.Duration
		ok   bool
	}{
		{http.Header{}, 0, false},
		{http.Header{"Cache-Control": {"public"}}, 0, false},
		{http.Header{"Cache-Control": {"max-age=600"}}, 10 * time.Minute, true},
		{http.Header{"Cache-Control": {`max-age="600"`}}, 10 * time.Minute, true},
		{http.Header{"Cache-Control": {"public", "MAX-AGE=60"}}, time.Minute, true},
		{http.Header{"Cache-Control": {"max-age=60, no-store"}}, 0, true},
		{http.Header{"Cache-Control": {"max-age=99999999999999999999"}}, 9223372036 * time.Second, true}, // beyond int64: the greatest
		{http.Header{"Cache-Control": {"max-age=soon"}}, 0, false},
		{http.Header{"Cache-Control": {"max-age=9223372036"}}, 9223372036 * time.Second, true},
		{http.Header{"Cache-Control": {"max-age=9223372037"}}, 9223372036 * time.Second, true}, // saturates
		{http.Header{"Cache-Control": {"max-age=-5"}}, 0, false},
		{http.Header{"Cache-Control": {"max-age=60"}, "Age": {"90"}}, 0, true},
		{http.Header{"Expires": {now.Add(time.Hour).Format(http.TimeFormat)}}, time.Hour, true},
		{http.Header{"Expires": {now.Add(-time.Hour).Format(http.TimeFormat)}}, 0, true},
		{http.Header{"Expires": {"-1"}}, 0, true},
	} {
		got, ok := freshness(tc.h, now)
		if got != tc.want || ok != tc.ok {
			t.Errorf("freshness(%v) = %v, %v; want %v, %v", tc.h, got, ok, tc.want, tc.ok)
		}
	}
}
