package mcp

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// StateKeySize is the length of a requestState sealing key (AES-256).
const StateKeySize = 32

// sealer seals MRTR requestState with AES-256-GCM: confidentiality and
// integrity with one cluster-wide key, so a retry can be verified by any
// worker. Safe for concurrent use.
type sealer struct {
	aead cipher.AEAD
}

func newSealer(key []byte) (*sealer, error) {
	if len(key) != StateKeySize {
		return nil, fmt.Errorf("mcp: the requestState key must be %d bytes, got %d", StateKeySize, len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &sealer{aead: aead}, nil
}

// RandomStateKey returns a fresh key for ServerOptions.StateKey.
func RandomStateKey() []byte {
	k := make([]byte, StateKeySize)
	_, _ = rand.Read(k)
	return k
}

func (s *sealer) seal(plain []byte) string {
	nonce := make([]byte, s.aead.NonceSize(), s.aead.NonceSize()+len(plain)+s.aead.Overhead())
	_, _ = rand.Read(nonce)
	return base64.RawURLEncoding.EncodeToString(s.aead.Seal(nonce, nonce, plain, []byte("mcpfleet-requestState-v1")))
}

var errBadState = errors.New("invalid requestState")

func (s *sealer) open(token string) ([]byte, error) {
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil || len(raw) < s.aead.NonceSize()+s.aead.Overhead() {
		return nil, errBadState
	}
	n := s.aead.NonceSize()
	plain, err := s.aead.Open(nil, raw[:n], raw[n:], []byte("mcpfleet-requestState-v1"))
	if err != nil {
		return nil, errBadState
	}
	return plain, nil
}

// sealedState is what requestState carries: the binding (method, params
// digest, principal, expiry), the answers of earlier rounds, and the
// handler's own state.
type sealedState struct {
	Method    string                     `json:"m"`
	Digest    string                     `json:"d"`
	Principal string                     `json:"p,omitempty"`
	Expires   int64                      `json:"x"`
	Answers   map[string]json.RawMessage `json:"a,omitempty"`
	App       []byte                     `json:"s,omitempty"`
}

// paramsDigest hashes the request's params without the members that change
// between MRTR rounds (_meta, inputResponses, requestState), in canonical
// form (sorted keys), so a retry with the same params matches whatever
// the client's serialization.
func paramsDigest(params json.RawMessage) (string, error) {
	var m map[string]any
	if err := json.Unmarshal(params, &m); err != nil {
		return "", err
	}
	delete(m, "_meta")
	delete(m, "inputResponses")
	delete(m, "requestState")
	canon, err := json.Marshal(m)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(canon)
	return base64.RawURLEncoding.EncodeToString(sum[:16]), nil
}

// openState verifies a requestState for this request.
func (s *sealer) openState(token, method, digest, principal string, now time.Time) (*sealedState, error) {
	plain, err := s.open(token)
	if err != nil {
		return nil, err
	}
	var st sealedState
	if err := json.Unmarshal(plain, &st); err != nil {
		return nil, errBadState
	}
	switch {
	case st.Method != method || st.Digest != digest:
		return nil, errors.New("requestState belongs to another request")
	case st.Principal != principal:
		return nil, errors.New("requestState belongs to another principal")
	case now.UnixMilli() > st.Expires:
		return nil, errors.New("requestState expired")
	}
	return &st, nil
}
