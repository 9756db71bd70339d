// Package tasks holds the state of the tasks extension's tasks (2026-07-28,
// io.modelcontextprotocol/tasks) in the session store, and the messages
// that carry task changes between workers and frontends.
//
// A task's record lives in the store under Key(id) for its TTL. Workers run
// tasks but never touch the store: they send WriteOps on the bus
// (bus.Subjects.TaskWrite) and a frontend applies them (Apply). Frontends
// answer tasks/get, tasks/update and tasks/cancel from the store, and
// reach the worker running a task with Controls
// (bus.Subjects.TaskControl). Every change is a compare-and-set on the
// record, and a terminal status never changes.
package tasks

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"github.com/mcpfleet/mcpfleet/pkg/sessionstore"
)

// Store is the part of the session store tasks use: its versioned
// records (a task and a session's task index are records).
type Store = sessionstore.Records

// Defaults of a new task.
const (
	DefaultTTL          = time.Hour
	DefaultPollInterval = 500 * time.Millisecond
)

// ErrNotFound means no live task has the id (or it belongs to another
// principal).
var ErrNotFound = errors.New("tasks: task not found")

// Record is a task as stored.
type Record struct {
	protocol.Task
	// Principal owns the task ("" when authentication is off); Worker runs
	// it.
	Principal string `json:"principal,omitempty"`
	Worker    string `json:"worker,omitempty"`
	// Inputs are the input requests the task waits for (input_required);
	// Asked lists every key ever asked (keys are unique over a task's life).
	Inputs map[string]*protocol.InputRequest `json:"inputs,omitempty"`
	Asked  []string                          `json:"asked,omitempty"`
	// Answers are the client's accepted input responses, kept until the
	// task ends: the worker reads them from here (WriteOp "answers"), so
	// a lost bus message loses nothing.
	Answers map[string]json.RawMessage `json:"answers,omitempty"`
	// Result (completed) or Error (failed) is the outcome.
	Result json.RawMessage `json:"result,omitempty"`
	Error  *protocol.Error `json:"error,omitempty"`
	// Legacy marks a 2025-11-25 task: a tool result with isError makes
	// it failed (the result is kept for tasks/result), and it belongs to
	// its session (Principal "session:<id>").
	Legacy bool `json:"legacy,omitempty"`
}

// SessionPrincipal is the principal of a legacy session's tasks.
func SessionPrincipal(session string) string { return "session:" + session }

// NewID returns a task id: 128 random bits, base64url (header-safe).
func NewID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// New returns a working task record owned by principal, run by worker.
func New(id, principal, worker string, now time.Time, ttl time.Duration) *Record {
	ms := ttl.Milliseconds()
	ts := protocol.TaskTime(now)
	return &Record{
		Task: protocol.Task{
			TaskID: id, Status: protocol.TaskWorking, CreatedAt: ts, LastUpdatedAt: ts,
			TTLMs: &ms, PollIntervalMs: DefaultPollInterval.Milliseconds(),
		},
		Principal: principal, Worker: worker,
	}
}

// Key is the store key of task id.
func Key(id string) string { return "task:" + id }

// Create stores a new record for its TTL.
func Create(ctx context.Context, st Store, r *Record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	ttl := DefaultTTL
	if r.TTLMs != nil {
		ttl = time.Duration(*r.TTLMs) * time.Millisecond
	}
	return st.CreateRecord(ctx, Key(r.TaskID), b, ttl)
}

// Get returns the task id as principal sees it: ErrNotFound when it does
// not exist, expired, or belongs to another principal.
func Get(ctx context.Context, st Store, id, principal string) (*Record, int64, error) {
	b, ver, err := st.GetRecord(ctx, Key(id))
	if errors.Is(err, sessionstore.ErrNotFound) {
		return nil, 0, ErrNotFound
	}
	if err != nil {
		return nil, 0, err
	}
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, 0, fmt.Errorf("tasks: malformed record %s: %w", id, err)
	}
	if r.Principal != principal {
		return nil, 0, ErrNotFound
	}
	return &r, ver, nil
}

// Update applies change to the task's record with compare-and-set, until
// it lands or change declines (returns false: nothing to write). It returns
// the record as stored afterwards.
func Update(ctx context.Context, st Store, id, principal string, change func(*Record) bool) (*Record, error) {
	for attempt := 0; ; attempt++ {
		r, ver, err := Get(ctx, st, id, principal)
		if err != nil {
			return nil, err
		}
		if !change(r) {
			return r, nil
		}
		b, err := json.Marshal(r)
		if err != nil {
			return nil, err
		}
		err = st.SetRecord(ctx, Key(id), ver, b)
		switch {
		case err == nil:
			return r, nil
		case errors.Is(err, sessionstore.ErrNotFound):
			return nil, ErrNotFound
		case errors.Is(err, sessionstore.ErrConflict) && attempt < 100:
			continue
		default:
			return nil, err
		}
	}
}

