package multilock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/locktest"
	"github.com/zkrecipes/zkrecipes/recipes/multilock"
)

// Unit tests: the MultiLock over in-memory locks (memServer), no server.

func newMulti(t testing.TB, lockers ...recipes.Locker) *multilock.MultiLock {
	t.Helper()
	m, err := multilock.New(lockers...)
	require.NoError(t, err)
	return m
}

// memMulti is a MultiLock over the in-memory locks names.
func memMulti(t testing.TB, s *memServer, names ...string) *multilock.MultiLock {
	t.Helper()
	lockers := make([]recipes.Locker, len(names))
	for i, n := range names {
		lockers[i] = s.locker(n)
	}
	return newMulti(t, lockers...)
}

func members(lease recipes.Lease) []recipes.Lease {
	return lease.(*multilock.Lease).Leases()
}

// eventually polls cond for up to waitLimit.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, waitLimit)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// The contract suite, over in-memory members: the MultiLock's own logic.
func TestContractInMemory(t *testing.T) {
	s := newMemServer()
	names := func(name string) []string { return []string{name + "/a", name + "/b", name + "/c"} }
	locktest.Run(t, locktest.Backend{
		New:       func(t *testing.T, name string) recipes.Locker { return memMulti(t, s, names(name)...) },
		Lose:      func(_ *testing.T, name string, _ recipes.Lease) { s.lose(name + "/b") },
		Leftovers: func(_ *testing.T, name string) []string { return s.leftovers(names(name)...) },
		Reentrant: true,
		NoTokens:  true,
	})
}

func TestNewInvalid(t *testing.T) {
	s := newMemServer()
	a := s.locker("a")
	var typedNil *memLocker
	for _, tc := range []struct {
		name    string
		lockers []recipes.Locker
		want    string
	}{
		{"empty", nil, "no lockers"},
		{"nil", []recipes.Locker{a, nil}, "locker 1 of 2 is nil"},
		{"typed nil", []recipes.Locker{typedNil}, "locker 0 of 1 is nil"},
		{"twice", []recipes.Locker{a, s.locker("b"), a}, "lockers 0 and 2 are the same memlock a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := multilock.New(tc.lockers...)
			assert.Nil(t, m)
			require.ErrorIs(t, err, recipes.ErrInvalidArgument)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	// Two Lockers on one lock are not the same Locker: New cannot tell.
	_, err := multilock.New(a, s.locker("a"))
	require.NoError(t, err)
}

func TestNewCopiesTheList(t *testing.T) {
	s := newMemServer()
	list := []recipes.Locker{s.locker("a"), s.locker("b")}
	m := newMulti(t, list...)
	list[0] = s.locker("z")
	assert.Equal(t, "a", m.Lockers()[0].(*memLocker).name)
	assert.Equal(t, "multilock [memlock a, memlock b]", m.String())
}

// Members are taken in the order given and released in reverse.
func TestOrder(t *testing.T) {
	s := newMemServer()
	ctx := ctxT(t)
	m := memMulti(t, s, "c", "a", "b")
	lease, err := m.Acquire(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"take c", "take a", "take b"}, s.events())
	require.NoError(t, lease.Release(ctx))
	assert.Equal(t, []string{"free b", "free a", "free c"}, s.events())

	lease, err = m.TryAcquire(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"take c", "take a", "take b"}, s.events())
	require.NoError(t, lease.Release(ctx))
	assert.Equal(t, []string{"free b", "free a", "free c"}, s.events())
}

// A member that fails: what was taken is released in reverse order, and the
// error is ErrNotAcquired with the member's error, saying which member.
func TestMemberFails(t *testing.T) {
	s := newMemServer()
	ctx := ctxT(t)
	boom := errors.New("boom")
	s.acquireErr["c"] = boom
	s.releaseErr["a"] = errors.New("release of a failed")
	m := memMulti(t, s, "a", "b", "c", "d")
	for _, op := range []struct {
		name    string
		acquire func(context.Context) (recipes.Lease, error)
	}{{multilock.OpAcquire, m.Acquire}, {multilock.OpTryAcquire, m.TryAcquire}} {
		lease, err := op.acquire(ctx)
		require.Nil(t, lease)
		require.ErrorIs(t, err, recipes.ErrNotAcquired)
		require.ErrorIs(t, err, boom)
		require.ErrorContains(t, err, "release of a failed") // joined
		var me *multilock.MemberError
		require.ErrorAs(t, err, &me)
		assert.Equal(t, 2, me.Index)
		assert.Equal(t, op.name, me.Op)
		assert.Same(t, m.Lockers()[2], me.Locker)
		assert.Contains(t, err.Error(), "multilock: member 2 (memlock c): "+op.name+": boom")
		assert.Equal(t, []string{"take a", "take b", "free b", "free a"}, s.events())
		assert.Empty(t, s.leftovers("a", "b", "c", "d"))
	}
}

