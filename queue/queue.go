package queue

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/session"
)

// The errors of package queue; test them with errors.Is. ZooKeeper's own
// errors (session.ErrNoNode, ...) and the context's come wrapped.
var (
	// ErrInvalidArgument: bad input (nil context or client, invalid path,
	// a put that does not match the queue's Kind, an option value). It is
	// recipes.ErrInvalidArgument too.
	ErrInvalidArgument = fmt.Errorf("queue: %w", recipes.ErrInvalidArgument)
	// ErrEmpty: Poll or Peek of a SimpleQueue with no item.
	ErrEmpty = errors.New("queue: empty")
	// ErrCorrupt: a DistributedQueue node whose data is not Curator's item
	// envelope. A consumer logs it and deletes the node, as Curator does.
	ErrCorrupt = errors.New("queue: corrupt item node")
)

// ErrorMode is what a consumer with a lock path does with an item whose
// handler returned an error (Curator's ErrorMode).
type ErrorMode int

const (
	// Requeue puts the item back at the end of the queue, in one multi
	// with its removal (Curator's default, ErrorMode.REQUEUE). Every item
	// of a node put with several is delivered again.
	Requeue ErrorMode = iota
	// Drop deletes the item as if it had been processed (ErrorMode.DELETE).
	Drop
)

func (m ErrorMode) String() string {
	switch m {
	case Requeue:
		return "Requeue"
	case Drop:
		return "Drop"
	}
	return fmt.Sprintf("ErrorMode(%d)", int(m))
}

// Option configures New.
type Option func(*options) error

type options struct {
	kind      Kind
	lockPath  string
	errorMode ErrorMode
	onState   func(session.StateChange)
}

// WithKind sets the queue's Kind; the default is FIFO.
func WithKind(k Kind) Option {
	return func(o *options) error {
		if k < FIFO || k > ID {
			return fmt.Errorf("%w: unknown kind %d", ErrInvalidArgument, int(k))
		}
		o.kind = k
		return nil
	}
}

// WithLockPath makes consumption safe against a consumer that dies
// mid-item (Curator's QueueBuilder.lockPath): before it reads an item a
// consumer creates the ephemeral node <lockPath>/<item node name>, and it
// deletes the item only when its handler has returned, while its session
// is still trusted. An item whose consumer died (its session ended) stays
// in the queue and is delivered again. Without a lock path an item is
// deleted before its handler runs: delivered at most once, lost if the
// consumer dies while handling it.
func WithLockPath(p string) Option {
	return func(o *options) error {
		if err := session.ValidatePath(p); err != nil {
			return fmt.Errorf("%w: lock path: %w", ErrInvalidArgument, err)
		}
		o.lockPath = p
		return nil
	}
}

// WithErrorMode sets what a consumer does with an item whose handler
// failed; the default is Requeue. It needs WithLockPath (without a lock
// path the item is gone before the handler runs).
func WithErrorMode(m ErrorMode) Option {
	return func(o *options) error {
		if m != Requeue && m != Drop {
			return fmt.Errorf("%w: unknown error mode %d", ErrInvalidArgument, int(m))
		}
		o.errorMode = m
		return nil
	}
}

// WithStateFunc calls f, on Consume's goroutine of its own, with every
// change of the client's connection state while Consume runs (Curator's
// QueueConsumer.stateChanged): a consumer learns of a suspension or a
// lost session when it happens, also while no item is in hand.
func WithStateFunc(f func(session.StateChange)) Option {
	return func(o *options) error {
		if f == nil {
			return fmt.Errorf("%w: nil state func", ErrInvalidArgument)
		}
		o.onState = f
		return nil
	}
}

// Queue is one of Curator's DistributedQueue family on a path: producers
// put items (byte slices, one or several per node), consumers take them.
// It is safe for concurrent use.
type Queue struct {
	c    *session.Client
	path string
	opts options

	mu      sync.Mutex
	ensured bool // the queue (and lock) path are known to exist
}

// New returns the queue at path on c. No I/O is done; the queue path and
// the lock path are created (persistent, as Curator creates them) by the
// first put or Consume.
func New(c *session.Client, path string, opts ...Option) (*Queue, error) {
	if c == nil {
		return nil, fmt.Errorf("%w: nil client", ErrInvalidArgument)
	}
	if err := session.ValidatePath(path); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidArgument, err)
	}
	q := &Queue{c: c, path: path}
	for _, o := range opts {
		if o == nil {
			return nil, fmt.Errorf("%w: nil Option", ErrInvalidArgument)
		}
		if err := o(&q.opts); err != nil {
			return nil, err
		}
	}
	if q.opts.errorMode != Requeue && q.opts.lockPath == "" {
		return nil, fmt.Errorf("%w: an error mode needs a lock path", ErrInvalidArgument)
	}
	return q, nil
}

// Put puts items, in one node, at the end of a FIFO queue (Curator's put
// with one item, putMulti with several): a consumer gets them one after
// the other. It returns the node's path. Put is a single create, never
// retried: after a connection loss it may or may not have been applied
// (session.IsRetryable), and only the queue's contents can tell.
func (q *Queue) Put(ctx context.Context, items ...[]byte) (string, error) {
	return q.put(ctx, FIFO, itemPrefix, items)
}

