package mcp

import (
	"bytes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"golang.org/x/crypto/chacha20poly1305"
)

// StateKeySize is the length of a requestState sealing key.
const StateKeySize = 32

// sealer seals MRTR requestState with XChaCha20-Poly1305 (192-bit random
// nonces, so one cluster-wide key may seal any number of states):
// confidentiality and integrity, verifiable by any worker holding the key.
// A state starts with the key's 4-byte id, so keys can be rotated: the
// first key seals, all of them open. Safe for concurrent use.
type sealer struct {
	keys       []sealKey // keys[0] seals
	configured bool      // the keys were given (ServerOptions.StateKey, SetStateKeys), not generated
}

type sealKey struct {
	id   [4]byte
	aead cipher.AEAD
}

// newSealer returns a sealer sealing with key and opening with key and old.
func newSealer(key []byte, old ...[]byte) (*sealer, error) {
	s := &sealer{}
	for _, k := range append([][]byte{key}, old...) {
		if len(k) != StateKeySize {
			return nil, &optionsError{fmt.Sprintf("mcp: a requestState key must be %d bytes, got %d", StateKeySize, len(k))}
		}
		aead, err := chacha20poly1305.NewX(k)
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(k)
		sk := sealKey{aead: aead}
		copy(sk.id[:], sum[:4])
		s.keys = append(s.keys, sk)
	}
	return s, nil
}

// SetStateKeys replaces the keys of 2026-07-28 requestState: key
// (StateKeySize bytes) seals from now on, and states sealed with key or
// any of old still open (old keys never seal). It is how a server built
// without [ServerOptions.StateKey] gets the cluster's key afterwards (a
// --state-key flag); a key of the wrong size is an error (wrapping
// ErrInvalidOptions) and changes nothing. Safe to call while requests
// are served: each request seals and opens with the keys current when
// it gets there, so a state sealed with the replaced key opens only when
// that key is among old.
func (s *Server) SetStateKeys(key []byte, old ...[]byte) error {
	sl, err := newSealer(key, old...)
	if err != nil {
		return err
	}
	sl.configured = true
	s.sealer.Store(sl)
	return nil
}

// StateKeyConfigured reports whether the requestState key was chosen by
// the program ([ServerOptions.StateKey] or [Server.SetStateKeys]) rather
// than generated at random by [NewServer], which is fine for one process
// but not for a cluster, where every worker must share it.
func (s *Server) StateKeyConfigured() bool { return s.sealer.Load().configured }

// RandomStateKey returns a fresh key for ServerOptions.StateKey.
func RandomStateKey() []byte {
	k := make([]byte, StateKeySize)
	_, _ = rand.Read(k)
	return k
}

var stateAD = []byte("mcpfleet-requestState-v2")

func (s *sealer) seal(plain []byte) string {
	k := s.keys[0]
	n := k.aead.NonceSize()
	out := make([]byte, 4+n, 4+n+len(plain)+k.aead.Overhead())
	copy(out, k.id[:])
	_, _ = rand.Read(out[4 : 4+n])
	out = k.aead.Seal(out, out[4:4+n], plain, stateAD)
	return base64.RawURLEncoding.EncodeToString(out)
}

var errBadState = errors.New("invalid requestState")

func (s *sealer) open(token string) ([]byte, error) {
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil || len(raw) < 4 {
		return nil, errBadState
	}
	for _, k := range s.keys {
		if [4]byte(raw[:4]) != k.id {
			continue
		}
		n := k.aead.NonceSize()
		if len(raw) < 4+n+k.aead.Overhead() {
			return nil, errBadState
		}
		plain, err := k.aead.Open(nil, raw[4:4+n], raw[4+n:], stateAD)
		if err != nil {
			return nil, errBadState
		}
		return plain, nil
	}
	return nil, errBadState
}

// sealedState is what requestState carries: the binding (method, params
// digest, principal, expiry), the answers of earlier rounds, and the
// handler's own state.
type sealedState struct {
	// ID makes every state unique, for single-use enforcement.
	ID        string                     `json:"i"`
	Method    string                     `json:"m"`
	Digest    string                     `json:"d"`
	Principal string                     `json:"p,omitempty"`
	Expires   int64                      `json:"x"`
	Answers   map[string]json.RawMessage `json:"a,omitempty"`
	// Asked are the keys this state's round asked for: the only answers
	// the retry may add.
	Asked []string `json:"q,omitempty"`
	App   []byte   `json:"s,omitempty"`
}

// paramsDigest hashes the request's params without the members that change
// between MRTR rounds (_meta, inputResponses, requestState), in canonical
// form (sorted keys), so a retry with the same params matches whatever
// the client's serialization.
func paramsDigest(params json.RawMessage) (string, error) {
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(params))
	dec.UseNumber() // numbers keep their exact text: 2^53+1 is not 2^53
	if err := dec.Decode(&m); err != nil {
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
	return base64.RawURLEncoding.EncodeToString(sum[:]), nil
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
