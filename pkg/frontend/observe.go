package frontend

import (
	"net/http"

	"github.com/mcpfleet/mcpfleet/internal/httpx"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// observeStart begins the observation of one exchange on the MCP
// endpoint: rec is its record, filled in while it is served. It returns
// the request to serve, whose context carries rec.
func (f *Frontend) observeStart(r *http.Request, rec *httpx.Record) *http.Request {
	rec.Session = r.Header.Get(hdrSessionID)
	rec.ProtocolVersion = r.Header.Get(hdrProtocolVersion)
	f.metrics.InflightAdd(1)
	return r.WithContext(httpx.WithRecord(r.Context(), rec))
}

// observeEnd ends the observation of an exchange, once its handler is
// done: the span, the metrics, the access log. r is the request
// observeStart returned.
func (f *Frontend) observeEnd(r *http.Request, rec *httpx.Record) {
	f.endSpan(r, rec)
	f.metrics.InflightAdd(-1)
	f.metrics.Observe(rec)
	f.accessLog(rec)
}

// noteTarget records what a message addresses (tool, prompt, resource)
// and, for a modern one, its protocol version.
func noteTarget(rec *httpx.Record, method string, head *protocol.ParamsHead) {
	switch method {
	case protocol.MethodToolsCall:
		if head.Name != nil {
			rec.Tool = *head.Name
		}
	case protocol.MethodPromptsGet:
		if head.Name != nil {
			rec.Prompt = *head.Name
		}
	case protocol.MethodResourcesRead, protocol.MethodResourcesSubscribe, protocol.MethodResourcesUnsubscribe:
		if head.URI != nil {
			rec.Resource = *head.URI
		}
	}
	if head.Meta != nil && head.Meta.ProtocolVersion != nil {
		rec.ProtocolVersion = *head.Meta.ProtocolVersion
	}
}

// noteAnswer records the error code of a response answered here.
func noteAnswer(w http.ResponseWriter, resp []byte) {
	if rec := httpx.RecordOf(w); rec != nil {
		code, isErr := protocol.ResponseErrorCode(resp)
		rec.NoteResponse(resp, code, isErr)
	}
}
