package stream

import (
	"context"
	"strings"

	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"github.com/mcpfleet/mcpfleet/pkg/sessionstore"
)

// list_changed on legacy GET streams. Each frontend raises list_changed
// from the worker announcements it sees, so only the frontend holding a
// session's GET stream logs it; one raised while no frontend holds the
// stream would be lost. So a GET log remembers which lists its client
// was told about, as keys of its events ("lc:<kind>:<digest>", the
// digest of the list: Options.ListDigest): the holder logs each
// list_changed under the key of the list it announces, a new GET stream
// logs a marker under the keys of the lists it starts with, and a resumed
// one logs a list_changed for each kind whose current list's key the log
// does not have (a change nobody announced), before it replays. Keys make
// each of these once per list state, whoever logs it.

// markLists is the data of a key-only marker: the lists a stream started
// with (skipped by the relays like any marker).
const markLists = "\x00lists"

var listKinds = [...]string{"tools", "prompts", "resources"}

func listKey(kind, digest string) string { return "lc:" + kind + ":" + digest }

// listChangedMsg is notifications/<kind>/list_changed.
func listChangedMsg(kind string) []byte {
	n, _ := protocol.EncodeNotification("notifications/"+kind+"/list_changed", nil)
	return n
}

// noteLists logs, for each list kind, its current key in the session's
// GET log: as a marker (a new stream: the client starts from these lists)
// or as a list_changed (a resumed stream: the client is told about lists
// it was not told about). Best effort: a failure only loses the catch-up.
func (s *Streams) noteLists(ctx context.Context, session string, notify bool) {
	if s.opts.ListDigest == nil {
		return
	}
	var batch []sessionstore.OnceAppend
	for _, k := range listKinds {
		d := s.opts.ListDigest(k)
		if d == "" {
			continue
		}
		data := []byte(markLists)
		if notify {
			data = listChangedMsg(k)
		}
		batch = append(batch, sessionstore.OnceAppend{Session: session, Stream: bus.SessionLog, Key: listKey(k, d), Data: data})
	}
	if len(batch) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	if _, err := s.opts.Events.AppendOnce(ctx, batch); err != nil {
		s.log.WarnContext(ctx, "frontend: noting a GET log's lists", "err", err)
	}
}

// logListChanged logs a list_changed this frontend raised for its GET
// stream of session: under the key of the list it announces, or plainly
// when that key is in the log already (the list came back to a state
// announced before: the client is told again). It returns the event's
// index; ok is false when the store failed.
func (s *Streams) logListChanged(session string, msg []byte) (uint64, bool) {
	key := ""
	if kind := listKindOf(msg); kind != "" && s.opts.ListDigest != nil {
		if d := s.opts.ListDigest(kind); d != "" {
			key = listKey(kind, d)
		}
	}
	if key == "" {
		return s.logEvent(session, bus.SessionLog, msg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	res, err := s.opts.Events.AppendOnce(ctx, []sessionstore.OnceAppend{{Session: session, Stream: bus.SessionLog, Key: key, Data: msg}})
	if err != nil || len(res) != 1 {
		s.log.Warn("frontend: logging a list_changed", "err", err)
		return 0, false
	}
	if res[0].Status == sessionstore.Appended {
		return res[0].Index, true
	}
	return s.logEvent(session, bus.SessionLog, msg)
}

// listKindOf returns the kind of a notifications/<kind>/list_changed
// ("" for another message).
func listKindOf(msg []byte) string {
	m, err := protocol.Decode(msg, 0)
	if err != nil {
		return ""
	}
	k, ok := strings.CutPrefix(m.Method, "notifications/")
	if !ok {
		return ""
	}
	k, ok = strings.CutSuffix(k, "/list_changed")
	if !ok {
		return ""
	}
	for _, x := range listKinds {
		if x == k {
			return k
		}
	}
	return ""
}
