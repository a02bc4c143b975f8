package nodes

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/session"
)

// TTLChild is the name of the child that keeps a TTLNode alive (Curator's
// PersistentTtlNode.DEFAULT_CHILD_NODE_NAME).
const TTLChild = "touch"

// touchFactor: the child is touched every ttl/touchFactor (Curator's
// DEFAULT_TOUCH_SCHEDULE_FACTOR), so one missed touch does not let it
// lapse.
const touchFactor = 2

// TTLNode is Curator's PersistentTtlNode: a node of mode
// session.PersistentWithTTL at path, kept as a Persistent, holding data,
// with a child "touch" of the same mode written every ttl/2. While this
// process runs, the node stays; after Close (or the process's end) no
// write touches the child, the server deletes it ttl later, and the node
// then. (Curator 5.4 made the node a container, which the server never
// deletes if its child was never made: a process that died before its
// first touch, or a server that refuses TTL nodes, left it for ever;
// Curator later made it a TTL node too, apache/curator#1260.) The
// same path may be kept by several processes at once: the node lives as
// long as one of them does. The server must run with
// zookeeper.extendedTypesEnabled=true; on one that does not, every wait
// returns an ErrCannotCreate error that is also session.ErrTTLDisabled.
// On session loss the node is not deleted (nothing of it is ephemeral):
// the touches resume with the next session.
type TTLNode struct {
	node  *Persistent
	c     *session.Client
	child string
	ttl   time.Duration
	stop  context.CancelFunc
	done  chan struct{}

	mu      sync.Mutex
	touched chan struct{} // closed at the first touch
	fatal   error
	changed chan struct{}
}

// NewTTL starts keeping a TTL node at path (see TTLNode); no I/O on the
// caller's goroutine. ttl is at least 2 ms; bad input is an
// ErrInvalidArgument error.
func NewTTL(c *session.Client, path string, ttl time.Duration, data []byte) (*TTLNode, error) {
	if ttl < touchFactor*time.Millisecond || ttl > session.MaxTTL {
		return nil, fmt.Errorf("%w: TTL %v (want %v to %v)", ErrInvalidArgument, ttl, touchFactor*time.Millisecond, session.MaxTTL)
	}
	node, err := newPersistent(c, path, session.PersistentWithTTL, data, true, WithTTL(ttl))
	if err != nil {
		return nil, err
	}
	ctx, stop := context.WithCancel(context.Background())
	t := &TTLNode{node: node, c: c, child: session.JoinPath(path, TTLChild), ttl: ttl, stop: stop,
		done: make(chan struct{}), touched: make(chan struct{}), changed: make(chan struct{})}
	go t.run(ctx)
	return t, nil
}

// Node is the TTL node kept at the path.
func (t *TTLNode) Node() *Persistent { return t.node }

// WaitForInitialCreate waits until the node is made and its child first
// touched. It returns an ErrCannotCreate error when the server refuses TTL
// nodes, ErrClosed after Close, and ctx's error when ctx ends first.
func (t *TTLNode) WaitForInitialCreate(ctx context.Context) error {
	if err := t.node.WaitForInitialCreate(ctx); err != nil {
		return err
	}
	for {
		t.mu.Lock()
		fatal, changed := t.fatal, t.changed
		t.mu.Unlock()
		if fatal != nil {
			return fatal
		}
		select {
		case <-t.touched:
			return nil
		case <-changed:
		case <-t.done:
			return ErrClosed
		case <-ctx.Done():
			return fmt.Errorf("nodes: waiting for %s: %w", t.child, context.Cause(ctx))
		}
	}
}

// SetData changes the node's data: see Persistent.SetData.
func (t *TTLNode) SetData(ctx context.Context, data []byte) error { return t.node.SetData(ctx, data) }

// Close stops the touches and the keeping of the node; it does not delete
// it (the server does, ttl later, when no other process keeps it).
func (t *TTLNode) Close(ctx context.Context) error {
	if err := recipes.CheckContext(ctx); err != nil {
		return fmt.Errorf("nodes: %w", err)
	}
	t.stop()
	<-t.done
	return t.node.Close(ctx)
}

// run touches the child at once once the node is in place, then every
// ttl/touchFactor, until Close.
func (t *TTLNode) run(ctx context.Context) {
	defer close(t.done)
	tick := time.NewTicker(t.ttl / touchFactor)
	defer tick.Stop()
	for {
		p, err := t.node.Placed(ctx)
		if err != nil {
			return // closed, or refused for good (the node's waits say so)
		}
		if err := t.touch(p.Context()); err != nil {
			if errors.Is(err, session.ErrTTLDisabled) || errors.Is(err, recipes.ErrRefused) {
				t.mu.Lock()
				t.fatal = fmt.Errorf("%w: %s: %w", ErrCannotCreate, t.child, err)
				close(t.changed)
				t.changed = make(chan struct{})
				t.mu.Unlock()
				return
			}
			t.c.Logger().Debug("nodes: touching a TTL node failed", "path", t.child, "err", err)
		} else {
			t.mu.Lock()
			select {
			case <-t.touched:
			default:
				close(t.touched)
			}
			t.mu.Unlock()
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return
		}
	}
}

// touch writes the child, or makes it (Curator's setData, then
// create().orSetData()).
func (t *TTLNode) touch(ctx context.Context) error {
	_, err := t.c.Set(ctx, t.child, nil, -1)
	if !errors.Is(err, session.ErrNoNode) {
		return err
	}
	_, err = t.c.CreateTTL(ctx, t.child, nil, session.PersistentWithTTL, t.ttl)
	if errors.Is(err, session.ErrNodeExists) {
		_, err = t.c.Set(ctx, t.child, nil, -1)
	}
	return err
}
