package shared

import (
	"context"
	"time"

	"github.com/zkrecipes/zkrecipes/session"
)

// Change is one value Changes delivers: the value and its node's version,
// or Err when the node's data could not be read as one (a Count's node
// that someone wrote other than 4 bytes to; the stream goes on).
type Change[T any] struct {
	Versioned[T]
	Err error
}

// rereadWait is how long Changes waits before reading again after a read
// failed with the connection up (the client's own retries come first);
// a (re)connection wakes it sooner.
const rereadWait = time.Second

// Changes returns a channel that receives the current value at once, then
// every value the node takes from now on that this client sees (several
// writes between two reads arrive as the last of them, as with Curator's
// listener), until ctx ends or the client is closed; then the channel is
// closed. It reads the node again on every (re)connection, so a change
// made while the session was down, or under a session that expired, is
// delivered (CURATOR-311). Read the channel: Changes waits for the reader.
func (v *Value) Changes(ctx context.Context) (<-chan Change[[]byte], error) {
	return follow(ctx, v, func(b []byte) ([]byte, error) { return b, nil })
}

// Changes is Value.Changes for the count.
func (c *Count) Changes(ctx context.Context) (<-chan Change[int], error) {
	return follow(ctx, c.v, c.decode)
}

// follow runs the watch loop of Changes, decoding with decode.
func follow[T any](ctx context.Context, v *Value, decode func([]byte) (T, error)) (<-chan Change[T], error) {
	// Subscribe first: a reconnection after the first read is then seen.
	states, err := v.c.Subscribe(ctx)
	if err != nil {
		return nil, err
	}
	out := make(chan Change[T])
	go func() {
		defer close(out)
		defer drain(states)
		var last *session.Stat
		// ev is the watch that stands on the node, nil when none does.
		// A reconnection to the same session keeps it (the client sets
		// it again on the server), so the read that follows sets no
		// other: each would pin a channel in the client and a goroutine
		// until the node next changes, one more per reconnection. A new
		// session ends it (NotWatching), and then a new one is set.
		var ev <-chan session.Event
		for {
			data, st, nev, err := v.read(ctx, ev == nil)
			if ev == nil {
				ev = nev
			}
			if err == nil && (last == nil || moved(last, st)) {
				last = st
				n, derr := decode(data)
				select {
				case out <- Change[T]{Versioned[T]{n, st.Version}, derr}:
				case <-ctx.Done():
					return
				}
			}
			again, fired := await(ctx, states, ev, err != nil)
			if !again {
				return
			}
			if fired {
				ev = nil
			}
		}
	}()
	return out, nil
}

// moved reports whether st is a later state of the node than last: created
// again (another czxid) or written since (a newer version, across the
// int32 wrap).
func moved(last, st *session.Stat) bool {
	return st.Czxid != last.Czxid || Newer(last.Version, st.Version)
}

// await waits until the node should be read again: its watch fired, the
// client (re)connected (to a new session, whose watches are gone, or to
// the same one after a disconnection), or, after a failed read, rereadWait
// passed. It returns again false when ctx ended or the client was
// closed, and fired true when the watch fired or ended.
func await(ctx context.Context, states <-chan session.StateChange, ev <-chan session.Event, failed bool) (again, fired bool) {
	var timer <-chan time.Time
	if failed {
		t := time.NewTimer(rereadWait)
		defer t.Stop()
		timer = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return false, false
		case <-ev:
			return true, true // fired, or ended (NotWatching, or closed with ctx): read again either way
		case <-timer:
			return true, false
		case s, ok := <-states:
			switch {
			case !ok || s.State == session.Closed:
				return false, false
			case s.State == session.Connected || s.State == session.Reconnected || s.State == session.ReadOnly:
				return true, false
			}
		}
	}
}

// drain reads states until it closes (after ctx ends or the client
// closes), so that the client's subscriber ends.
func drain(states <-chan session.StateChange) {
	for range states {
	}
}