// touch sets LastUpdatedAt.
func (r *Record) touch(now time.Time) { r.LastUpdatedAt = protocol.TaskTime(now) }

// AskInputs moves a live task to input_required with reqs added to what
// it waits for. It returns false (no change) for a terminal task.
func (r *Record) AskInputs(reqs map[string]*protocol.InputRequest, now time.Time) bool {
	if r.Status.Terminal() {
		return false
	}
	if r.Inputs == nil {
		r.Inputs = map[string]*protocol.InputRequest{}
	}
	for k, v := range reqs {
		r.Inputs[k] = v
		r.Asked = append(r.Asked, k)
	}
	r.Status = protocol.TaskInputRequired
	r.touch(now)
	return true
}

// Answer takes the responses to keys the task waits for (others are
// ignored), back to working once nothing is outstanding. It returns the
// accepted responses (nil: no change).
func (r *Record) Answer(responses map[string]json.RawMessage, now time.Time) map[string]json.RawMessage {
	if r.Status != protocol.TaskInputRequired {
		return nil
	}
	var accepted map[string]json.RawMessage
	for k, v := range responses {
		if _, ok := r.Inputs[k]; !ok || len(v) == 0 || v[0] != '{' {
			continue
		}
		if accepted == nil {
			accepted = map[string]json.RawMessage{}
		}
		accepted[k] = v
		delete(r.Inputs, k)
		if r.Answers == nil {
			r.Answers = map[string]json.RawMessage{}
		}
		r.Answers[k] = v
	}
	if accepted == nil {
		return nil
	}
	if len(r.Inputs) == 0 {
		r.Inputs = nil
		r.Status = protocol.TaskWorking
	}
	r.touch(now)
	return accepted
}

// Finish records the outcome of a live task: completed with result, or
// failed with e. A terminal task is left as it is (false).
func (r *Record) Finish(result json.RawMessage, e *protocol.Error, now time.Time) bool {
	if r.Status.Terminal() {
		return false
	}
	r.Inputs, r.Answers = nil, nil
	if e != nil {
		r.Status, r.Error, r.Result = protocol.TaskFailed, e, nil
		r.StatusMessage = e.Message
	} else {
		r.Status, r.Result = protocol.TaskCompleted, result
		var tr struct {
			IsError bool `json:"isError"`
		}
		if r.Legacy && json.Unmarshal(result, &tr) == nil && tr.IsError {
			r.Status, r.StatusMessage = protocol.TaskFailed, "the tool reported an error"
		}
	}
	r.touch(now)
	return true
}

// Cancel moves a live task to cancelled (false for a terminal one).
func (r *Record) Cancel(now time.Time) bool {
	if r.Status.Terminal() {
		return false
	}
	r.Status, r.Inputs, r.Answers = protocol.TaskCancelled, nil, nil
	r.StatusMessage = "cancelled by the client"
	r.touch(now)
	return true
}

// GetResult is the record as tasks/get answers it.
func (r *Record) GetResult() *protocol.GetTaskResult {
	res := &protocol.GetTaskResult{Task: r.Task}
	res.ResultType = protocol.ResultTypeComplete
	switch r.Status {
	case protocol.TaskInputRequired:
		res.InputRequests = maps.Clone(r.Inputs)
	case protocol.TaskCompleted:
		res.Result = r.Result
	case protocol.TaskFailed:
		res.Error = r.Error
	}
	return res
}

// CreateResult is the record as the tools/call that created it answers.
func (r *Record) CreateResult() *protocol.CreateTaskResult {
	res := &protocol.CreateTaskResult{Task: r.Task}
	res.ResultType = protocol.ResultTypeTask
	return res
}

// WriteOp is a task change a worker sends on bus.Subjects.TaskWrite.
type WriteOp struct {
	Op string `json:"op"` // "create", "inputs" or "finish"
	// Record is the new task (create).
	Record *Record `json:"record,omitempty"`
	// ID and Principal name the task (inputs, finish).
	ID        string `json:"id,omitempty"`
	Principal string `json:"principal,omitempty"`
	// Inputs are the input requests to add (inputs).
	Inputs map[string]*protocol.InputRequest `json:"inputs,omitempty"`
	// Result or Error is the outcome (finish).
	Result json.RawMessage `json:"result,omitempty"`
	Error  *protocol.Error `json:"error,omitempty"`
	// Keys are the input keys whose answers the worker reads (answers).
	Keys []string `json:"keys,omitempty"`
}

