package multilock_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/locktest"
	"github.com/zkrecipes/zkrecipes/recipes/multilock"
)

// A member lost while held: the lease ends with a cause that is ErrLockLost
// and names the member, the others are released at once, and Release
// reports the loss.
func TestMemberLostInMemory(t *testing.T) {
	s := newMemServer()
	ctx := ctxT(t)
	m := memMulti(t, s, "a", "b", "c")
	lease, err := m.Acquire(ctx)
	require.NoError(t, err)
	inner, err := m.Acquire(lease.Context()) // re-entered: ends with it
	require.NoError(t, err)
	s.events()

	s.lose("b")
	<-lease.Done()
	<-inner.Done()
	cause := context.Cause(lease.Context())
	require.ErrorIs(t, cause, recipes.ErrLockLost)
	require.Equal(t, cause, lease.Err())
	var me *multilock.MemberError
	require.ErrorAs(t, cause, &me)
	assert.Equal(t, 1, me.Index)
	assert.Equal(t, multilock.OpLost, me.Op)
	assert.Contains(t, cause.Error(), "mem b deleted by the test")
	// The others go without waiting for Release.
	eventually(t, "members released", func() bool { return len(s.leftovers("a", "b", "c")) == 0 })
	assert.Equal(t, []string{"lose b", "free c", "free a"}, s.events())

	err = inner.Release(ctx)
	require.ErrorIs(t, err, recipes.ErrLockLost)
	err = lease.Release(ctx)
	require.ErrorIs(t, err, recipes.ErrLockLost)
	require.ErrorContains(t, err, "member 1 (memlock b): Release: ") // b's own Release, joined
	require.ErrorIs(t, lease.Release(ctx), recipes.ErrNotHeld)
	assert.Empty(t, s.events())
	require.ErrorIs(t, lease.Err(), recipes.ErrLockLost)
}

// A member released on its own (through Leases) ends the MultiLock's lease
// as lost.
func TestMemberReleasedOnItsOwn(t *testing.T) {
	s := newMemServer()
	ctx := ctxT(t)
	m := memMulti(t, s, "a", "b")
	lease, err := m.Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, members(lease)[0].Release(ctx))
	<-lease.Done()
	require.ErrorIs(t, lease.Err(), recipes.ErrLockLost)
	require.ErrorIs(t, lease.Err(), recipes.ErrReleased)
	err = lease.Release(ctx)
	require.ErrorIs(t, err, recipes.ErrLockLost)
	require.ErrorIs(t, err, recipes.ErrNotHeld) // a's second Release
	assert.Empty(t, s.leftovers("a", "b"))
}

// Release joins the members' errors, in the order they were released.
func TestReleaseErrorsJoined(t *testing.T) {
	s := newMemServer()
	ctx := ctxT(t)
	s.releaseErr["a"] = errors.New("a failed")
	s.releaseErr["c"] = errors.New("c failed")
	m := memMulti(t, s, "a", "b", "c")
	lease, err := m.Acquire(ctx)
	require.NoError(t, err)
	err = lease.Release(ctx)
	require.Error(t, err)
	require.ErrorIs(t, err, s.releaseErr["a"])
	require.ErrorIs(t, err, s.releaseErr["c"])
	joined, ok := err.(interface{ Unwrap() []error })
	require.True(t, ok, "errors.Join: %T", err)
	var idx []int
	for _, e := range joined.Unwrap() {
		var me *multilock.MemberError
		require.ErrorAs(t, e, &me)
		assert.Equal(t, multilock.OpRelease, me.Op)
		idx = append(idx, me.Index)
	}
	assert.Equal(t, []int{2, 0}, idx)
	require.ErrorIs(t, lease.Err(), recipes.ErrReleased)
	assert.Empty(t, s.leftovers("a", "b", "c"))
}

// Tokens: none of its own; the members' through Leases and HeldLeases.
func TestTokens(t *testing.T) {
	s := newMemServer()
	ctx := ctxT(t)
	m := memMulti(t, s, "a", "b")
	lease, err := m.Acquire(ctx)
	require.NoError(t, err)
	token, ok := lease.Token()
	assert.Equal(t, int64(0), token)
	assert.False(t, ok)
	ls := members(lease)
	require.Len(t, ls, 2)
	for i, ml := range ls {
		token, ok := ml.Token()
		assert.True(t, ok)
		assert.Equal(t, int64(i+1), token)
	}
	assert.Equal(t, ls, m.HeldLeases(lease.Context()))
	assert.Nil(t, m.HeldLeases(ctx))
	assert.Nil(t, newMulti(t, s.locker("a")).HeldLeases(lease.Context()), "another MultiLock's")
	require.NoError(t, lease.Release(ctx))
	assert.Nil(t, m.HeldLeases(lease.Context()), "after Release")

	err = recipes.WithLock(ctx, m, func(ctx context.Context) error {
		ls := m.HeldLeases(ctx)
		if len(ls) != 2 {
			return fmt.Errorf("HeldLeases in fn: %v", ls)
		}
		return nil
	})
	require.NoError(t, err)
}

