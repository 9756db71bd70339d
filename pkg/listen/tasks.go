package listen

import (
	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"github.com/nats-io/nats.go"
)

// Task status for listen streams (the tasks extension): a stream whose
// filter names task ids gets notifications/tasks each time one of them
// changes, from the bus (Subjects.TaskEvent), tagged with its subscription
// id. One NATS subscription per watched task id.

type taskEntry struct {
	sub     bus.Subscription
	listens map[*ListenStream]struct{}
}

// addTask and dropTask keep one subscription per watched task; the
// caller holds r.mu.
func (r *Registry) addTask(id string, l *ListenStream) error {
	e := r.tasks[id]
	if e == nil {
		sub, err := r.nc.Subscribe(r.opts.Subjects.TaskEvent(id), func(m *nats.Msg) { r.onTaskEvent(id, m.Data) })
		if err != nil {
			return err
		}
		e = &taskEntry{sub: sub, listens: map[*ListenStream]struct{}{}}
		r.tasks[id] = e
	}
	e.listens[l] = struct{}{}
	return nil
}

func (r *Registry) dropTask(id string, l *ListenStream) {
	e := r.tasks[id]
	if e == nil {
		return
	}
	delete(e.listens, l)
	if len(e.listens) == 0 {
		_ = e.sub.Unsubscribe()
		delete(r.tasks, id)
	}
}

// onTaskEvent delivers a task's state (params, a JSON object: the task
// as tasks/get describes it) to the streams watching it.
func (r *Registry) onTaskEvent(id string, params []byte) {
	if len(params) < 2 || params[0] != '{' {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.tasks[id]
	if e == nil {
		return
	}
	for l := range e.listens {
		r.offerListen(l, appendTaggedParams(nil, l.idJSON, protocol.NotificationTasks, params))
	}
}

// appendTaggedParams appends a notification whose params are obj (a
// non-empty JSON object) with the subscription id added to its _meta.
func appendTaggedParams(b, idJSON []byte, method string, obj []byte) []byte {
	b = append(b, `{"jsonrpc":"2.0","method":"`...)
	b = append(b, method...)
	b = append(b, `","params":{"_meta":{"`+protocol.MetaSubscriptionID+`":`...)
	b = append(b, idJSON...)
	b = append(b, '}')
	if len(obj) > 2 {
		b = append(b, ',')
	}
	b = append(b, obj[1:]...)
	return append(b, '}')
}
