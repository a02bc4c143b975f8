package multilock

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/hold"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/locktrace"
)

// CleanupTimeout bounds the releases the MultiLock makes on its own: of the
// members a failed Acquire or TryAcquire had taken (the caller's ctx may be
// over by then), and of the members left when one is lost. A member whose
// Release cannot finish by then cleans up after itself as its package
// documents (in the background, or when its session or TTL ends).
const CleanupTimeout = 10 * time.Second

// GiveUpGrace bounds the releases of a failed Acquire or TryAcquire whose
// ctx has ended, so that it returns within this of ctx's deadline: a
// member's Release that cannot finish by then goes on in the background,
// as its package documents (ZooKeeper's delete, or a TTL lock's release,
// retried until it succeeds or the lock would expire anyway).
const GiveUpGrace = 50 * time.Millisecond

// MultiLock is several locks held as one: all of them, or none. It is a
// recipes.Locker; see the package doc for the order, the lease, tokens and
// re-entry. A MultiLock may be shared by goroutines: those with unrelated
// contexts exclude each other.
type MultiLock struct {
	lockers []recipes.Locker
}

var _ recipes.Locker = (*MultiLock)(nil)

// New returns the MultiLock of lockers, taken in that order (every process
// must list overlapping locks in the same order: see the package doc). No
// I/O is done. An empty list, a nil Locker and the same Locker twice are
// recipes.ErrInvalidArgument.
func New(lockers ...recipes.Locker) (*MultiLock, error) {
	if len(lockers) == 0 {
		return nil, fmt.Errorf("multilock: %w: no lockers (a MultiLock needs at least one)", recipes.ErrInvalidArgument)
	}
	for i, l := range lockers {
		if isNil(l) {
			return nil, fmt.Errorf("multilock: %w: locker %d of %d is nil", recipes.ErrInvalidArgument, i, len(lockers))
		}
		for j, earlier := range lockers[:i] {
			if same(earlier, l) {
				return nil, fmt.Errorf("multilock: %w: lockers %d and %d are the same %s: list each lock once",
					recipes.ErrInvalidArgument, j, i, describe(l))
			}
		}
	}
	return &MultiLock{lockers: slices.Clone(lockers)}, nil
}

// isNil reports whether l is nil, or a nil pointer (or other nil reference)
// in the interface, whose methods would panic.
func isNil(l recipes.Locker) bool {
	if l == nil {
		return true
	}
	switch v := reflect.ValueOf(l); v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan, reflect.Interface:
		return v.IsNil()
	}
	return false
}

// same reports whether a and b are the same Locker: equal, for Lockers of
// a comparable type (pointers, as every Locker of zkrecipes is); never for
// others.
func same(a, b recipes.Locker) (eq bool) {
	if reflect.TypeOf(a) != reflect.TypeOf(b) || !reflect.TypeOf(a).Comparable() {
		return false
	}
	defer func() {
		if recover() != nil {
			eq = false // a comparable type holding an incomparable value
		}
	}()
	return a == b
}

// Lockers returns the members, in the order they are taken.
func (m *MultiLock) Lockers() []recipes.Locker { return slices.Clone(m.lockers) }

// String names the MultiLock and its members, for messages.
func (m *MultiLock) String() string { return "multilock [" + m.names() + "]" }

// names joins the members' names (their String, or type), in order: the
// Name of the MultiLock's locktrace.LockID.
func (m *MultiLock) names() string {
	names := make([]string, len(m.lockers))
	for i, l := range m.lockers {
		names[i] = describe(l)
	}
	return strings.Join(names, ", ")
}

// Acquire takes every member, in order, waiting for each, all within ctx;
// it returns once it holds them all (a *Lease), or, having released what it
// took, with an error that is recipes.ErrNotAcquired: when ctx ends (the
// error is also ctx's), when a member's Acquire fails, or when the lease of
// a member it holds ends before it has the rest (the error is also that
// member's cause). The member's error, a *MemberError, is joined to it.
// With a context from a live lease of this MultiLock it re-enters at once.
func (m *MultiLock) Acquire(ctx context.Context) (recipes.Lease, error) {
	return m.acquire(ctx, false)
}

// TryAcquire takes every member, in order, with its TryAcquire. When one is
// held by someone else it releases what it took and returns an error that
// is recipes.ErrLocked at once (and recipes.ErrNotAcquired); other failures
// are as for Acquire. With a context from a live lease of this MultiLock it
// re-enters at once.
func (m *MultiLock) TryAcquire(ctx context.Context) (recipes.Lease, error) {
	return m.acquire(ctx, true)
}

// HeldLeases returns the members' leases of the holding of m that ctx
// carries — ctx is a live lease's context, or derived from one, such as
// the context recipes.WithLock gives fn — in the order of Lockers; nil
// when ctx carries no live holding of m. Fence each member's resource with
// its own lease's token. Do not release them: Release the MultiLock's
// lease.
func (m *MultiLock) HeldLeases(ctx context.Context) []recipes.Lease {
	if h := hold.HeldBy[*holding](ctx, m); h != nil {
		return h.Impl().Leases()
	}
	return nil
}

