package sessionstore

import (
	"crypto/rand"
	"encoding/base64"
)

// idBytes is the entropy of a session id: 192 bits, far beyond guessing.
const idBytes = 24

// MaxIDLen is the longest session id [ValidID] accepts.
const MaxIDLen = 128

// NewID returns a fresh session id: 24 bytes from crypto/rand in unpadded
// URL-safe base64 (32 characters of [A-Za-z0-9_-]), which is visible ASCII
// as the Mcp-Session-Id header requires.
func NewID() string {
	var b [idBytes]byte
	// crypto/rand.Read never fails: it aborts the process when the
	// platform's CSPRNG is unavailable.
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// ValidID reports whether s can be a session id: non-empty, at most
// [MaxIDLen] bytes, each byte visible ASCII (0x21 to 0x7E). Callers use it
// to reject garbage header values before any store call; stores report
// ErrNotFound for invalid ids without touching their backend.
func ValidID(s string) bool {
	if s == "" || len(s) > MaxIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7E {
			return false
		}
	}
	return true
}

// shortID is the form of a session id that may appear in errors and logs:
// the first 8 bytes, enough to correlate, too few to hijack the session.
// Callers format it with %q, which also neutralises garbage bytes.
func shortID(id string) string {
	if len(id) <= 8 {
		return id
	}
	return id[:8] + "…"
}
