package sessionstore

import (
	"crypto/sha256"
	"encoding/base64"
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
)

// keys returns the rec, subs and streams keys of session id, and the
// prefix of its event-log keys.
func (r *Redis) keys(id string) (keys []string, logPrefix string) {
	base := r.prefix + ":{" + id + "}:"
	return []string{base + "rec", base + "subs", base + "streams"}, base + "ev:"
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
	sum := sha256.Sum256([]byte(s))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// claimsKey returns the key of the rq set of session id.
func (r *Redis) claimsKey(id string) string {
	return r.prefix + ":{" + id + "}:rq"
}

// claimKey returns the rq set key of session id, the key of the claim on
// requestID, and the claim's member in the set. The member is a digest:
// a request id is any string, and must not be able to displace the hash
// tag nor to spell the key of another claim.
func (r *Redis) claimKey(id, requestID string) (set, key, member string) {
	member = digest(requestID)
	set = r.claimsKey(id)
	return set, set + ":" + member, member
}

// [NewID] never do; refusing braces keeps a crafted id from displacing the
// hash tag and from making one session's key spell another's.
func (r *Redis) validID(id string) bool {
	return ValidID(id) && !strings.ContainsAny(id, "{}")
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
