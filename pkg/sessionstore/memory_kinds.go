package sessionstore

import (
	"bytes"
	"encoding/binary"
	"hash/maphash"
	"sync/atomic"
	"unique"

	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// memKind is what a session of a Memory store declares once and for all:
// ProtocolVersion, Principal and the JSON of ClientInfo and
// ClientCapabilities. The live sessions that declare the same share one
// (clients of one kind send identical client info and capabilities),
// counted: it goes when the last of them does. Its fields but refs and
// mem are immutable once made; refs is guarded by Memory.mu, mem is set
// once (by the first decode).
type memKind struct {
	proto, principal string
	info, caps       []byte
	hash             uint64 // its key in Memory.kinds
	refs             int
	mem              atomic.Pointer[members] // info and caps decoded; nil until the first decode
}

// size is what a session of kind k counts toward MaxSessionBytes: the
// bytes of its client's declarations, shared or not.
func (k *memKind) size() int64 {
	return int64(len(k.info) + len(k.caps))
}

// decode sets the JSON members of s from k; s is the caller's, sharing
// nothing with k. The JSON is decoded once (concurrent first calls may
// each decode it: the results are equal, one is kept), then copied.
func (k *memKind) decode(s *Session) error {
	m := k.mem.Load()
	if m == nil {
		var err error
		if m, err = decodeMembers(k.info, k.caps); err != nil {
			return err
		}
		k.mem.CompareAndSwap(nil, m)
	}
	m.copyTo(s)
	return nil
}

// is reports whether k is the declaration of s, whose members encode as
// info and caps.
func (k *memKind) is(s *Session, info, caps []byte) bool {
	return k.proto == s.ProtocolVersion && k.principal == s.Principal && bytes.Equal(k.info, info) && bytes.Equal(k.caps, caps)
}

// kindHash is the key in Memory.kinds of the declaration of s, whose
// members encode as info and caps (each part length-prefixed, so that no
// two declarations hash the same but by chance).
func kindHash(seed maphash.Seed, s *Session, info, caps []byte) uint64 {
	var h maphash.Hash
	h.SetSeed(seed)
	var n [binary.MaxVarintLen64]byte
	length := func(l int) { _, _ = h.Write(binary.AppendUvarint(n[:0], uint64(l))) }
	length(len(s.ProtocolVersion))
	_, _ = h.WriteString(s.ProtocolVersion)
	length(len(s.Principal))
	_, _ = h.WriteString(s.Principal)
	length(len(info))
	_, _ = h.Write(info)
	length(len(caps))
	_, _ = h.Write(caps)
	return h.Sum64()
}

// acquire returns the kind of s (whose members encode as info and caps,
// and whose kindHash is hash), made when no live session has it, with one
// more reference. Two declarations whose hashes collide do not share: the
// second one's kind is its own, outside the table. The caller holds m.mu.
func (m *Memory) acquire(s *Session, info, caps []byte, hash uint64) *memKind {
	k := m.kinds[hash]
	if k == nil || !k.is(s, info, caps) {
		nk := &memKind{proto: s.ProtocolVersion, principal: s.Principal, info: info, caps: caps, hash: hash}
		if k == nil {
			m.kinds[hash] = nk
		}
		k = nk
	}
	k.refs++
	return k
}

// release drops a reference to k, and k when it was the last. The caller
// holds m.mu.
func (m *Memory) release(k *memKind) {
	if k.refs--; k.refs <= 0 && m.kinds[k.hash] == k {
		delete(m.kinds, k.hash)
	}
}

// internLevel returns the canonical copy of level, so that the sessions
// at one level share its bytes instead of each keeping its request's.
func internLevel(level protocol.LoggingLevel) protocol.LoggingLevel {
	return unique.Make(level).Value()
}
