package counter

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/session"
)

// Sentinels of the package, wrapped with %w.
var (
	// ErrNotApplied: the change was not made (other writers won every
	// try, or CompareAndSet found another value). The node is as another
	// writer left it; Result.Pre is the value last read.
	ErrNotApplied = errors.New("counter: not applied")
	// ErrOutcomeUnknown: the write was sent and its reply never came (the
	// connection or session was lost, or ctx ended meanwhile): it may or
	// may not have been applied, and it was not tried again. Read the
	// value to know.
	ErrOutcomeUnknown = errors.New("counter: outcome unknown")
	// ErrBadData: the node holds bytes that are not a value of the
	// counter's kind (not 8 bytes for a Long, not 4 for an Int).
	ErrBadData = errors.New("counter: node does not hold a value of this kind")
)

// Result is a change: the value read before it and the value written
// (Curator's AtomicValue preValue and postValue). With ErrNotApplied,
// Post is what was not written; with ErrOutcomeUnknown, what may have
// been.
type Result[T any] struct {
	Pre, Post T
}

// DefaultRetry is the optimistic retry policy: up to 10 more tries after
// the first, 10ms to 500ms apart (with jitter), within 5 seconds: short,
// since a try lost to another writer is a round trip, not a fault, and
// jittered, so that contending writers spread out. (Curator has no
// default: its caller passes a RetryPolicy.)
var DefaultRetry session.RetryPolicy = session.ExponentialBackoff{
	Base:       10 * time.Millisecond,
	Cap:        500 * time.Millisecond,
	MaxRetries: 10,
	MaxElapsed: 5 * time.Second,
}

// Option configures NewLong, NewInt and NewValue.
type Option func(*options)

type options struct {
	retry     session.RetryPolicy
	lockPath  string
	lockRetry session.RetryPolicy
}

// WithRetry sets the policy of the optimistic tries (default
// DefaultRetry; session.NoRetry tries once, then goes to the lock if
// there is one).
func WithRetry(p session.RetryPolicy) Option { return func(o *options) { o.retry = p } }

// WithLock promotes a change that the optimistic tries could not make to
// a lock: an InterProcessMutex at lockPath (a path of its own, not the
// counter's), under which the change is tried again under DefaultRetry,
// or retry when given (Curator's PromotedToLock and its retry policy).
// Writers that hold the lock still race the optimistic tries of those
// that do not: with session.NoRetry as WithRetry, each other writer makes
// one optimistic try before it queues for the lock, so the holder loses
// at most once to each. Without WithLock, the optimistic tries are all.
func WithLock(lockPath string, retry ...session.RetryPolicy) Option {
	return func(o *options) {
		o.lockPath = lockPath
		if len(retry) > 0 {
			o.lockRetry = retry[0]
		}
	}
}

// engine changes the bytes of one node: Curator's DistributedAtomicValue.
type engine struct {
	c         *session.Client
	path      string
	retry     session.RetryPolicy
	lock      *mutex.Mutex // nil: optimistic only
	lockRetry session.RetryPolicy
}

func newEngine(what string, c *session.Client, path string, opts []Option) (*engine, error) {
	if c == nil {
		return nil, fmt.Errorf("counter: %s: %w: nil session client", what, recipes.ErrInvalidArgument)
	}
	if err := session.ValidatePath(path); err != nil {
		return nil, fmt.Errorf("counter: %s: %w", what, err)
	}
	o := options{retry: DefaultRetry}
	for _, opt := range opts {
		if opt == nil {
			return nil, fmt.Errorf("counter: %s: %w: nil Option", what, recipes.ErrInvalidArgument)
		}
		opt(&o)
	}
	if o.retry == nil {
		return nil, fmt.Errorf("counter: %s: %w: nil retry policy", what, recipes.ErrInvalidArgument)
	}
	e := &engine{c: c, path: path, retry: o.retry, lockRetry: o.lockRetry}
	if e.lockRetry == nil {
		e.lockRetry = DefaultRetry
	}
	if o.lockPath != "" {
		if o.lockPath == path {
			// The mutex's nodes would be children of the counter's node
			// and its data the count: Curator's lock path is another.
			return nil, fmt.Errorf("counter: %s: %w: lock path %s is the counter's own", what, recipes.ErrInvalidArgument, path)
		}
		m, err := mutex.New(c, o.lockPath)
		if err != nil {
			return nil, fmt.Errorf("counter: %s: lock: %w", what, err)
		}
		e.lock = m
	}
	return e, nil
}

// read returns the node's data and version; absent is nil data and
// exists false.
func (e *engine) read(ctx context.Context) (data []byte, version int32, exists bool, err error) {
	data, st, err := e.c.Get(ctx, e.path)
	if errors.Is(err, session.ErrNoNode) {
		return nil, 0, false, nil
	}
	if err != nil {
		return nil, 0, false, fmt.Errorf("counter: read %s: %w", e.path, err)
	}
	return data, st.Version, true, nil
}