func (m *MultiLock) acquire(ctx context.Context, try bool) (recipes.Lease, error) {
	if err := recipes.CheckContext(ctx); err != nil {
		return nil, err
	}
	if locktrace.ContextTrace(ctx) == nil { // untraced: no report, no cost
		le, _, err := m.take(ctx, try, nil)
		if err != nil {
			return nil, err // not a typed nil in the interface
		}
		return le, nil
	}
	a := hold.Begin(ctx, nil, locktrace.LockID{Backend: traceBackend, Kind: traceKind, Name: m.names()}, try)
	c := &contention{a: a}
	le, reentered, err := m.take(ctx, try, c)
	c.end()
	if err != nil {
		a.Done(nil, err, false)
		return nil, err
	}
	a.Done(le.held, nil, reentered) // the holding's own lease: its end is reported
	return le, nil
}

// take is Acquire or TryAcquire after the checks: it re-enters a holding
// ctx carries, or takes every member. c, when the acquisition is traced,
// hears of the members found held; nil otherwise.
func (m *MultiLock) take(ctx context.Context, try bool, c *contention) (_ *Lease, reentered bool, _ error) {
	if h := hold.HeldBy[*holding](ctx, m); h != nil {
		if hl := h.Reenter(); hl != nil {
			return &Lease{held: hl, h: h.Impl()}, true, nil
		}
	}
	// actx ends with ctx, or when the lease of a member already taken ends
	// (its cause: the loss): a member waited for after that would be no use.
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	taken := make([]recipes.Lease, 0, len(m.lockers))
	var watches []func() bool
	unwatch := func() {
		for _, stop := range watches {
			stop()
		}
		watches = nil
	}
	defer unwatch()
	// The members' context: actx's, carrying, when the acquisition is
	// traced, a trace by which it hears that a member waits (the members
	// report AcquireQueued to the trace their context carries).
	mctx := actx
	if c != nil {
		mctx = locktrace.WithTrace(actx, &locktrace.Trace{AcquireQueued: c.queued})
	}
	for i, l := range m.lockers {
		op, take := OpAcquire, l.Acquire
		if try {
			op, take = OpTryAcquire, l.TryAcquire
		}
		// The member sees the holdings of those taken before it, for
		// re-entry, and the cancellation of actx.
		lease, err := take(&withValues{Context: mctx, values: valuesOf(taken)})
		switch {
		case err == nil && lease == nil:
			err = fmt.Errorf("%w: the member returned no lease and no error", recipes.ErrNotAcquired)
		case err != nil && lease != nil:
			taken = append(taken, lease) // released with the rest
		}
		if err != nil && errors.Is(err, recipes.ErrLocked) {
			c.queued(locktrace.AcquireQueuedInfo{}) // a member that does not report it
		}
		if err != nil {
			unwatch() // what giveUp releases is no loss
			return nil, false, m.giveUp(ctx, actx, taken, &MemberError{Index: i, Locker: l, Op: op, Err: err})
		}
		taken = append(taken, lease)
		watches = append(watches, context.AfterFunc(lease.Context(), func() {
			cancel(lostError(i, l, context.Cause(lease.Context())))
		}))
	}
	for i, lease := range taken {
		if lease.Err() != nil { // ended while the rest were taken
			cancel(lostError(i, m.lockers[i], context.Cause(lease.Context())))
			unwatch()
			return nil, false, m.giveUp(ctx, actx, taken, nil)
		}
	}
	return m.hold(ctx, taken), false, nil
}

// giveUp releases taken, in reverse order, and returns the error of an
// acquisition that failed with the member's error member (nil when none):
// joined after ctx's error when ctx ended, or after the loss of a member
// when one ended actx.
func (m *MultiLock) giveUp(ctx, actx context.Context, taken []recipes.Lease, member error) error {
	var head error
	switch {
	case ctx.Err() != nil:
		head = recipes.NotAcquired(ctx)
	case actx.Err() != nil:
		head = context.Cause(actx) // the loss of a member taken earlier
	}
	bound := CleanupTimeout
	if ctx.Err() != nil {
		bound = GiveUpGrace // the caller's deadline has passed: answer now
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), bound)
	defer cancel()
	return failure(head, member, m.release(cctx, taken))
}

// release releases leases (the members' leases, in the order of
// m.lockers, from the first) in reverse order, and joins their errors.
func (m *MultiLock) release(ctx context.Context, leases []recipes.Lease) error {
	var errs []error
	for i := len(leases) - 1; i >= 0; i-- {
		if err := leases[i].Release(ctx); err != nil {
			errs = append(errs, &MemberError{Index: i, Locker: m.lockers[i], Op: OpRelease, Err: err})
		}
	}
	return errors.Join(errs...)
}
