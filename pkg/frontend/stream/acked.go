package stream

import (
	"context"

	"github.com/mcpfleet/mcpfleet/pkg/bus"
)

// Acked frames on the holder's side (see package bus): a legacy request's
// payload frames come with sequence numbers and are logged idempotently
// (sessionstore.EventLog.AppendEventSeq), because another frontend may
// have logged one already on the holder's behalf (Streams.OnAppend) when
// the holder was too slow to ack it. The attached client is given the
// log's events in index order, each once: when the log moved on without
// the exchange, the exchange catches up from the log.

// emitSeq is emit for an acked frame (seq > 0): logged unless already
// logged, published live when this call logged it, then given to the
// client in log order.
func (ex *exchange) emitSeq(payload []byte, seq uint64) bool {
	if seq == 0 || ex.sseID == "" {
		return ex.emit(payload)
	}
	idx, appended, err := ex.s.logEventSeq(ex.spec.Session.ID, ex.sseID, seq, payload)
	switch {
	case err != nil: // without a log, as emit does
		return ex.send("", payload)
	case !appended: // logged by another frontend: the log has it
		return ex.catchUp()
	}
	_ = ex.s.nc.Publish(ex.s.subj.Live(ex.spec.Session.ID, ex.sseID), bus.AppendLiveEvent(nil, idx, payload))
	return ex.deliver(idx, payload)
}

// deliver gives the client the logged event at idx, after any logged
// event it has not had yet; events it had are not given again.
func (ex *exchange) deliver(idx uint64, payload []byte) bool {
	switch {
	case ex.client == nil:
		ex.last = max(ex.last, idx)
		return true
	case idx <= ex.last:
		return true
	case idx == ex.last+1:
		ex.last = idx
		return ex.client.send(FormatEvent(FormatEventID(ex.sseID, idx), payload))
	}
	return ex.catchUp()
}

// catchUp gives the attached client the logged events after the last it
// had.
func (ex *exchange) catchUp() bool {
	if ex.client == nil {
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	evs, err := ex.s.opts.Events.EventsAfter(ctx, ex.spec.Session.ID, ex.sseID, ex.last)
	cancel()
	if err != nil {
		ex.s.log.WarnContext(ex.logCtx, "frontend: reading a stream's log", "err", err)
		return true
	}
	for _, ev := range evs {
		ex.last = ev.Index
		if isMarker(ev.Data) {
			continue
		}
		if !ex.client.send(FormatEvent(FormatEventID(ex.sseID, ev.Index), ev.Data)) {
			return false
		}
	}
	return true
}

// logEventSeq appends an acked message to a legacy stream's log unless it
// is there already (sessionstore.EventLog.AppendEventSeq).
func (s *Streams) logEventSeq(session, stream string, seq uint64, payload []byte) (uint64, bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	idx, appended, err := s.opts.Events.AppendEventSeq(ctx, session, stream, seq, payload)
	if err != nil {
		s.log.Warn("frontend: logging a stream event", "err", err)
	}
	return idx, appended, err
}