// A member held elsewhere: TryAcquire is ErrLocked, and releases the rest.
func TestTryAcquireLocked(t *testing.T) {
	s := newMemServer()
	ctx := ctxT(t)
	other, err := s.locker("c").Acquire(ctx)
	require.NoError(t, err)
	s.events()
	m := memMulti(t, s, "a", "b", "c")
	lease, err := m.TryAcquire(ctx)
	require.Nil(t, lease)
	require.ErrorIs(t, err, recipes.ErrLocked)
	require.ErrorIs(t, err, recipes.ErrNotAcquired)
	assert.Equal(t, []string{"take a", "take b", "free b", "free a"}, s.events())
	require.NoError(t, other.Release(ctx))
}

// ctx ends while Acquire waits for the second member: the first is
// released, and the error is ErrNotAcquired and ctx's.
func TestCancelWhileWaitingForSecondInMemory(t *testing.T) {
	for _, tc := range []struct {
		name string
		want error
		ctx  func(context.Context) (context.Context, context.CancelFunc)
	}{
		{"cancelled", context.Canceled, context.WithCancel},
		{"deadline", context.DeadlineExceeded, func(ctx context.Context) (context.Context, context.CancelFunc) {
			return context.WithTimeout(ctx, 100*time.Millisecond)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newMemServer()
			ctx := ctxT(t)
			other, err := s.locker("b").Acquire(ctx)
			require.NoError(t, err)
			s.events()
			m := memMulti(t, s, "a", "b")
			wctx, cancel := tc.ctx(ctx)
			defer cancel()
			res := make(chan error, 1)
			go func() {
				lease, err := m.Acquire(wctx)
				if lease != nil {
					_ = lease.Release(ctx)
				}
				res <- err
			}()
			eventually(t, "waiting for b", func() bool { return s.isWaiting("b") })
			assert.Equal(t, []string{"take a"}, s.events())
			if tc.want == context.Canceled {
				cancel()
			}
			err = <-res
			require.ErrorIs(t, err, recipes.ErrNotAcquired)
			require.ErrorIs(t, err, tc.want)
			assert.Equal(t, []string{"free a"}, s.events())
			assert.Equal(t, []string{"holder of b"}, s.leftovers("a", "b"))
			require.NoError(t, other.Release(ctx))
		})
	}
}

// The lease of a member already taken ends while Acquire waits for the
// next: Acquire gives up at once with the loss, and releases the rest.
func TestMemberLostWhileAcquiringInMemory(t *testing.T) {
	s := newMemServer()
	ctx := ctxT(t)
	other, err := s.locker("c").Acquire(ctx)
	require.NoError(t, err)
	s.events()
	m := memMulti(t, s, "a", "b", "c")
	res := make(chan error, 1)
	go func() {
		lease, err := m.Acquire(ctx)
		if lease != nil {
			_ = lease.Release(ctx)
		}
		res <- err
	}()
	eventually(t, "waiting for c", func() bool { return s.isWaiting("c") })
	s.lose("a")
	err = <-res
	require.ErrorIs(t, err, recipes.ErrNotAcquired)
	require.ErrorIs(t, err, recipes.ErrLockLost)
	var me *multilock.MemberError
	require.ErrorAs(t, err, &me)
	assert.Equal(t, 0, me.Index)
	assert.Equal(t, multilock.OpLost, me.Op)
	assert.Equal(t, []string{"take a", "take b", "lose a", "free b"}, s.events())
	require.NoError(t, other.Release(ctx))
	assert.Empty(t, s.leftovers("a", "b", "c"))
}
