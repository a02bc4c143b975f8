package multilock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/internal/testkit/tracetest"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/locktrace"
	"github.com/zkrecipes/zkrecipes/recipes/multilock"
	"github.com/zkrecipes/zkrecipes/session"
)

// multiID is the LockID of a MultiLock of members in every report: its
// members' names joined.
func multiID(members ...recipes.Locker) locktrace.LockID {
	name := ""
	for i, m := range members {
		if i > 0 {
			name += ", "
		}
		name += m.(interface{ String() string }).String()
	}
	return locktrace.LockID{Backend: "multi", Kind: "multilock", Name: name}
}

// ofKind keeps the reports about locks of kind.
func ofKind[I any](infos []I, kind string, lock func(I) locktrace.LockID) []I {
	var out []I
	for _, i := range infos {
		if lock(i).Kind == kind {
			out = append(out, i)
		}
	}
	return out
}

func multiDones(rec *tracetest.Recorder) []locktrace.AcquireDoneInfo {
	return ofKind(rec.Dones(), "multilock", func(i locktrace.AcquireDoneInfo) locktrace.LockID { return i.Lock })
}

func multiQueued(rec *tracetest.Recorder) []locktrace.AcquireQueuedInfo {
	return ofKind(rec.Queued(), "multilock", func(i locktrace.AcquireQueuedInfo) locktrace.LockID { return i.Lock })
}

func multiEnds(rec *tracetest.Recorder) []locktrace.LeaseEndInfo {
	return ofKind(rec.Ends(), "multilock", func(i locktrace.LeaseEndInfo) locktrace.LockID { return i.Lock })
}

// A MultiLock of two ZooKeeper mutexes, traced by the Acquire's context:
// the MultiLock's acquisitions (a re-entry among them) and its one
// LeaseEnd, beside its members' own reports to the same trace.
func TestTraceMultiLock(t *testing.T) {
	zk := zktest.Shared(t)
	a, b := zkMutex(t, zk, "trace-a"), zkMutex(t, zk, "trace-b")
	m := newMulti(t, a, b)
	id := multiID(a, b)
	rec := tracetest.New()
	lease, err := m.Acquire(locktrace.WithTrace(ctxT(t), rec.Trace()))
	require.NoError(t, err)
	dones := multiDones(rec)
	require.Len(t, dones, 1)
	d := dones[0]
	assert.Equal(t, id, d.Lock)
	assert.Equal(t, locktrace.OutcomeAcquired, d.Outcome)
	assert.False(t, d.Contended)
	assert.False(t, d.HasToken, "a MultiLock has no token of its own")
	starts := rec.Starts()
	require.Len(t, starts, 3, "the MultiLock's and its two members'")
	assert.Equal(t, id, starts[0].Lock, "the MultiLock's starts first")
	assert.Equal(t, d.ID, starts[0].ID)
	assert.Len(t, ofKind(rec.Dones(), "mutex", func(i locktrace.AcquireDoneInfo) locktrace.LockID { return i.Lock }), 2)

	inner, err := m.Acquire(lease.Context())
	require.NoError(t, err)
	dones = multiDones(rec)
	require.Len(t, dones, 2)
	assert.True(t, dones[1].Reentered)
	require.NoError(t, inner.Release(ctxT(t)))
	assert.Empty(t, rec.Ends(), "a re-entered lease's release ends nothing")

	require.NoError(t, lease.Release(ctxT(t)))
	ends := multiEnds(rec)
	require.Len(t, ends, 1, "one LeaseEnd for the holding")
	assert.Equal(t, id, ends[0].Lock)
	assert.Equal(t, locktrace.EndReleased, ends[0].Cause)
	assert.Positive(t, ends[0].Held)
	assert.Len(t, rec.Ends(), 3, "and one for each member")
}