// Re-entry: the MultiLock itself through its lease's context, with no
// member call; a member, or another MultiLock sharing members, through the
// same context; a non-reentrant member fails at once.
func TestReentry(t *testing.T) {
	s := newMemServer()
	ctx := ctxT(t)
	a, b := s.locker("a"), s.locker("b")
	m := newMulti(t, a, b)
	lease, err := m.Acquire(ctx)
	require.NoError(t, err)
	s.events()

	again, err := m.TryAcquire(lease.Context())
	require.NoError(t, err)
	assert.Empty(t, s.events(), "re-entry calls no member")
	assert.Equal(t, members(lease), members(again))

	for i, member := range []*memLocker{a, b} {
		ml, err := member.TryAcquire(lease.Context())
		require.NoError(t, err, "member %d re-enters", i)
		want, _ := members(lease)[i].Token()
		got, _ := ml.Token()
		assert.Equal(t, want, got)
		require.NoError(t, ml.Release(ctx))
	}

	// Another MultiLock over b and c, in the call chain: b re-enters.
	other := newMulti(t, b, s.locker("c"))
	ol, err := other.TryAcquire(lease.Context())
	require.NoError(t, err)
	assert.Equal(t, []string{"take c"}, s.events())
	require.NoError(t, ol.Release(ctx))
	assert.Equal(t, []string{"free c"}, s.events())

	require.NoError(t, again.Release(ctx))
	require.NoError(t, lease.Err(), "held until the last Release")
	assert.Empty(t, s.events())
	require.NoError(t, lease.Release(ctx))
	assert.Equal(t, []string{"free b", "free a"}, s.events())

	// A context that holds a member alone: that member re-enters.
	la, err := a.Acquire(ctx)
	require.NoError(t, err)
	s.events()
	lease, err = m.Acquire(la.Context())
	require.NoError(t, err)
	assert.Equal(t, []string{"take b"}, s.events())
	require.NoError(t, lease.Release(ctx))
	require.NoError(t, la.Err(), "a is still held by its own lease")
	require.NoError(t, la.Release(ctx))
	assert.Equal(t, []string{"free b", "free a"}, s.events())
}

// A member that is not reentrant, met again in the call chain, fails at
// once with ErrNotReentrant: never a wait for itself.
func TestNotReentrantMember(t *testing.T) {
	s := newMemServer()
	ctx := ctxT(t)
	x := &memLocker{s: s, name: "x", nonReentrant: true}
	m := newMulti(t, s.locker("a"), x)
	lease, err := m.Acquire(ctx)
	require.NoError(t, err)

	pctx, cancel := context.WithTimeout(lease.Context(), waitLimit)
	defer cancel()
	_, err = x.Acquire(pctx)
	require.ErrorIs(t, err, recipes.ErrNotReentrant)
	other := newMulti(t, s.locker("b"), x)
	_, err = other.Acquire(pctx)
	require.ErrorIs(t, err, recipes.ErrNotReentrant)
	require.ErrorIs(t, err, recipes.ErrNotAcquired)
	// The MultiLock itself re-enters whatever its members are.
	again, err := m.Acquire(pctx)
	require.NoError(t, err)
	require.NoError(t, again.Release(ctx))
	require.NoError(t, lease.Err())
	require.NoError(t, lease.Release(ctx))
	assert.Empty(t, s.leftovers("a", "b", "x"))
}

// A member that breaks the contract: (nil, nil), or a lease with an error.
type badLocker struct {
	inner recipes.Locker
	both  bool
}

func (b badLocker) Acquire(ctx context.Context) (recipes.Lease, error) {
	if !b.both {
		return nil, nil
	}
	lease, err := b.inner.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	return lease, errors.New("a lease and an error")
}

func (b badLocker) TryAcquire(ctx context.Context) (recipes.Lease, error) { return b.Acquire(ctx) }

func TestBadMember(t *testing.T) {
	s := newMemServer()
	ctx := ctxT(t)
	_, err := newMulti(t, s.locker("a"), badLocker{}).Acquire(ctx)
	require.ErrorIs(t, err, recipes.ErrNotAcquired)
	require.ErrorContains(t, err, "no lease and no error")
	_, err = newMulti(t, s.locker("a"), badLocker{inner: s.locker("b"), both: true}).Acquire(ctx)
	require.ErrorIs(t, err, recipes.ErrNotAcquired)
	require.ErrorContains(t, err, "a lease and an error")
	assert.Empty(t, s.leftovers("a", "b"), "the lease that came with the error is released too")
}

// Two MultiLocks over the same locks in the same order, and a lone holder
// of one of them: mutual exclusion.
func TestContentionInMemory(t *testing.T) {
	s := newMemServer()
	lockers := []recipes.Locker{memMulti(t, s, "a", "b"), memMulti(t, s, "a", "b"), s.locker("b")}
	lost, err := locktest.Contention(ctxT(t), lockers, 20)
	require.NoError(t, err)
	assert.Zero(t, lost)
}

// Opposite orders deadlock until ctx ends, as documented: bounded, and
// nothing is left behind.
func TestOppositeOrderIsBounded(t *testing.T) {
	s := newMemServer()
	ctx := ctxT(t)
	ab, ba := memMulti(t, s, "a", "b"), memMulti(t, s, "b", "a")
	// Each holds its first and waits for the other's.
	la, err := s.locker("a").Acquire(ctx)
	require.NoError(t, err)
	lb, err := s.locker("b").Acquire(ctx)
	require.NoError(t, err)
	res := make(chan error, 2)
	for _, m := range []*multilock.MultiLock{ab, ba} {
		go func() {
			wctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
			defer cancel()
			lease, err := m.Acquire(wctx)
			if lease != nil {
				_ = lease.Release(ctx)
			}
			res <- err
		}()
	}
	eventually(t, "both waiting", func() bool { return s.isWaiting("a") && s.isWaiting("b") })
	require.NoError(t, la.Release(ctx))
	require.NoError(t, lb.Release(ctx))
	for range 2 {
		err := <-res
		if err != nil {
			require.ErrorIs(t, err, recipes.ErrNotAcquired)
			require.ErrorIs(t, err, context.DeadlineExceeded)
		}
	}
	assert.Empty(t, s.leftovers("a", "b"))
}