// WriteReply answers a WriteOp: Error is empty on success. Terminal is set
// when the task is already over (an inputs or finish op changed nothing).
type WriteReply struct {
	Error    string `json:"error,omitempty"`
	Terminal bool   `json:"terminal,omitempty"`
	// Responses are the answers found for an answers op's keys.
	Responses map[string]json.RawMessage `json:"responses,omitempty"`
}

// Apply carries out op on the store. It returns the record as stored when
// op changed it (nil otherwise).
func Apply(ctx context.Context, st Store, op *WriteOp, now time.Time) (WriteReply, *Record) {
	var (
		err     error
		rec     *Record
		changed bool
	)
	terminal := false
	switch op.Op {
	case "create":
		if op.Record == nil {
			return WriteReply{Error: "create without a record"}, nil
		}
		err = Create(ctx, st, op.Record)
		switch {
		case err == nil:
			rec, changed = op.Record, true
			if s := op.Record.SessionOf(); s != "" {
				err = AddToIndex(ctx, st, s, op.Record.TaskID)
			}
		case errors.Is(err, sessionstore.ErrExists):
			err = nil // a retried create: the first one landed
		}
	case "answers":
		r, _, gerr := Get(ctx, st, op.ID, op.Principal)
		if gerr != nil {
			return WriteReply{Error: gerr.Error()}, nil
		}
		reply := WriteReply{Terminal: r.Status.Terminal()}
		for _, k := range op.Keys {
			if a, ok := r.Answers[k]; ok {
				if reply.Responses == nil {
					reply.Responses = map[string]json.RawMessage{}
				}
				reply.Responses[k] = a
			}
		}
		return reply, nil
	case "inputs":
		rec, err = Update(ctx, st, op.ID, op.Principal, func(r *Record) bool {
			changed = r.AskInputs(op.Inputs, now)
			terminal = !changed
			return changed
		})
	case "finish":
		rec, err = Update(ctx, st, op.ID, op.Principal, func(r *Record) bool {
			changed = r.Finish(op.Result, op.Error, now)
			terminal = !changed
			return changed
		})
	default:
		return WriteReply{Error: fmt.Sprintf("unknown op %q", op.Op)}, nil
	}
	if err != nil {
		return WriteReply{Error: err.Error()}, nil
	}
	if !changed {
		rec = nil
	}
	return WriteReply{Terminal: terminal}, rec
}

// Event is the params of notifications/tasks for the record: the task as
// tasks/get describes it, without resultType.
func (r *Record) Event() []byte {
	g := r.GetResult()
	g.ResultType = ""
	b, _ := json.Marshal(g)
	return b
}

// Control is what a frontend sends the worker running a task on
// bus.Subjects.TaskControl.
type Control struct {
	Op string `json:"op"` // "input", "cancel" or "ping"
	// Responses are accepted input responses (input).
	Responses map[string]json.RawMessage `json:"responses,omitempty"`
}

// The tasks of a legacy session, for tasks/list: a record listing their
// ids in creation order (the most recent maxIndexed).

const maxIndexed = 1000

// IndexKey is the store key of session's task index.
func IndexKey(session string) string { return "tasks-of:" + session }

// SessionOf returns the session a legacy task belongs to ("" for others).
func (r *Record) SessionOf() string {
	s, ok := strings.CutPrefix(r.Principal, "session:")
	if !r.Legacy || !ok {
		return ""
	}
	return s
}

// AddToIndex records task id in session's index.
func AddToIndex(ctx context.Context, st Store, session, id string) error {
	for attempt := 0; attempt < 100; attempt++ {
		b, ver, err := st.GetRecord(ctx, IndexKey(session))
		if errors.Is(err, sessionstore.ErrNotFound) {
			data, _ := json.Marshal([]string{id})
			err = st.CreateRecord(ctx, IndexKey(session), data, DefaultTTL)
			if errors.Is(err, sessionstore.ErrExists) {
				continue
			}
			return err
		}
		if err != nil {
			return err
		}
		var ids []string
		_ = json.Unmarshal(b, &ids)
		ids = append(ids, id)
		if len(ids) > maxIndexed {
			ids = ids[len(ids)-maxIndexed:]
		}
		data, _ := json.Marshal(ids)
		err = st.SetRecord(ctx, IndexKey(session), ver, data)
		if errors.Is(err, sessionstore.ErrConflict) || errors.Is(err, sessionstore.ErrNotFound) {
			continue
		}
		return err
	}
	return errors.New("tasks: index: too many concurrent updates")
}

// Indexed returns the ids in session's index, oldest first.
func Indexed(ctx context.Context, st Store, session string) ([]string, error) {
	b, _, err := st.GetRecord(ctx, IndexKey(session))
	if errors.Is(err, sessionstore.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var ids []string
	if err := json.Unmarshal(b, &ids); err != nil {
		return nil, fmt.Errorf("tasks: malformed index: %w", err)
	}
	return ids, nil
}
