package stream

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"strings"
)

// SSE event ids are "<stream>:<index>": the stream id (unique within the
// session) and the event's index in that stream's log (0 for the priming
// event). A GET stream id is "g" + random hex. A POST stream id is
// "p" + hex(frontend id) + "x" + bus stream id: it names where the worker's
// frames for the stream go, so another frontend can take the stream over
// when the one holding it died. One set of functions formats and parses
// them.

// MaxFrontendIDLen caps a frontend's bus id: it goes into POST stream ids,
// so into SSE event ids, and into bus subjects.
const MaxFrontendIDLen = 64

// MaxEventIDLen bounds the event ids ParseEventID accepts: the longest the
// frontend writes ("p", a MaxFrontendIDLen-byte frontend id in hex, "x", a
// base-36 uint64, ":", a decimal uint64) with room to spare.
const MaxEventIDLen = 1 + 2*MaxFrontendIDLen + 1 + 13 + 1 + 20 + 32

// FormatEventID returns the SSE event id of the event at index in stream.
func FormatEventID(stream string, index uint64) string {
	return stream + ":" + strconv.FormatUint(index, 10)
}

// ParseEventID splits a Last-Event-ID into its stream and index; ok is
// false for anything FormatEventID would not write for a stream of
// NewStreamID or PostStreamID (then stream and index are zero).
func ParseEventID(s string) (stream string, index uint64, ok bool) {
	i := strings.LastIndexByte(s, ':')
	if i < 2 || i == len(s)-1 || len(s) > MaxEventIDLen {
		return "", 0, false
	}
	stream = s[:i]
	if stream[0] != 'p' && stream[0] != 'g' {
		return "", 0, false
	}
	for _, c := range stream[1:] {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z') {
			return "", 0, false
		}
	}
	if stream[0] == 'p' {
		if _, _, ok := SplitPostStream(stream); !ok {
			return "", 0, false
		}
	}
	n, err := strconv.ParseUint(s[i+1:], 10, 64)
	if err != nil {
		return "", 0, false
	}
	return stream, n, true
}

// NewStreamID returns a fresh random id with the given kind prefix ('g'
// for a GET stream; other kinds name other one-off tokens).
func NewStreamID(kind byte) string {
	var b [1 + 16]byte
	return string(AppendStreamID(b[:0], kind))
}

// AppendStreamID appends a NewStreamID to b.
func AppendStreamID(b []byte, kind byte) []byte {
	var r [8]byte
	_, _ = rand.Read(r[:])
	return hex.AppendEncode(append(b, kind), r[:])
}

// PostStreamID names the SSE stream of a POST held by frontend fe (a
// non-empty id) on bus stream bus (a base-36 token).
func PostStreamID(fe, bus string) string {
	return "p" + hex.EncodeToString([]byte(fe)) + "x" + bus
}

// SplitPostStream inverts PostStreamID; ok is false for anything else.
func SplitPostStream(stream string) (fe, bus string, ok bool) {
	i := strings.IndexByte(stream, 'x')
	if i < 1 || i == len(stream)-1 || stream[0] != 'p' {
		return "", "", false
	}
	b, err := hex.DecodeString(stream[1:i])
	if err != nil || len(b) == 0 {
		return "", "", false
	}
	return string(b), stream[i+1:], true
}
