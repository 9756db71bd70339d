package sessionstore

import (
	"crypto/sha256"
	"encoding/base64"
	"slices"
	"testing"
)

// TestSessionKeys checks the keys built in one allocation against the
// names the key layout gives them, built one by one.
func TestSessionKeys(t *testing.T) {
	if n := base64.RawURLEncoding.EncodedLen(sha256.Size); n != digestLen {
		t.Fatalf("digestLen is %d, a digest %d bytes", digestLen, n)
	}
	r := &Redis{prefix: "mcp-test"}
	for _, id := range []string{NewID(), "x"} {
		base := r.prefix + ":{" + id + "}:"
		keys, logPrefix := r.keys(id)
		if want := []string{base + "rec", base + "subs", base + "streams"}; !slices.Equal(keys, want) || cap(keys) != 3 {
			t.Errorf("keys(%q) = %q (cap %d), want %q (cap 3)", id, keys, cap(keys), want)
		}
		if logPrefix != base+"ev:" {
			t.Errorf("keys(%q) log prefix = %q, want %q", id, logPrefix, base+"ev:")
		}
		for _, rid := range []string{`"req-42"`, "7", "", "{}:" + string(make([]byte, 300))} {
			ref := r.claimsKey(id) + ":" + base64.RawURLEncoding.EncodeToString(func() []byte { s := sha256.Sum256([]byte(rid)); return s[:] }())
			if got := r.claimKey(id, rid); got != ref {
				t.Errorf("claimKey(%q, %q) = %q, want %q", id, rid, got, ref)
			}
			if got, want := r.beginKeys(id, rid), append(slices.Clone(keys), ref); !slices.Equal(got, want) {
				t.Errorf("beginKeys(%q, %q) = %q, want %q", id, rid, got, want)
			}
			if got := r.endKeys(id, rid); !slices.Equal(got, []string{ref}) {
				t.Errorf("endKeys(%q, %q) = %q, want %q", id, rid, got, ref)
			}
		}
	}
}
