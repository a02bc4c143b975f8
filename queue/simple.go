package queue

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/session"
)

// simplePrefix is the name of SimpleDistributedQueue's nodes (and
// kazoo's Queue's) before their sequence.
const simplePrefix = "qn-"

// SimpleQueue is Curator's SimpleDistributedQueue (ZooKeeper's own queue
// recipe, and kazoo's Queue): each item is one persistent sequential node
// qn-<seq10> holding its raw bytes, taken lowest sequence first. An item
// is deleted when it is taken: it is delivered at most once, and lost if
// its taker dies before it has handled it. It is safe for concurrent use.
type SimpleQueue struct {
	c    simpleConn
	path string
}

// simpleConn is what a SimpleQueue asks of its *session.Client; an
// internal test wraps one to change the tree between two requests.
type simpleConn interface {
	Create(ctx context.Context, path string, data []byte, mode session.CreateMode) (string, error)
	Children(ctx context.Context, path string) ([]string, *session.Stat, error)
	ChildrenW(ctx context.Context, path string) ([]string, *session.Stat, <-chan session.Event, error)
	ExistsW(ctx context.Context, path string) (bool, *session.Stat, <-chan session.Event, error)
	Get(ctx context.Context, path string) ([]byte, *session.Stat, error)
	Delete(ctx context.Context, path string, version int32) error
	Session(ctx context.Context) (*session.Session, error)
}

// NewSimple returns the simple queue at path on c. No I/O is done.
func NewSimple(c *session.Client, path string) (*SimpleQueue, error) {
	if c == nil {
		return nil, fmt.Errorf("%w: nil client", ErrInvalidArgument)
	}
	if err := session.ValidatePath(path); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidArgument, err)
	}
	return &SimpleQueue{c: c, path: path}, nil
}

// Offer puts data at the end of the queue and returns its node's path.
// It is a single create, never retried: after a connection loss it may
// or may not have been applied (session.IsRetryable).
func (q *SimpleQueue) Offer(ctx context.Context, data []byte) (string, error) {
	if err := recipes.CheckContext(ctx); err != nil {
		return "", fmt.Errorf("%w: %w", ErrInvalidArgument, err)
	}
	p, err := q.c.Create(ctx, session.JoinPath(q.path, simplePrefix), data, session.PersistentSequential)
	if err != nil {
		return "", fmt.Errorf("queue: offer on %s: %w", q.path, err)
	}
	return p, nil
}

// Peek returns the head's data without taking it; ErrEmpty when the
// queue has no item.
func (q *SimpleQueue) Peek(ctx context.Context) ([]byte, error) {
	data, _, err := q.head(ctx, false, false)
	return data, err
}

// Poll takes the head and returns its data; ErrEmpty when the queue has
// no item. A connection loss while deleting it is an error, and the item
// may or may not have been taken: it is not returned (at most once).
func (q *SimpleQueue) Poll(ctx context.Context) ([]byte, error) {
	data, _, err := q.head(ctx, true, false)
	return data, err
}

// Take takes the head, waiting for an item until ctx ends. It watches the
// queue's children while it waits and lists them again when the watch
// fires or its connection closes (after a long disconnection too).
// Session loss changes nothing for a waiting Take: nothing of it lives in
// the session.
func (q *SimpleQueue) Take(ctx context.Context) ([]byte, error) {
	if err := recipes.CheckContext(ctx); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidArgument, err)
	}
	for {
		wctx, stop := context.WithCancel(ctx)
		data, watch, err := q.head(wctx, true, true)
		switch {
		case err == nil:
			stop()
			return data, nil
		case errors.Is(err, ErrEmpty) && watch != nil:
			select {
			case <-watch:
			case <-ctx.Done():
			}
		case errors.Is(err, ErrEmpty) || session.IsRetryable(err):
			// No watch could be left: wait for a session and a pause.
			if _, serr := q.c.Session(ctx); serr == nil {
				t := time.NewTimer(retryFloor)
				select {
				case <-t.C:
				case <-ctx.Done():
				}
				t.Stop()
			}
		default:
			stop()
			return nil, err
		}
		stop()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("queue: take from %s: %w", q.path, context.Cause(ctx))
		}
	}
}

// head reads (and with take, deletes) the lowest item; with watch it
// leaves a watch on the children (on a queue path that does not exist, an
// exists watch), whose channel it returns.
func (q *SimpleQueue) head(ctx context.Context, take, watch bool) ([]byte, <-chan session.Event, error) {
	if err := recipes.CheckContext(ctx); err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrInvalidArgument, err)
	}
	kids, ch, err := q.list(ctx, watch)
	if err != nil {
		return nil, ch, err // ch: ErrEmpty's exists watch
	}
	slices.Sort(kids)
	for _, k := range kids {
		if !strings.HasPrefix(k, simplePrefix) {
			continue // a foreign node, left alone as Curator leaves it
		}
		p := session.JoinPath(q.path, k)
		data, _, err := q.c.Get(ctx, p)
		if errors.Is(err, session.ErrNoNode) {
			continue // another took it
		}
		if err != nil {
			return nil, ch, fmt.Errorf("queue: read %s: %w", p, err)
		}
		if take {
			err := q.c.Delete(ctx, p, -1)
			if errors.Is(err, session.ErrNoNode) {
				continue // another took it first
			}
			if err != nil {
				return nil, ch, fmt.Errorf("queue: take %s: %w", p, err)
			}
		}
		return data, ch, nil
	}
	return nil, ch, fmt.Errorf("%w: %s", ErrEmpty, q.path)
}

// list returns the queue's children; with watch it leaves a watch that
// fires on their next change, whose channel it returns. A queue path that
// does not exist is ErrEmpty, with watch an exists watch that fires when
// the path is made.
func (q *SimpleQueue) list(ctx context.Context, watch bool) ([]string, <-chan session.Event, error) {
	if !watch {
		kids, _, err := q.c.Children(ctx, q.path)
		return kids, nil, q.listed(err)
	}
	for {
		kids, _, ch, err := q.c.ChildrenW(ctx, q.path)
		if !errors.Is(err, session.ErrNoNode) {
			return kids, ch, q.listed(err)
		}
		ok, _, ch, err := q.c.ExistsW(ctx, q.path)
		if err != nil {
			return nil, nil, fmt.Errorf("queue: %s: %w", q.path, err)
		}
		if !ok {
			return nil, ch, fmt.Errorf("%w: %s", ErrEmpty, q.path)
		}
		// Made since the listing: the watch now on it fires on a change
		// of its data or its deletion, never on a child, so an item put
		// there would wake no one. List again, with a children watch.
	}
}

// listed is the error of a listing of the queue path.
func (q *SimpleQueue) listed(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, session.ErrNoNode):
		return fmt.Errorf("%w: %s", ErrEmpty, q.path)
	}
	return fmt.Errorf("queue: list %s: %w", q.path, err)
}
