package stream

import (
	"net/http"
	"strconv"

	"github.com/mcpfleet/mcpfleet/internal/httpx"
	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// Stream log markers: entries of a legacy stream's log that are not
// messages for the client. Every JSON-RPC message starts with '{', so they
// cannot be mistaken for one.
const (
	// markStart is the first entry of every stream's log; a POST's marker
	// carries the request id after the space.
	markStart = "\x00start "
	// markEnd ends a stream that ended without a response (cancelled).
	markEnd = "\x00end"
)

func isMarker(data []byte) bool { return len(data) > 0 && data[0] == 0 }

// frame handles one frame while attached.
func (ex *exchange) frame(w http.ResponseWriter, fr frame) step {
	switch fr.kind {
	case bus.FrameNoResponders:
		ex.fail(w, http.StatusServiceUnavailable, errNoWorker(ex.spec.Msg.Method))
		httpx.SetOutcome(w, "no_worker")
		return stepDone
	case bus.FrameResponse:
		return ex.response(w, fr.payload, fr.seq)
	case bus.FrameNotification, bus.FrameServerRequest:
		if ex.spec.NoSSE {
			return stepContinue
		}
		ex.startSSE(w)
		if !ex.emitSeq(fr.payload, fr.seq) {
			return ex.clientGone()
		}
	case bus.FrameEnd:
		// Cancelled: the stream ends without a response.
		ex.startSSE(w)
		httpx.SetOutcome(w, "cancelled")
		return stepDone
	case bus.FrameClose:
		if !ex.legacy() {
			return stepContinue
		}
		ex.startSSE(w)
		if ms, err := strconv.ParseUint(string(fr.payload), 10, 32); err == nil {
			ex.client.send([]byte("retry: " + strconv.FormatUint(ms, 10) + "\n\n"))
		}
		return stepDetach
	}
	return stepContinue
}

// response handles the final response while attached: its effect, then
// the answer as an SSE event or plain JSON.
func (ex *exchange) response(w http.ResponseWriter, payload []byte, seq uint64) step {
	if e := ex.spec.Effect; e != nil {
		if err := e(payload); err != nil {
			if ex.client == nil && ex.s.opts.EffectError != nil && ex.s.opts.EffectError(w, ex.spec.Msg.ID, err) {
				return stepDone
			}
			ex.s.log.ErrorContext(ex.logCtx, "frontend: completing a response", "method", ex.spec.Msg.Method, "err", err)
			payload = protocol.AppendErrorResponse(nil, ex.spec.Msg.ID, protocol.NewError(protocol.CodeInternalError, "could not complete the request; retry"))
			if ex.client == nil {
				httpx.SetOutcome(w, "unavailable")
				httpx.WriteJSON(w, http.StatusServiceUnavailable, payload, nil)
				return stepDone
			}
		}
	}
	code, isErr := protocol.ResponseErrorCode(payload)
	if isErr {
		httpx.SetOutcome(w, "error")
	} else {
		httpx.SetOutcome(w, "ok")
	}
	if rec := httpx.RecordOf(w); rec != nil {
		rec.NoteResponse(payload, code, isErr)
	}
	if ex.client != nil {
		ex.emitSeq(payload, seq)
		ex.ended = true
		return stepDone
	}
	ex.writeJSON(w, payload)
	return stepDone
}

func (ex *exchange) writeJSON(w http.ResponseWriter, payload []byte) {
	status := http.StatusOK
	if !ex.legacy() {
		if code, ok := protocol.ResponseErrorCode(payload); ok {
			status = ModernStatus(code)
			if code == protocol.CodeInvalidParams {
				status = http.StatusOK // e.g. unknown tool, resource not found
			}
		}
	}
	var extra http.Header
	if ex.spec.Respond != nil {
		extra = http.Header{}
		if s := ex.spec.Respond(payload, extra); s != 0 {
			status = s
		}
	}
	if status >= 400 {
		httpx.SetOutcome(w, "error")
	}
	httpx.WriteJSON(w, status, payload, func(h http.Header) {
		for k, v := range extra {
			h[k] = v
		}
	})
}

// startSSE switches the response to an SSE stream served by a writer
// goroutine; on legacy sessions it logs the stream's start marker and sends
// the priming event (its id, empty data) so the client can resume.
func (ex *exchange) startSSE(w http.ResponseWriter) {
	if ex.client != nil {
		return
	}
	s := ex.s
	sse := StartSSE(w, s.opts.WriteTimeout, nil)
	ex.closeGauge = s.opts.Metrics.StreamOpened("post")
	if ex.legacy() {
		ex.sseID = PostStreamID(s.id, ex.st.id)
		start := append([]byte(markStart), ex.spec.Msg.ID.AppendJSON(nil)...)
		if idx, ok := s.logEvent(ex.spec.Session.ID, ex.sseID, start); ok {
			_ = sse.Priming(FormatEventID(ex.sseID, idx), s.opts.SSERetry)
			ex.last = idx
		} else {
			ex.sseID = "" // without a log the stream cannot be resumed
		}
	}
	ex.client = newClientWriter(sse, s.opts.StreamBuffer)
	ex.client.dropped = func() { s.opts.Metrics.MessageDropped("slow_reader") }
}

// emit logs a legacy stream event (giving it its id) and publishes it on
// the stream's live subject, then queues it for the attached client. It
// reports false when the client cannot take it (gone or too slow).
func (ex *exchange) emit(payload []byte) bool {
	if idx, ok := ex.logAndPublish(payload); ok {
		return ex.deliver(idx, payload)
	}
	return ex.send("", payload)
}

// send queues an event for the attached client, if any.
func (ex *exchange) send(id string, payload []byte) bool {
	if ex.client == nil {
		return true
	}
	return ex.client.send(FormatEvent(id, payload))
}

// logAndPublish appends data to the stream's log and publishes it live;
// ok is false when there is no log (modern, or the store failed).
func (ex *exchange) logAndPublish(data []byte) (uint64, bool) {
	if ex.sseID == "" {
		return 0, false
	}
	idx, ok := ex.s.logEvent(ex.spec.Session.ID, ex.sseID, data)
	if !ok {
		return 0, false
	}
	_ = ex.s.nc.Publish(ex.s.subj.Live(ex.spec.Session.ID, ex.sseID), bus.AppendLiveEvent(nil, idx, data))
	return idx, true
}

// fail ends the exchange with a JSON-RPC error, in whichever form the
// response has taken (w is nil once detached).
func (ex *exchange) fail(w http.ResponseWriter, status int, e *protocol.Error) {
	payload := protocol.AppendErrorResponse(nil, ex.spec.Msg.ID, e)
	if ex.client == nil && w != nil {
		httpx.WriteError(w, status, ex.spec.Msg.ID, e)
		return
	}
	ex.emit(payload)
	ex.ended = true
}