// write writes data at version (create when !exists), sent once: it
// reports false when another writer got there first, and
// ErrOutcomeUnknown when no answer says whether it was applied.
func (e *engine) write(ctx context.Context, data []byte, version int32, exists bool) (bool, error) {
	once := session.WithoutRetry(ctx) // a retry after a lost reply could apply the change twice
	var err error
	if exists {
		_, err = e.c.Set(once, e.path, data, version)
	} else {
		_, err = e.c.Create(once, e.path, data, session.Persistent)
	}
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, session.ErrBadVersion), errors.Is(err, session.ErrNoNode), errors.Is(err, session.ErrNodeExists):
		return false, nil // the server answered: another writer moved the node first
	case answered(err):
		return false, fmt.Errorf("counter: write %s: %w", e.path, err)
	}
	return false, fmt.Errorf("counter: write %s: %w: %w", e.path, ErrOutcomeUnknown, err)
}

// answered reports whether err is a server's answer that the write was
// not applied (a refusal, or bad input refused before sending), as
// opposed to a reply that never came.
func answered(err error) bool {
	return errors.Is(err, recipes.ErrRefused) || errors.Is(err, recipes.ErrInvalidArgument)
}

// change is one try function: from the bytes read (nil when absent), the
// bytes to write, or an error to stop with (nothing written).
type change func(pre []byte) ([]byte, error)

// apply makes the change optimistically, then under the lock if any.
func (e *engine) apply(ctx context.Context, f change) (pre, post []byte, err error) {
	if err := checkContext(ctx); err != nil {
		return nil, nil, err
	}
	pre, post, ok, err := e.tries(ctx, e.retry, f)
	if ok || err != nil || e.lock == nil {
		if !ok && err == nil {
			err = fmt.Errorf("counter: %s: %w (other writers won every try)", e.path, ErrNotApplied)
		}
		return pre, post, err
	}
	err = recipes.WithLock(ctx, e.lock, func(ctx context.Context) error {
		var err error
		pre, post, ok, err = e.tries(ctx, e.lockRetry, f)
		return err
	})
	if ok && err != nil {
		// Applied, then the release failed: the change stands, and the
		// lock node goes with the session at the latest.
		e.c.Logger().Warn("counter: lock release failed after the change", "path", e.path, "err", err)
		err = nil
	}
	if err == nil && !ok {
		err = fmt.Errorf("counter: %s: %w (other writers won every try, the lock's too)", e.path, ErrNotApplied)
	}
	return pre, post, err
}

// tries makes the change under policy p: read, compute, write at the
// version read; again after a conflict while p allows.
func (e *engine) tries(ctx context.Context, p session.RetryPolicy, f change) (pre, post []byte, ok bool, err error) {
	start := time.Now()
	for attempt := 0; ; attempt++ {
		var version int32
		var exists bool
		pre, version, exists, err = e.read(ctx)
		if err != nil {
			return pre, nil, false, err
		}
		if post, err = f(pre); err != nil {
			return pre, nil, false, err
		}
		if ok, err = e.write(ctx, post, version, exists); ok || err != nil {
			return pre, post, ok, err
		}
		wait, again := p.Backoff(attempt, time.Since(start))
		if !again {
			return pre, post, false, nil
		}
		if err := sleep(ctx, wait); err != nil {
			return pre, post, false, fmt.Errorf("counter: %s: %w", e.path, err)
		}
	}
}

// compareAndSet writes post if the node holds what same accepts, in one
// try (Curator's compareAndSet: never retried, never promoted).
func (e *engine) compareAndSet(ctx context.Context, same func(pre []byte) (bool, error), post []byte) (pre []byte, err error) {
	if err := checkContext(ctx); err != nil {
		return nil, err
	}
	pre, version, exists, err := e.read(ctx)
	if err != nil {
		return nil, err
	}
	ok, err := same(pre)
	if err != nil {
		return pre, err
	}
	if !ok {
		return pre, fmt.Errorf("counter: %s: %w (it holds another value)", e.path, ErrNotApplied)
	}
	if ok, err = e.write(ctx, post, version, exists); err == nil && !ok {
		err = fmt.Errorf("counter: %s: %w (written by another since the read)", e.path, ErrNotApplied)
	}
	return pre, err
}

// forceSet writes data whatever is there (Curator's forceSet): a write
// that may be repeated, so the client's retries apply.
func (e *engine) forceSet(ctx context.Context, data []byte) error {
	if err := checkContext(ctx); err != nil {
		return err
	}
	for range 3 {
		_, err := e.c.Set(ctx, e.path, data, -1)
		if errors.Is(err, session.ErrNoNode) {
			if _, err = e.c.Create(ctx, e.path, data, session.Persistent); errors.Is(err, session.ErrNodeExists) {
				continue // created meanwhile: write over it
			}
		}
		if err != nil {
			return fmt.Errorf("counter: set %s: %w", e.path, err)
		}
		return nil
	}
	return fmt.Errorf("counter: set %s: %w (the node was deleted each time it was written)", e.path, ErrNotApplied)
}

// initialize creates the node with data if it does not exist (Curator's
// initialize): false when it does.
func (e *engine) initialize(ctx context.Context, data []byte) (bool, error) {
	if err := checkContext(ctx); err != nil {
		return false, err
	}
	_, err := e.c.Create(ctx, e.path, data, session.Persistent)
	switch {
	case errors.Is(err, session.ErrNodeExists):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("counter: initialize %s: %w", e.path, err)
	}
	return true, nil
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}

// checkContext is the first line of every call: a nil ctx is bad input.
func checkContext(ctx context.Context) error {
	if err := recipes.CheckContext(ctx); err != nil {
		return fmt.Errorf("counter: %w", err)
	}
	return nil
}
