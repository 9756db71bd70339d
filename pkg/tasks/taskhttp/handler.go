// Package taskhttp answers the task methods over HTTP, for both protocol
// eras, from the task records in the session store: tasks/get,
// tasks/update and tasks/cancel of the 2026-07-28 tasks extension, and
// tasks/get, tasks/list, tasks/result and tasks/cancel of a 2025-11-25
// session (with the client's answers to a task's input requests). It also
// applies the workers' task writes (the task writer), announces task
// changes on the bus and fails the tasks whose worker died.
//
// Workers run tasks but never touch the store: they send writes
// ([tasks.WriteOp] on bus.Subjects.TaskWrite, in a queue group: one
// frontend per write), and whichever frontend a client reaches answers
// for any task, whichever frontend and worker created it.
package taskhttp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"github.com/mcpfleet/mcpfleet/pkg/sessionstore"
	"github.com/mcpfleet/mcpfleet/pkg/tasks"
	"github.com/nats-io/nats.go"
)

// ErrInvalidOptions wraps every validation error of [New].
var ErrInvalidOptions = errors.New("taskhttp: invalid options")

// EventWriter writes the events of one SSE response (the tasks/result
// stream of a legacy task waiting for input).
type EventWriter interface {
	// Event writes one message event carrying data and flushes it; an
	// error means the client is gone (or too slow) and the stream ends.
	Event(data []byte) error
}

// Options configure a Handler.
type Options struct {
	// Conn is the bus connection: task writes, task events and the
	// workers' task controls go over it.
	// default: none (required)
	Conn bus.Conn
	// Subjects builds the bus subjects.
	// default: the zero value (prefix "mcp")
	Subjects bus.Subjects
	// Store holds the task records.
	// default: none (required)
	Store sessionstore.Records
	// Logger receives store failures.
	// default: slog.Default()
	Logger *slog.Logger
	// Alive reports whether a worker (by bus id) still announces itself.
	// A live task whose worker is not alive and whose control subject has
	// no responders is failed.
	// default: none (required)
	Alive func(worker string) bool
	// Principal returns the principal a request was authenticated as;
	// tasks of the 2026-07-28 era are bound to their creator's.
	// default: "" for every request (no authentication)
	Principal func(r *http.Request) string
	// Admit takes the in-flight slots a waiting tasks/result holds for
	// its session; on refusal it has answered the request (429) and ok
	// is false. release gives the slots back.
	// default: every request admitted, nothing held
	Admit func(w http.ResponseWriter, r *http.Request, id protocol.ID, session string) (release func(), ok bool)
	// StartSSE starts an SSE response on w (status 200 and the headers)
	// for a tasks/result that sends the task's input requests to the
	// client.
	// default: none (required)
	StartSSE func(w http.ResponseWriter) EventWriter
	// RequestTimeout bounds how long a tasks/result waits for its task to
	// end before it answers that the task is still running. Negative is
	// invalid.
	// default: 10 min
	RequestTimeout time.Duration
	// Closing is closed when the frontend begins to shut down: a waiting
	// tasks/result returns at once (the client calls it again elsewhere).
	// default: nil (never closed)
	Closing <-chan struct{}
}

// opTimeout bounds the store and bus calls of one task operation.
const opTimeout = 5 * time.Second

// writers bounds the task writes a frontend applies at once.
const writers = 32

// Handler answers the task methods and applies the workers' task writes.
// Its HTTP methods are safe for concurrent use.
type Handler struct {
	nc             bus.Conn
	subj           bus.Subjects
	store          sessionstore.Records
	log            *slog.Logger
	alive          func(string) bool
	principal      func(*http.Request) string
	admit          func(http.ResponseWriter, *http.Request, protocol.ID, string) (func(), bool)
	startSSE       func(http.ResponseWriter) EventWriter
	requestTimeout time.Duration
	closing        <-chan struct{}

	mu      sync.Mutex
	sub     bus.Subscription // task writes from workers
	writing sync.WaitGroup   // task writes being applied
}