// A member held elsewhere: TryAcquire is refused (locked, contended, one
// AcquireQueued of the MultiLock), and Acquire is told it waits as soon as
// the member waits, then acquires, contended.
func TestTraceMultiLockContended(t *testing.T) {
	zk := zktest.Shared(t)
	a, b := zkMutex(t, zk, "trace-contended-a"), zkMutex(t, zk, "trace-contended-b")
	m := newMulti(t, a, b)
	id := multiID(a, b)
	holder, err := zkMutex(t, zk, "trace-contended-b").Acquire(ctxT(t))
	require.NoError(t, err)

	rec := tracetest.New()
	_, err = m.TryAcquire(locktrace.WithTrace(ctxT(t), rec.Trace()))
	require.ErrorIs(t, err, recipes.ErrLocked)
	dones := multiDones(rec)
	require.Len(t, dones, 1)
	assert.Equal(t, locktrace.OutcomeLocked, dones[0].Outcome)
	assert.True(t, dones[0].Contended)
	q := multiQueued(rec)
	require.Len(t, q, 1)
	assert.Equal(t, locktrace.AcquireQueuedInfo{ID: dones[0].ID, Lock: id, Try: true}, q[0])

	rec = tracetest.New()
	ctx := locktrace.WithTrace(ctxT(t), rec.Trace())
	pending := zktest.AcquireAsync(func() (recipes.Lease, error) { return m.Acquire(ctx) })
	rec.Await(t, "the MultiLock queued", func(r *tracetest.Recorder) bool { return len(multiQueued(r)) == 1 })
	assert.Empty(t, multiDones(rec), "still waiting")
	require.NoError(t, holder.Release(ctxT(t)))
	lease := pending.Acquired(t, "the MultiLock, once the member was released")
	dones = multiDones(rec)
	require.Len(t, dones, 1)
	assert.Equal(t, locktrace.OutcomeAcquired, dones[0].Outcome)
	assert.True(t, dones[0].Contended)
	assert.Equal(t, dones[0].ID, multiQueued(rec)[0].ID)
	require.NoError(t, lease.Release(ctxT(t)))
	assert.Len(t, multiEnds(rec), 1)
}

// A member's session is partitioned away: the MultiLock's LeaseEnd comes
// once, with that member's cause (suspended), and the Release that
// follows adds nothing.
func TestTraceMultiLockMemberLost(t *testing.T) {
	zk := zktest.Shared(t)
	p := harness.NewProxy(t, zk[0])
	a := zkMutex(t, []string{p.Addr()}, "trace-lost-a", session.WithSessionTimeout(2*time.Second))
	b := zkMutex(t, zk, "trace-lost-b")
	m := newMulti(t, a, b)
	rec := tracetest.New()
	lease, err := m.Acquire(locktrace.WithTrace(ctxT(t), rec.Trace()))
	require.NoError(t, err)

	p.Blackhole(t)
	defer p.Restore(t)
	rec.Await(t, "the MultiLock's LeaseEnd", func(r *tracetest.Recorder) bool { return len(multiEnds(r)) == 1 })
	e := multiEnds(rec)[0]
	assert.Equal(t, multiID(a, b), e.Lock)
	assert.Equal(t, locktrace.EndSuspended, e.Cause, "the member's cause")
	assert.ErrorIs(t, e.Err, recipes.ErrLockLost)
	assert.ErrorIs(t, e.Err, session.ErrSuspended)
	assert.Equal(t, context.Cause(lease.Context()), e.Err)
	requireMemberError(t, e.Err, 0, multilock.OpLost)

	p.Restore(t)
	require.ErrorIs(t, lease.Release(ctxT(t)), recipes.ErrLockLost)
	assert.Len(t, multiEnds(rec), 1, "one LeaseEnd per holding")
}

// Members that report nothing themselves (in-memory locks): a TryAcquire
// refused by one is still contended, and a member lost for a cause of its
// own ends the MultiLock's lease as lost.
func TestTraceMultiLockSilentMembers(t *testing.T) {
	s := newMemServer()
	m := memMulti(t, s, "trace/a", "trace/b")
	id := multiID(s.locker("trace/a"), s.locker("trace/b"))
	held, err := s.locker("trace/b").Acquire(context.Background())
	require.NoError(t, err)
	rec := tracetest.New()
	ctx := locktrace.WithTrace(context.Background(), rec.Trace())
	_, err = m.TryAcquire(ctx)
	require.ErrorIs(t, err, recipes.ErrLocked)
	require.Len(t, rec.Dones(), 1)
	assert.True(t, rec.Dones()[0].Contended)
	require.Len(t, rec.Queued(), 1)
	assert.Equal(t, locktrace.AcquireQueuedInfo{ID: rec.Dones()[0].ID, Lock: id, Try: true}, rec.Queued()[0])
	require.NoError(t, held.Release(context.Background()))

	lease, err := m.Acquire(ctx)
	require.NoError(t, err)
	s.lose("trace/b")
	e := rec.AwaitEnd(t, 1)
	assert.Equal(t, id, e.Lock)
	assert.Equal(t, locktrace.EndLost, e.Cause)
	assert.False(t, e.HasMargin)
	requireMemberError(t, e.Err, 1, multilock.OpLost)
	require.ErrorIs(t, lease.Release(context.Background()), recipes.ErrLockLost)
	assert.Len(t, rec.Ends(), 1)
}
