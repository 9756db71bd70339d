package bus

import (
	"encoding/json"
	"strings"

	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// CancelKeyLegacy names a legacy request for cancellation: requests are
// keyed on (session, request id), never on the bare id.
func CancelKeyLegacy(session string, id protocol.ID) string {
	return "s|" + session + "|" + id.String()
}

// CancelKeyStream names a request by the frontend stream waiting for it
// (modern cancellation by stream close, and timeouts).
func CancelKeyStream(fe, stream string) string { return "f|" + fe + "|" + stream }

// ServerRequestID builds the id of a server-to-client request sent by
// worker w: it encodes the route back to the worker, so the client's answer
// can be accepted by any frontend.
func ServerRequestID(worker string, seq uint64) protocol.ID {
	return protocol.StringID("mcpf-" + worker + "-" + itoa(seq))
}

// ParseServerRequestID returns the worker that sent the server-to-client
// request with this id, or ok=false when the id is not one of ours.
func ParseServerRequestID(id protocol.ID) (worker string, ok bool) {
	s := id.Str()
	if !id.IsString() || !strings.HasPrefix(s, "mcpf-") || len(s) > 160 {
		return "", false
	}
	s = s[len("mcpf-"):]
	i := strings.LastIndexByte(s, '-')
	if i <= 0 || i == len(s)-1 {
		return "", false
	}
	for _, c := range s[i+1:] {
		if c < '0' || c > '9' {
			return "", false // ours always end in a decimal sequence number
		}
	}
	return s[:i], true
}

func itoa(n uint64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			break
		}
	}
	return string(b[i:])
}

// ClientAnswer is the header of a client's answer to a server-to-client
// request, forwarded by a frontend to Subjects.WorkerInbox; the raw
// JSON-RPC response follows it after a newline (see EncodeAnswer).
type ClientAnswer struct {
	// Session is the legacy session the answer was POSTed on; the worker
	// checks it against the session it asked.
	Session string `json:"s"`
	// Principal is the authenticated subject of the POST.
	Principal string `json:"p,omitempty"`
}

// EncodeAnswer builds an answer envelope.
func EncodeAnswer(h *ClientAnswer, msg []byte) ([]byte, error) {
	hb, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(hb)+1+len(msg))
	out = append(append(append(out, hb...), '\n'), msg...)
	return out, nil
}

// DecodeAnswer splits an answer envelope.
func DecodeAnswer(data []byte) (*ClientAnswer, []byte, error) {
	i := strings.IndexByte(string(data), '\n')
	if i < 0 {
		return nil, nil, ErrBadEnvelope
	}
	var h ClientAnswer
	if err := json.Unmarshal(data[:i], &h); err != nil {
		return nil, nil, ErrBadEnvelope
	}
	return &h, data[i+1:], nil
}