// New validates opts and returns a Handler. Its HTTP methods work at
// once; call Start to take task writes.
func New(opts Options) (*Handler, error) {
	switch {
	case opts.Conn == nil:
		return nil, fmt.Errorf("%w: a NATS connection is required", ErrInvalidOptions)
	case opts.Store == nil:
		return nil, fmt.Errorf("%w: a store is required", ErrInvalidOptions)
	case opts.Alive == nil:
		return nil, fmt.Errorf("%w: Alive is required", ErrInvalidOptions)
	case opts.StartSSE == nil:
		return nil, fmt.Errorf("%w: StartSSE is required", ErrInvalidOptions)
	case opts.RequestTimeout < 0:
		return nil, fmt.Errorf("%w: RequestTimeout is negative", ErrInvalidOptions)
	}
	h := &Handler{
		nc: opts.Conn, subj: opts.Subjects, store: opts.Store, log: opts.Logger,
		alive: opts.Alive, principal: opts.Principal, admit: opts.Admit, startSSE: opts.StartSSE,
		requestTimeout: opts.RequestTimeout, closing: opts.Closing,
	}
	if h.log == nil {
		h.log = slog.Default()
	}
	if h.principal == nil {
		h.principal = func(*http.Request) string { return "" }
	}
	if h.admit == nil {
		h.admit = func(http.ResponseWriter, *http.Request, protocol.ID, string) (func(), bool) { return func() {}, true }
	}
	if h.requestTimeout == 0 {
		h.requestTimeout = 10 * time.Minute
	}
	return h, nil
}

// Start subscribes to the workers' task writes (in their queue group).
// Writes are applied concurrently, a bounded number at once: one slow
// store call does not hold up the others. It returns ctx.Err() when ctx
// is done before the subscription is made (nothing is left subscribed),
// and an error when it was started already. The caller flushes the
// connection before it relies on the subscription.
func (h *Handler) Start(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.sub != nil {
		return errors.New("taskhttp: started already")
	}
	sem := make(chan struct{}, writers)
	sub, err := h.nc.QueueSubscribe(h.subj.TaskWrite(), bus.TaskWriters, func(m *nats.Msg) {
		sem <- struct{}{}
		h.writing.Add(1)
		go func() { // owned by the handler: Stop waits for writing
			defer func() { <-sem; h.writing.Done() }()
			h.applyWrite(m)
		}()
	})
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		_ = sub.Unsubscribe()
		return err
	}
	h.sub = sub
	return nil
}

// applyWrite applies one task write and replies with its outcome.
func (h *Handler) applyWrite(m *nats.Msg) {
	var op tasks.WriteOp
	reply := tasks.WriteReply{}
	var changed *tasks.Record
	if err := json.Unmarshal(m.Data, &op); err != nil {
		reply.Error = "malformed task write"
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		reply, changed = tasks.Apply(ctx, h.store, &op, time.Now())
		cancel()
	}
	b, _ := json.Marshal(reply)
	_ = bus.Respond(h.nc, m, b)
	h.changed(changed)
}

// Stop stops taking task writes after those queued (a drain: the others
// go to the other frontends) and waits for those being applied (each
// bounded by a few seconds), or until ctx is done. It is idempotent, and
// a no-op before Start.
func (h *Handler) Stop(ctx context.Context) {
	h.mu.Lock()
	sub := h.sub
	h.mu.Unlock()
	if sub == nil {
		return
	}
	_ = sub.DrainWait(ctx)
	done := make(chan struct{})
	go func() { h.writing.Wait(); close(done) }() // ends with the writes in progress, each bounded by opTimeout
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// Close stops taking task writes at once, without a drain (for a
// frontend whose start-up failed); writes being applied finish on their
// own. It is idempotent.
func (h *Handler) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.sub != nil {
		_ = h.sub.Unsubscribe()
	}
}
