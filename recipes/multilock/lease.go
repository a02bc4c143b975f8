package multilock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/zkrecipes/zkrecipes/internal/hold"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// holding is one holding of a MultiLock: the members' leases, and the
// hold.Holding that counts the leases that re-entered it. It ends, with
// the member's cause, when any member's lease ends; the members are
// released once, at the last Release or at once when one is lost.
type holding struct {
	m      *MultiLock
	leases []recipes.Lease // the members', in the order of m.lockers
	rh     *hold.Holding[*holding]

	mu      sync.Mutex
	watches []func() bool // stop watching the members' leases

	releasing atomic.Bool   // the release of the members has started
	done      chan struct{} // closed when it is over
	err       error         // its errors, joined; set before done is closed
}

// hold starts holding the members' leases taken by an Acquire with ctx, and
// returns the first lease. Its context carries ctx's values and every
// member's holding (withValues), not ctx's cancellation.
func (m *MultiLock) hold(ctx context.Context, taken []recipes.Lease) *Lease {
	h := &holding{m: m, leases: taken, done: make(chan struct{})}
	var first *hold.Lease
	h.rh, first = hold.New(&withValues{Context: ctx, values: valuesOf(taken)}, m, 0, false, h)
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, lease := range taken {
		h.watches = append(h.watches, context.AfterFunc(lease.Context(), func() { h.lost(i) }))
	}
	return &Lease{held: first, h: h}
}

// Leases returns the members' leases.
func (h *holding) Leases() []recipes.Lease { return slices.Clone(h.leases) }

// lost ends the holding because member i's lease ended, unless the holding
// had ended already (then a Release is releasing the members, or another
// member's loss came first), and releases the other members.
func (h *holding) lost(i int) {
	cause := lostError(i, h.m.lockers[i], context.Cause(h.leases[i].Context()))
	h.rh.Lose(cause)
	if h.rh.Err() != cause {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), CleanupTimeout)
	defer cancel()
	_ = h.releaseMembers(ctx)
}

// Free is the hold.Holding's: the last Release of a holding that was
// not lost releases the members.
func (h *holding) Free(ctx context.Context) error { return h.releaseMembers(ctx) }

// releaseMembers releases the members in reverse order, once: the first
// call does it with its ctx, and every call waits for it, bounded by its
// own ctx, and returns its errors.
func (h *holding) releaseMembers(ctx context.Context) error {
	if h.releasing.CompareAndSwap(false, true) {
		h.mu.Lock()
		for _, stop := range h.watches {
			stop()
		}
		h.mu.Unlock()
		h.err = h.m.release(ctx, h.leases)
		close(h.done)
	}
	return h.wait(ctx)
}

// wait waits, bounded by ctx, for the release of the members and returns
// its errors.
func (h *holding) wait(ctx context.Context) error {
	select {
	case <-h.done:
		return h.err
	default:
	}
	select {
	case <-h.done:
		return h.err
	case <-ctx.Done():
		return fmt.Errorf("multilock: the members are still being released, in the background: %w", context.Cause(ctx))
	}
}

// Lease is a holding of a MultiLock: of every member at once. It is
// recipes.Lease; see the package doc. A Lease may be released from any
// goroutine.
type Lease struct {
	held *hold.Lease
	h    *holding
}

var _ recipes.Lease = (*Lease)(nil)

// Context is cancelled when the lease ends: at Release (cause
// recipes.ErrReleased), or as soon as the lease of any member ends (its
// session suspended or lost, its TTL lapsed, its lock found gone), with a
// cause that is recipes.ErrLockLost and a *MemberError naming the member
// and carrying its cause. It carries every member's holding: a member
// taken again with it re-enters (or fails at once with
// recipes.ErrNotReentrant), and so does this MultiLock.
func (l *Lease) Context() context.Context { return l.held.Context() }

// Done is Context().Done().
func (l *Lease) Done() <-chan struct{} { return l.held.Done() }

// Err is nil while every member is held; afterwards it is
// recipes.ErrReleased, or the cause of the member's loss (an error that is
// recipes.ErrLockLost).
func (l *Lease) Err() error { return l.held.Err() }

// Token is (0, false): a MultiLock has no fencing token of its own. Fence
// each member's resource with that member's token, from Leases.
func (l *Lease) Token() (int64, bool) { return l.held.Token() }

// Leases returns the members' leases, in the order of the MultiLock's
// Lockers, for their fencing tokens (and whatever else their types offer,
// such as a ZooKeeper member's znode.Lease). They are the same for every
// lease that re-entered this holding. Do not release them: Release this
// lease (a member released on its own ends the MultiLock's lease, as lost).
func (l *Lease) Leases() []recipes.Lease { return l.h.Leases() }

// Release ends the lease. The last lease of the holding (the first, and
// those that re-entered it) releases every member in reverse order, and
// returns their errors joined, each a *MemberError; nothing of the members
// is left on their servers once it returns, or once their own background
// clean-up ends (see each member's package). A member already lost makes
// it an error that is recipes.ErrLockLost. When a member had been lost
// before Release, the others are already being released in the background:
// Release waits for that, bounded by ctx, and returns an error that is
// recipes.ErrLockLost joined with theirs. A second Release is
// recipes.ErrNotHeld.
func (l *Lease) Release(ctx context.Context) error {
	err := l.held.Release(ctx)
	if err == nil || ctx == nil || errors.Is(err, recipes.ErrNotHeld) {
		return err
	}
	if cause := l.h.rh.Err(); cause != recipes.ErrReleased && errors.Is(err, cause) {
		// Lost before this Release: the holding did not free the members,
		// lost did or is doing it.
		return errors.Join(err, l.h.wait(ctx))
	}
	return err
}
