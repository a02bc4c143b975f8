package multilock

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/recipes"
)

type stringLocker struct{ recipes.Locker }

func (stringLocker) String() string { return "mutex /locks/a" }

// pathLocker has a Path but no String: a Locker from outside is named by
// its type, whatever else it has.
type pathLocker struct{ recipes.Locker }

func (pathLocker) Path() string { return "/locks/p" }

type plainLocker struct{ recipes.Locker }

func TestDescribe(t *testing.T) {
	for _, tc := range []struct {
		l    recipes.Locker
		want string
	}{
		{stringLocker{}, "mutex /locks/a"},
		{pathLocker{}, "multilock.pathLocker"},
		{&plainLocker{}, "*multilock.plainLocker"},
		{nil, "nil"},
	} {
		assert.Equal(t, tc.want, describe(tc.l))
	}
	m := &MultiLock{lockers: []recipes.Locker{stringLocker{}, plainLocker{}}}
	assert.Equal(t, "multilock [mutex /locks/a, multilock.plainLocker]", describe(m), "a MultiLock names its members")
	err := &MemberError{Index: 0, Locker: stringLocker{}, Op: OpAcquire, Err: errors.New("boom")}
	assert.Equal(t, "multilock: member 0 (mutex /locks/a): Acquire: boom", err.Error())
}

func TestSame(t *testing.T) {
	a, b := &plainLocker{}, &plainLocker{}
	assert.True(t, same(a, a))
	assert.False(t, same(a, b))
	assert.True(t, same(plainLocker{}, plainLocker{}), "equal values of a comparable type")
	assert.False(t, same(a, plainLocker{}))
	// A comparable type holding an incomparable value: not a panic.
	f := funcLocker{f: []int{1}}
	assert.False(t, same(f, f))
}

type funcLocker struct {
	recipes.Locker
	f any
}

func TestLostError(t *testing.T) {
	cause := errors.New("session expired")
	err := lostError(2, plainLocker{}, cause)
	assert.ErrorIs(t, err, recipes.ErrLockLost)
	assert.ErrorIs(t, err, cause)
	var me *MemberError
	require.ErrorAs(t, err, &me)
	assert.Equal(t, 2, me.Index)
	assert.Equal(t, OpLost, me.Op)
	assert.Equal(t, "recipes: lock lost: multilock: member 2 (multilock.plainLocker): lost: session expired", err.Error())

	// A cause that is ErrLockLost already is not wrapped again.
	lost := errors.Join(recipes.ErrLockLost, cause)
	err = lostError(0, plainLocker{}, lost)
	assert.IsType(t, &MemberError{}, err)
}

func TestFailure(t *testing.T) {
	member := &MemberError{Index: 1, Locker: plainLocker{}, Op: OpAcquire, Err: errors.New("boom")}
	err := failure(nil, member, nil)
	assert.ErrorIs(t, err, recipes.ErrNotAcquired)
	assert.ErrorIs(t, err, member)
	assert.Equal(t, "recipes: lock not acquired\nmultilock: member 1 (multilock.plainLocker): Acquire: boom", err.Error())

	// A member error that is ErrNotAcquired (ErrLocked) needs no head.
	locked := &MemberError{Index: 0, Locker: plainLocker{}, Op: OpTryAcquire, Err: recipes.ErrLocked}
	err = failure(nil, locked, nil)
	assert.ErrorIs(t, err, recipes.ErrLocked)
	assert.Equal(t, locked.Error(), err.Error())

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	released := errors.New("release failed")
	err = failure(recipes.NotAcquired(ctx), member, released)
	for _, want := range []error{recipes.ErrNotAcquired, context.Canceled, member, released} {
		assert.ErrorIs(t, err, want)
	}
}

type key string

func TestWithValues(t *testing.T) {
	parent, cancel := context.WithCancelCause(context.WithValue(context.Background(), key("k"), "caller"))
	defer cancel(nil)
	parent, stop := context.WithTimeout(parent, time.Hour)
	defer stop()

	l1 := leaseWith(context.WithValue(context.Background(), key("k"), "lease1"))
	l2 := leaseWith(context.WithValue(context.Background(), key("only2"), "lease2"))
	c := &withValues{Context: parent, values: valuesOf([]recipes.Lease{l1, l2})}

	assert.Equal(t, "lease1", c.Value(key("k")), "the leases before the caller")
	assert.Equal(t, "lease2", c.Value(key("only2")))
	assert.Nil(t, c.Value(key("none")))
	d1, _ := parent.Deadline()
	d2, ok := c.Deadline()
	assert.True(t, ok)
	assert.Equal(t, d1, d2)

	// The cancellation is the caller's, with its cause, for c and for what
	// derives from it; the leases' ending does not reach it.
	l1.cancel(errors.New("lease ended"))
	child, childCancel := context.WithCancel(c)
	defer childCancel()
	assert.NoError(t, c.Err())
	assert.NoError(t, context.Cause(c))
	why := errors.New("why")
	cancel(why)
	<-child.Done()
	assert.ErrorIs(t, c.Err(), context.Canceled)
	assert.Equal(t, why, context.Cause(c))
	assert.Equal(t, why, context.Cause(child))
	assert.ErrorIs(t, recipes.NotAcquired(c), why)
}

// ctxLease is a Lease that is only a context.
type ctxLease struct {
	recipes.Lease
	ctx    context.Context
	cancel context.CancelCauseFunc
}

func leaseWith(ctx context.Context) *ctxLease {
	ctx, cancel := context.WithCancelCause(ctx)
	return &ctxLease{ctx: ctx, cancel: cancel}
}

func (l *ctxLease) Context() context.Context { return l.ctx }
