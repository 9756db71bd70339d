package sessionstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// The calls whose script must be given keys that only the session's data
// names: the event logs and once sets of the streams listed in streams,
// and the claim keys listed in rq (see the rule in redis_scripts.go). The
// Go side names them from what an earlier round trip read; the script,
// atomic on the server, checks that nothing it must touch is missing
// from KEYS, and when something is (it changed in between), changes
// nothing and names it, for another run with it declared too.

// maxDeclareTries bounds the runs of such a script. A run fails only if
// streams or claims were added to the session since the previous one, in
// the gap of one round trip, so a few are plenty; past them the call
// fails (errKeysChanging) and changed nothing.
const maxDeclareTries = 8

var errKeysChanging = errors.New("the session's streams or claims kept changing; retry")

// runDropping runs script, create.lua or delete.lua (they share
// lua/lib_dropsession.lua), for session id with its own arguments args,
// until it no longer reports undeclared leftovers, and returns its
// integer reply. The first run names none: a session without streams or
// claims (Create of a new id) takes one round trip, others two.
func (r *Redis) runDropping(ctx context.Context, script *redis.Script, id string, args ...any) (int64, error) {
	base, logPrefix := r.keys(id)
	claims := r.claimsKey(id)
	var streams, members []string
	for range maxDeclareTries {
		keys := append(base[:3:3], claims)
		for _, s := range streams {
			keys = append(keys, logPrefix+s, r.onceKey(id, s))
		}
		for _, m := range members {
			keys = append(keys, claims+":"+m)
		}
		argv := make([]any, 0, 2+len(streams)+len(members)+len(args))
		argv = append(argv, len(streams), len(members))
		for _, s := range streams {
			argv = append(argv, s)
		}
		for _, m := range members {
			argv = append(argv, m)
		}
		argv = append(argv, args...)
		reply, err := r.run(ctx, script, keys, argv...).Result()
		if err != nil {
			return 0, err
		}
		switch v := reply.(type) {
		case int64:
			return v, nil
		case []any:
			ms, mm, ok := twoNameLists(v)
			if !ok || len(ms)+len(mm) == 0 {
				return 0, fmt.Errorf("malformed reply %v", v)
			}
			streams, members = append(streams, ms...), append(members, mm...)
		default:
			return 0, fmt.Errorf("malformed reply of type %T", reply)
		}
	}
	return 0, errKeysChanging
}

// sweep runs lua/sweep.lua on session id after the first append to
// stream, given the names of the other streams whose keys it needs (from
// append.lua's reply), and again with those it reports undeclared.
func (r *Redis) sweep(ctx context.Context, id, stream string, names []string) error {
	base, logPrefix := r.keys(id)
	for range maxDeclareTries {
		keys := make([]string, 0, 1+2*len(names))
		argv := make([]any, 0, 2+len(names))
		keys = append(keys, base[2])
		argv = append(argv, r.maxStrms, stream)
		for _, s := range names {
			keys = append(keys, logPrefix+s, r.onceKey(id, s))
			argv = append(argv, s)
		}
		reply, err := r.run(ctx, scriptSweep, keys, argv...).Result()
		if err != nil {
			return err
		}
		v, ok := reply.([]any)
		if !ok {
			return fmt.Errorf("malformed sweep reply of type %T", reply)
		}
		if len(v) == 0 {
			return nil
		}
		more, ok := nameList(v)
		if !ok {
			return fmt.Errorf("malformed sweep reply %v", v)
		}
		names = append(names, more...)
	}
	return errKeysChanging
}

// nameList converts a reply that is a list of strings.
func nameList(v []any) ([]string, bool) {
	out := make([]string, len(v))
	for i, x := range v {
		s, ok := x.(string)
		if !ok {
			return nil, false
		}
		out[i] = s
	}
	return out, true
}

// twoNameLists converts the {streams, members} reply of lib_dropsession.
func twoNameLists(v []any) (streams, members []string, ok bool) {
	if len(v) != 2 {
		return nil, nil, false
	}
	a, ok1 := v[0].([]any)
	b, ok2 := v[1].([]any)
	if !ok1 || !ok2 {
		return nil, nil, false
	}
	streams, ok1 = nameList(a)
	members, ok2 = nameList(b)
	return streams, members, ok1 && ok2
}