// PutPriority puts items at priority on a Priority queue: lower numbers
// are taken first, equal ones in put order. As Put.
func (q *Queue) PutPriority(ctx context.Context, priority int32, items ...[]byte) (string, error) {
	return q.put(ctx, Priority, priorityName(priority), items)
}

// PutDelayed puts items on a Delay queue, not to be taken before due (by
// the consumer's clock, as Curator compares it). As Put.
func (q *Queue) PutDelayed(ctx context.Context, due time.Time, items ...[]byte) (string, error) {
	if due.UnixMilli() <= 0 {
		return "", fmt.Errorf("%w: due time %v is not after the epoch", ErrInvalidArgument, due)
	}
	return q.put(ctx, Delay, delayName(due), items)
}

// PutID puts items under id on an ID queue, for Remove. As Put.
func (q *Queue) PutID(ctx context.Context, id string, items ...[]byte) (string, error) {
	if id == "" {
		return "", fmt.Errorf("%w: empty id", ErrInvalidArgument)
	}
	return q.put(ctx, ID, idName(id), items)
}

func (q *Queue) put(ctx context.Context, kind Kind, name string, items [][]byte) (string, error) {
	if err := recipes.CheckContext(ctx); err != nil {
		return "", fmt.Errorf("%w: %w", ErrInvalidArgument, err)
	}
	if kind != q.opts.kind {
		return "", fmt.Errorf("%w: a %v put on a %v queue", ErrInvalidArgument, kind, q.opts.kind)
	}
	if len(items) == 0 {
		return "", fmt.Errorf("%w: no item", ErrInvalidArgument)
	}
	data, err := encodeItems(items)
	if err != nil {
		return "", err
	}
	if err := q.ensure(ctx); err != nil {
		return "", err
	}
	p, err := q.c.Create(ctx, session.JoinPath(q.path, name), data, session.PersistentSequential)
	if err != nil {
		return "", fmt.Errorf("queue: put on %s: %w", q.path, err)
	}
	return p, nil
}

// Remove deletes every item put with id on an ID queue that no consumer
// has taken yet, and returns how many nodes it deleted (Curator's
// DistributedIdQueue.remove). With a lock path it takes each item's lock
// node first, so that it never deletes an item a consumer is handling.
func (q *Queue) Remove(ctx context.Context, id string) (int, error) {
	if err := recipes.CheckContext(ctx); err != nil {
		return 0, fmt.Errorf("%w: %w", ErrInvalidArgument, err)
	}
	if q.opts.kind != ID {
		return 0, fmt.Errorf("%w: Remove on a %v queue", ErrInvalidArgument, q.opts.kind)
	}
	kids, _, err := q.c.Children(ctx, q.path)
	if errors.Is(err, session.ErrNoNode) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("queue: remove from %s: %w", q.path, err)
	}
	n, want := 0, fixID(id)
	for _, name := range ordered(ID, kids) {
		if got, _ := splitID(name); got != want {
			continue
		}
		ok, err := q.remove(ctx, name)
		if err != nil {
			return n, err
		}
		if ok {
			n++
		}
	}
	return n, nil
}

// remove deletes one item node, under its lock node when the queue has a
// lock path; false when another got it first.
func (q *Queue) remove(ctx context.Context, name string) (bool, error) {
	item := session.JoinPath(q.path, name)
	if q.opts.lockPath == "" {
		err := q.c.Delete(ctx, item, -1)
		if errors.Is(err, session.ErrNoNode) {
			return false, nil
		}
		return err == nil, err
	}
	sess, err := q.c.Session(ctx)
	if err != nil {
		return false, fmt.Errorf("queue: remove %s: %w", item, err)
	}
	lock := session.JoinPath(q.opts.lockPath, name)
	release, err := q.acquire(ctx, sess, lock)
	if err != nil {
		if errors.Is(err, session.ErrNodeExists) {
			return false, nil
		}
		return false, fmt.Errorf("queue: remove %s: %w", item, err)
	}
	defer q.unlock(ctx, lock, release)
	err = q.c.Delete(ctx, item, -1)
	if errors.Is(err, session.ErrNoNode) {
		return false, nil
	}
	return err == nil, err
}

// ensure creates the queue path and the lock path, persistent, when this
// Queue has not seen them yet. Curator's consumers need both to be there
// (a lock path deleted by the server as an empty container would fail
// every Java consumer's lock create), so neither is made a container.
func (q *Queue) ensure(ctx context.Context) error {
	q.mu.Lock()
	done := q.ensured
	q.mu.Unlock()
	if done {
		return nil
	}
	for _, p := range []string{q.path, q.opts.lockPath} {
		if p == "" {
			continue
		}
		if _, err := q.c.Create(ctx, p, nil, session.Persistent); err != nil && !errors.Is(err, session.ErrNodeExists) {
			return fmt.Errorf("queue: create %s: %w", p, err)
		}
	}
	q.mu.Lock()
	q.ensured = true
	q.mu.Unlock()
	return nil
}
