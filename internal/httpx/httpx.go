// Package httpx holds the small HTTP answering helpers the frontend's
// parts share: JSON and JSON-RPC error answers bounded by a write
// deadline, connection deadlines reached through wrapped writers, and the
// annotation of an exchange's method and outcome for the metrics.
package httpx

import (
	"encoding/json"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// AnswerWriteTimeout bounds the write of a JSON answer: a client that
// does not take it within that time loses its connection, so an unread
// answer is not held.
const AnswerWriteTimeout = 10 * time.Second

// WriteJSON writes a JSON body with status, within AnswerWriteTimeout.
// extra, when non-nil, adds headers before the status is written.
func WriteJSON(w http.ResponseWriter, status int, body []byte, extra func(http.Header)) {
	SetWriteDeadline(w, time.Now().Add(AnswerWriteTimeout))
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if extra != nil {
		extra(h)
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// WriteError writes a JSON-RPC error response with an HTTP status; a 200
// marks the exchange's outcome "error".
func WriteError(w http.ResponseWriter, status int, id protocol.ID, e *protocol.Error) {
	if status == http.StatusOK {
		SetOutcome(w, "error")
	}
	if rec := RecordOf(w); rec != nil {
		rec.ErrCode = e.Code
	}
	WriteJSON(w, status, protocol.AppendErrorResponse(nil, id, e), nil)
}

// HTTPError writes a transport-level error: an HTTP status with a JSON-RPC
// error body that has no id.
func HTTPError(w http.ResponseWriter, status int, code int64, msg string) {
	WriteError(w, status, protocol.ID{}, protocol.NewError(code, "%s", msg))
}

// WriteResult writes a JSON-RPC success response with result res (200); a
// result that does not marshal is answered -32603.
func WriteResult(w http.ResponseWriter, id protocol.ID, res any) {
	raw, err := json.Marshal(res)
	if err != nil {
		WriteError(w, http.StatusOK, id, protocol.ErrInternalFailure())
		return
	}
	WriteJSON(w, http.StatusOK, protocol.AppendResponse(nil, id, raw), nil)
}

// Innermost follows w's Unwrap chain to the writer net/http made.
func Innermost(w http.ResponseWriter) http.ResponseWriter {
	for {
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return w
		}
		w = u.Unwrap()
	}
}

// SetWriteDeadline and SetReadDeadline set a deadline on the connection
// under w, as http.ResponseController does, without allocating one.
func SetWriteDeadline(w http.ResponseWriter, t time.Time) {
	if d, ok := Innermost(w).(interface{ SetWriteDeadline(time.Time) error }); ok {
		_ = d.SetWriteDeadline(t)
	}
}

// SetReadDeadline: see SetWriteDeadline.
func SetReadDeadline(w http.ResponseWriter, t time.Time) {
	if d, ok := Innermost(w).(interface{ SetReadDeadline(time.Time) error }); ok {
		_ = d.SetReadDeadline(t)
	}
}

// Accepts reports whether the Accept header lists the media type (exactly,
// ignoring parameters and case; q=0 excludes it). mediaType is a valid
// type/subtype without parameters.
//
// An entry without parameters, in ASCII (what clients send), is compared
// as is; the others are parsed (mime.ParseMediaType), with the same
// answer for every entry (FuzzAccepts).
func Accepts(r *http.Request, mediaType string) bool {
	for _, v := range r.Header.Values("Accept") {
		for rest, more := v, true; more; {
			var part string
			part, rest, more = strings.Cut(rest, ",")
			if mediaTypeIs(strings.TrimSpace(part), mediaType, true) {
				return true
			}
		}
	}
	return false
}

// IsJSONContentType reports whether the Content-Type header is
// application/json (ignoring parameters and case).
func IsJSONContentType(r *http.Request) bool {
	return mediaTypeIs(r.Header.Get("Content-Type"), "application/json", false)
}

// mediaTypeIs reports whether v parses (mime.ParseMediaType) as the media
// type mt, a valid type/subtype without parameters, and, with noQ0, has
// no q=0 parameter. A v in ASCII without parameters is compared without
// parsing: ParseMediaType would give it in lower case (if valid) with no
// parameters, and mt is valid.
func mediaTypeIs(v, mt string, noQ0 bool) bool {
	if isPlainASCII(v) {
		return strings.EqualFold(strings.TrimSpace(v), mt)
	}
	got, params, err := mime.ParseMediaType(v)
	if err != nil {
		return false
	}
	if q, ok := params["q"]; noQ0 && ok && (q == "0" || q == "0.0" || q == "0.00" || q == "0.000") {
		return false
	}
	return strings.EqualFold(got, mt)
}

// isPlainASCII reports whether s is ASCII without a ';' (no parameters).
func isPlainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 0x80 || c == ';' {
			return false
		}
	}
	return true
}
