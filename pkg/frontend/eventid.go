package frontend

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"strings"
)

// SSE event ids are "<stream>:<index>": the stream id (unique within the
// session; "p…" for a POST response stream, "g…" for a GET stream) and the
// event's index in that stream's log (0 for the priming event). One pair of
// functions formats and parses them.

func formatEventID(stream string, index uint64) string {
	return stream + ":" + strconv.FormatUint(index, 10)
}

// parseEventID splits a Last-Event-ID; ok is false for anything that is not
// one of ours.
func parseEventID(s string) (stream string, index uint64, ok bool) {
	i := strings.LastIndexByte(s, ':')
	if i < 2 || i == len(s)-1 || len(s) > 128 {
		return "", 0, false
	}
	stream = s[:i]
	if stream[0] != 'p' && stream[0] != 'g' {
		return "", 0, false
	}
	for _, c := range stream[1:] {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
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
