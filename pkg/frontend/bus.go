package frontend

import (
	"net/http"

	"github.com/mcpfleet/mcpfleet/internal/httpx"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"github.com/nats-io/nats.go"
)

// Losing NATS. A frontend that loses its NATS connection can neither
// forward requests nor feed its streams. From the moment the connection
// drops until it is back (nats.go reconnects by itself, forever):
//   - Ready fails (/readyz 503), so the load balancer moves away;
//   - every legacy GET stream and every listen stream it holds ends at once
//     (listen.Registry.BusLost): a GET stream's client resumes it with
//     Last-Event-ID on another frontend, a listen stream gets its final
//     result and its client listens again elsewhere; their bus
//     subscriptions are dropped, so once the connection is back nothing of
//     them is fed again (a stream the client resumed elsewhere is fed there
//     only);
//   - every POST exchange ends too (stream.Streams.BusLost): a legacy
//     stream that started ends with nothing more in its log, and its client
//     resumes it elsewhere (the worker's later frames reach the log through
//     the append subject); a request whose answer had not started gets 502;
//   - every new request is answered 503 with Retry-After at once
//     (busUnavailable).
// When the connection is back, new requests and streams are served again.

// busUp reports whether the NATS connection is up: connected, and its
// loss (if any) is over.
func (f *Frontend) busUp() bool { return f.nc.IsConnected() && !f.busDown.Load() }

// startBusWatch follows the connection's status on a goroutine owned by
// the frontend, ended by stopBusWatch. Only a NATS connection has one: an
// in-process bus (bus.Local) cannot be lost, it is up until closed.
func (f *Frontend) startBusWatch() {
	nc := f.nc.NATSConn()
	if nc == nil {
		return
	}
	f.busCh = nc.StatusChanged(nats.CONNECTED, nats.RECONNECTING, nats.DISCONNECTED, nats.CLOSED)
	f.busDone = make(chan struct{})
	f.reconnects = nc.Stats().Reconnects
	f.checkBus(nc.Status()) // a loss before the listener was registered
	go f.watchBus(f.busCh, f.busDone)
}

// stopBusWatch ends watchBus and waits for it. Idempotent; a no-op before
// Start.
func (f *Frontend) stopBusWatch() {
	if f.busCh == nil {
		return
	}
	f.nc.NATSConn().RemoveStatusListener(f.busCh) // closes the channel: watchBus returns
	<-f.busDone
}

// watchBus reacts to each status change until ch is closed.
func (f *Frontend) watchBus(ch <-chan nats.Status, done chan<- struct{}) {
	defer close(done)
	for st := range ch {
		f.checkBus(st)
	}
}

// checkBus brings the frontend in line with the connection after status
// change st of a NATS connection (read on watchBus's goroutine, or
// before it starts): a loss
// ends the streams and refuses requests; once connected again it serves
// again. A loss counts even when the connection is already back when it
// is seen (a blip to another NATS node): the streams' subscriptions were
// resent and must go. nats.go drops a status change when the channel is
// full, so the connection's reconnect count is a second witness.
func (f *Frontend) checkBus(st nats.Status) {
	f.busMu.Lock()
	defer f.busMu.Unlock()
	n := f.nc.NATSConn().Stats().Reconnects
	lost := st != nats.CONNECTED || n != f.reconnects || !f.nc.IsConnected()
	f.reconnects = n
	if lost && f.busDown.CompareAndSwap(false, true) {
		gets, listens := f.reg.BusLost()
		f.streams.BusLost()
		f.log.Warn("frontend: NATS connection lost: not ready, refusing requests, streams ended (clients resume elsewhere)",
			"status", st.String(), "get_streams", gets, "listen_streams", listens)
	}
	if f.nc.IsConnected() && f.busDown.CompareAndSwap(true, false) {
		f.streams.BusBack()
		f.reg.BusBack()
		f.log.Info("frontend: NATS connection is back: serving again")
	}
}

// busUnavailable answers a request that arrives while the NATS connection
// is lost: 503 with Retry-After, at once, so a proxy or the client tries
// another frontend. It reports whether it answered.
func (f *Frontend) busUnavailable(w http.ResponseWriter) bool {
	if f.busUp() {
		return false
	}
	httpx.SetOutcome(w, "unavailable")
	w.Header().Set("Retry-After", "1")
	httpx.HTTPError(w, http.StatusServiceUnavailable, protocol.CodeInternalError,
		"Service Unavailable: this server lost its message bus (NATS) connection; retry on another instance")
	return true
}
