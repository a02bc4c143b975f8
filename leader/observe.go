package leader

import (
	"context"
	"errors"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/session"
)

// Leader is who leads an election, as an observer sees it. The zero Leader
// (no Node) means there is no leader.
type Leader struct {
	ID        string // the leader's participant id (its node's data)
	Node      string // the path of the leader's node (without the client's namespace), as znode.Revoke takes it
	SessionID int64  // the session that owns it
}

// None reports that there is no leader.
func (l Leader) None() bool { return l.Node == "" }

// Leader returns the current leader of the election, or the zero Leader
// when there is none. Observers need not be participants: any Election at
// the path, or Observe, sees the same.
func (e *Election) Leader(ctx context.Context) (Leader, error) {
	lead, _, err := e.leader(ctx, false)
	return lead, err
}

// leader reads the leader, with a watch on the children (or, when the
// path does not exist, on its creation) if watch is set.
func (e *Election) leader(ctx context.Context, watch bool) (Leader, <-chan session.Event, error) {
	for {
		var names []string
		var ev <-chan session.Event
		var err error
		if watch {
			names, _, ev, err = e.c.ChildrenW(ctx, e.path)
		} else {
			names, _, err = e.c.Children(ctx, e.path)
		}
		if errors.Is(err, session.ErrNoNode) {
			if !watch {
				return Leader{}, nil, nil
			}
			ok, _, ev, err := e.c.ExistsW(ctx, e.path)
			if err != nil || !ok {
				return Leader{}, ev, err
			}
			continue // created meanwhile
		}
		if err != nil {
			return Leader{}, nil, err
		}
		kids := engine.SortChildren(names, e.name)
		if len(kids) == 0 {
			return Leader{}, ev, nil
		}
		node := session.JoinPath(e.path, kids[0].Name)
		data, st, err := e.c.Get(ctx, node)
		if errors.Is(err, session.ErrNoNode) {
			continue // the leader left meanwhile: look again
		}
		if err != nil {
			return Leader{}, nil, err
		}
		return Leader{ID: string(data), Node: node, SessionID: st.EphemeralOwner}, ev, nil
	}
}

// observeRetry is the pause after an error while observing.
const observeRetry = 500 * time.Millisecond

// Observe sends the current leader, then every change of leader (the zero
// Leader when there is none), until ctx ends or the client is closed; then
// the channel closes. A slow reader sees only the latest leader: changes are
// not queued. Other errors (a lost connection) are retried; the observation
// goes on under the client's next session.
func (e *Election) Observe(ctx context.Context) <-chan Leader {
	out := make(chan Leader, 1)
	go func() {
		defer close(out)
		var last Leader
		first := true
		for ctx.Err() == nil {
			lead, ev, err := e.leader(ctx, true)
			if errors.Is(err, session.ErrClosed) {
				return
			}
			if err != nil {
				select {
				case <-ctx.Done():
				case <-time.After(observeRetry):
				}
				continue
			}
			if first || lead != last {
				first, last = false, lead
				select { // keep only the latest
				case <-out:
				default:
				}
				out <- lead
			}
			select {
			case <-ev:
			case <-ctx.Done():
			}
		}
	}()
	return out
}
