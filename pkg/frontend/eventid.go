package frontend

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

// maxEventIDLen bounds the event ids parseEventID accepts: the longest the
// frontend writes ("p", a MaxIDLen-byte frontend id in hex, "x", a base-36
// uint64, ":", a decimal uint64) with room to spare.
const maxEventIDLen = 1 + 2*MaxIDLen + 1 + 13 + 1 + 20 + 32

func formatEventID(stream string, index uint64) string {
	return stream + ":" + strconv.FormatUint(index, 10)
}

// parseEventID splits a Last-Event-ID; ok is false for anything that is not
// one of ours.
func parseEventID(s string) (stream string, index uint64, ok bool) {
	i := strings.LastIndexByte(s, ':')
	if i < 2 || i == len(s)-1 || len(s) > maxEventIDLen {
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
		if _, _, ok := splitPostStream(stream); !ok {
			return "", 0, false
		}
	}
	n, err := strconv.ParseUint(s[i+1:], 10, 64)
	if err != nil {
		return "", 0, false
	}
	return stream, n, true
}

// newStreamID returns a fresh SSE stream id with the given kind prefix.
func newStreamID(kind byte) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return string(kind) + hex.EncodeToString(b[:])
}

// postStreamID names the SSE stream of a POST held by frontend fe on bus
// stream bus (a base-36 token).
func postStreamID(fe, bus string) string {
	return "p" + hex.EncodeToString([]byte(fe)) + "x" + bus
}

// splitPostStream inverts postStreamID.
func splitPostStream(stream string) (fe, bus string, ok bool) {
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
