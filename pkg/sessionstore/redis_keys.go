package sessionstore

import (
	"crypto/sha256"
	"encoding/base64"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// The keys of the Redis store (see the key layout on [Redis]) and the
// encoding of the record's fields.

// Record field names in the P:{S}:rec hash.
const (
	fieldID                 = "id"
	fieldProtocolVersion    = "protocolVersion"
	fieldClientInfo         = "clientInfo"
	fieldClientCapabilities = "clientCapabilities"
	fieldLogLevel           = "logLevel"
	fieldInitialized        = "initialized"
	fieldClientInitialized  = "clientInitialized"
	fieldPrincipal          = "principal"
	fieldCreatedAt          = "createdAt"
	fieldLastSeen           = "lastSeen"
	// fieldVersion counts the record's changes: 1 at creation, one more
	// per Update. Readers that cached the record send the version they
	// hold and get a short answer while it is current.
	fieldVersion = "ver"
	// fieldGen is the record's generation, random, set by Create: a
	// claim holds the generation of the session that made it, so that a
	// claim left by an earlier session with the same id is not taken for
	// one of this session's (lua/begin.lua).
	fieldGen = "gen"
)

// keys returns the rec, subs and streams keys of session id, and the
// prefix of its event-log keys. The slice has no room to spare: what a
// caller appends goes to a copy.
func (r *Redis) keys(id string) (keys []string, logPrefix string) {
	k := r.sessionKeys(id, nil, "rec", "subs", "streams", "ev:")
	return k[:3:3], k[3]
}

// beginKeys returns Begin's keys: rec, subs, streams and the claim on
// requestID (claimKey).
func (r *Redis) beginKeys(id, requestID string) []string {
	return r.sessionKeys(id, &requestID, "rec", "subs", "streams")
}

// endKeys returns End's key: the claim on requestID (claimKey).
func (r *Redis) endKeys(id, requestID string) []string {
	return r.sessionKeys(id, &requestID)
}

// sessionKeys returns the names "P:{S}:" + suffix of session id's keys,
// for each suffix, then the claim key of *claim (claimKey) unless claim
// is nil: one allocation for all the names (they share one string) and one
// for the slice, where building each name costs two or more (a request
// reads three to five keys).
func (r *Redis) sessionKeys(id string, claim *string, suffixes ...string) []string {
	const maxKeys = 8
	head := len(r.prefix) + len(":{") + len(id) + len("}:")
	n, size := len(suffixes), len(suffixes)*head
	for _, s := range suffixes {
		size += len(s)
	}
	var sum [digestLen]byte
	var d []byte
	if claim != nil {
		d = appendDigest(sum[:0], *claim)
		n++
		size += head + len("rq:") + len(d)
	}
	var b strings.Builder
	b.Grow(size)
	var ends [maxKeys]int
	name := func(i int, suffix string, raw []byte) {
		b.WriteString(r.prefix)
		b.WriteString(":{")
		b.WriteString(id)
		b.WriteString("}:")
		b.WriteString(suffix)
		b.Write(raw)
		ends[i] = b.Len()
	}
	for i, s := range suffixes {
		name(i, s, nil)
	}
	if claim != nil {
		name(n-1, "rq:", d)
	}
	all := b.String()
	out := make([]string, n)
	start := 0
	for i := range out {
		out[i] = all[start:ends[i]]
		start = ends[i]
	}
	return out
}

// onceKey returns the key of the once set of (session id, stream): the
// digests of AppendOnce's keys.
func (r *Redis) onceKey(id, stream string) string {
	return r.prefix + ":{" + id + "}:once:" + stream
}

// subscribersKey returns the key of uri's subscribers index. Its hash
// tag is a digest of uri, so no URI (braces, any bytes, any length) can
// displace it or spell another key; it is not in any session's slot.
func (r *Redis) subscribersKey(uri string) string {
	return r.prefix + ":sub:{" + digest(uri) + "}"
}

// digest returns the unpadded base64url SHA-256 of s: a fixed-size name
// for any string, safe in a key (no brace, no colon).
func digest(s string) string {
	var b [digestLen]byte
	return string(appendDigest(b[:0], s))
}

// digestLen is the length of a digest.
const digestLen = 43 // base64.RawURLEncoding.EncodedLen(sha256.Size)

// appendDigest appends the digest of s to b.
func appendDigest(b []byte, s string) []byte {
	sum := sha256.Sum256([]byte(s))
	return base64.RawURLEncoding.AppendEncode(b, sum[:])
}

// claimsKey returns the key of the rq set of session id.
func (r *Redis) claimsKey(id string) string {
	return r.prefix + ":{" + id + "}:rq"
}

// claimKey returns the key of the claim on requestID in session id: the
// rq set's key, a colon and the digest of requestID (a request id is any
// string, and must not be able to displace the hash tag nor to spell the
// key of another claim). Older versions also listed the digest in the rq
// set, which Create and Delete still read (see the key layout on [Redis]).
func (r *Redis) claimKey(id, requestID string) string {
	return r.claimsKey(id) + ":" + digest(requestID)
}

// [NewID] never do; refusing braces keeps a crafted id from displacing the
// hash tag and from making one session's key spell another's.
func (r *Redis) validID(id string) bool {
	return ValidID(id) && !strings.ContainsAny(id, "{}")
}

// newGeneration returns a new record's generation: 64 random bits in
// base 36 (no '#', which separates it from the token in a claim). Only
// its difference from the earlier sessions of the same id matters.
func newGeneration() string {
	return strconv.FormatUint(rand.Uint64(), 36)
}

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

func parseMilli(v string) (time.Time, error) {
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return time.Time{}, err
	}
	return time.UnixMilli(ms).UTC(), nil
}
