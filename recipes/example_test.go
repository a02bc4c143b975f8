package recipes_test

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/zkrecipes/zkrecipes/recipes"
)

// WithLock holds a lock while a function runs, over any Locker: a ZooKeeper
// mutex, a Redis or memcached lock, a MultiLock. Here, so that the example
// needs no server, one kept in this process (memLock, below).
func ExampleWithLock() {
	ctx := context.Background()
	var orders recipes.Locker = newMemLock() // say, mutex.New(client, "/locks/orders")

	err := recipes.WithLock(ctx, orders, func(ctx context.Context) error {
		// Work with this ctx: it ends the moment the lock can no longer be
		// trusted (a session suspended or lost, a TTL lapsed).
		_, err := orders.TryAcquire(context.Background()) // another call chain's try
		fmt.Println("held while fn runs:", errors.Is(err, recipes.ErrLocked))
		return ctx.Err()
	})
	fmt.Println("WithLock:", err)

	lease, err := orders.TryAcquire(ctx)
	fmt.Println("released after fn:", err)
	_ = lease.Release(ctx)
	// Output:
	// held while fn runs: true
	// WithLock: <nil>
	// released after fn: <nil>
}

// When the lock is lost while fn runs, fn's context ends at once, and
// WithLock reports recipes.ErrLockLost even though fn returned nil: its work
// may not have been exclusive.
func ExampleWithLock_lost() {
	ctx := context.Background()
	l := newMemLock()

	err := recipes.WithLock(ctx, l, func(ctx context.Context) error {
		l.lose("session expired") // what a fault does to a real lock
		<-ctx.Done()
		fmt.Println("fn's context ended:", context.Cause(ctx))
		return nil // stopped as soon as told; WithLock still says what happened
	})
	fmt.Println("lock lost:", errors.Is(err, recipes.ErrLockLost))
	// Output:
	// fn's context ended: recipes: lock lost: session expired
	// lock lost: true
}

// memLock is an exclusive lock kept in this process, just enough of the
// contract for the examples: it has no server to lose, and it is not
// reentrant (an Acquire in a call chain that holds it fails with
// recipes.ErrNotReentrant).
type memLock struct {
	free   chan struct{} // holds a value while the lock is free
	mu     sync.Mutex
	holder *memLease // nil when free
	tokens int64
}

func newMemLock() *memLock {
	l := &memLock{free: make(chan struct{}, 1)}
	l.free <- struct{}{}
	return l
}

func (l *memLock) Acquire(ctx context.Context) (recipes.Lease, error) {
	if err := l.check(ctx); err != nil {
		return nil, err
	}
	select {
	case <-l.free:
		return l.grant(), nil
	case <-ctx.Done():
		return nil, recipes.NotAcquired(ctx)
	}
}

func (l *memLock) TryAcquire(ctx context.Context) (recipes.Lease, error) {
	if err := l.check(ctx); err != nil {
		return nil, err
	}
	select {
	case <-l.free:
		return l.grant(), nil
	default:
		return nil, recipes.ErrLocked
	}
}

// check refuses a nil or done ctx, and one that holds l already.
func (l *memLock) check(ctx context.Context) error {
	if err := recipes.CheckContext(ctx); err != nil {
		return err
	}
	if le, ok := ctx.Value(l).(*memLease); ok && le.Err() == nil {
		return recipes.ErrNotReentrant
	}
	return nil
}

func (l *memLock) grant() *memLease {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.tokens++
	le := &memLease{lock: l, token: l.tokens}
	// The lease's context carries it, under l: that is how l knows a re-entry.
	le.ctx, le.cancel = context.WithCancelCause(context.WithValue(context.Background(), l, le))
	l.holder = le
	return le
}

// lose ends the holder's lease as a fault would: its context is cancelled
// with a cause that is recipes.ErrLockLost.
func (l *memLock) lose(why string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.holder != nil {
		l.holder.cancel(fmt.Errorf("%w: %s", recipes.ErrLockLost, why))
	}
}

type memLease struct {
	lock     *memLock
	ctx      context.Context
	cancel   context.CancelCauseFunc
	token    int64
	released bool // guarded by lock.mu
}

func (le *memLease) Context() context.Context { return le.ctx }
func (le *memLease) Done() <-chan struct{}    { return le.ctx.Done() }
func (le *memLease) Err() error               { return context.Cause(le.ctx) }
func (le *memLease) Token() (int64, bool)     { return le.token, true }

func (le *memLease) Release(context.Context) error {
	l := le.lock
	l.mu.Lock()
	defer l.mu.Unlock()
	if le.released {
		return recipes.ErrNotHeld
	}
	le.released = true
	lost := context.Cause(le.ctx) // nil unless the lease was lost
	le.cancel(recipes.ErrReleased)
	l.holder = nil
	l.free <- struct{}{}
	return lost
}
