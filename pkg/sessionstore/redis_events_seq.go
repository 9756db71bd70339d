package sessionstore

import (
	"context"
	"fmt"
	"strconv"
)

var scriptAppendSeq = loadScript("append_seq", "touch")

// AppendEventSeq implements [EventLog.AppendEventSeq]: one round trip
// (lua/append_seq.lua); the stream's last seq is kept next to its newest
// index in the session's streams hash.
func (r *Redis) AppendEventSeq(ctx context.Context, id, stream string, seq uint64, data []byte) (uint64, bool, error) {
	if !r.validID(id) {
		return 0, false, fmt.Errorf("sessionstore: append event %q: %w", shortID(id), ErrNotFound)
	}
	keys, logPrefix := r.keys(id)
	keys = append(keys, logPrefix+stream, r.onceKey(id, stream))
	if data == nil {
		data = []byte{}
	}
	idx, err := r.run(ctx, scriptAppendSeq, keys,
		r.slidMS, nowMilli().UnixMilli(), stream, data, r.trimFrom, strconv.FormatUint(seq, 10)).Int64()
	switch {
	case err != nil:
		return 0, false, fmt.Errorf("sessionstore: append event %q: %w", shortID(id), err)
	case idx == 0:
		return 0, false, fmt.Errorf("sessionstore: append event %q: %w", shortID(id), ErrNotFound)
	case idx < 0:
		return 0, false, nil
	}
	return uint64(idx), true, nil
}
