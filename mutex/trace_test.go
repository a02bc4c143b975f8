package mutex_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/internal/testkit/tracetest"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/locktrace"
	"github.com/zkrecipes/zkrecipes/session"
	"github.com/zkrecipes/zkrecipes/znode"
)

// What the mutex reports to a locktrace.Trace, against the real server:
// each acquisition's outcome, and each holding's end with its cause and,
// for a loss, the told-first margin.

// mutexID is the LockID of the mutex at path in every report.
func mutexID(path string) locktrace.LockID {
	return locktrace.LockID{Backend: "zookeeper", Kind: "mutex", Name: path}
}

// tracedCtx is ctxT carrying rec's trace (locktrace.WithTrace).
func tracedCtx(t testing.TB, rec *tracetest.Recorder) context.Context {
	return locktrace.WithTrace(ctxT(t), rec.Trace())
}

// onlyAcquisition checks that rec was told of exactly one acquisition, of
// id: one AcquireStart and one AcquireDone, with the same ID. It returns
// the AcquireDone.
func onlyAcquisition(t *testing.T, rec *tracetest.Recorder, id locktrace.LockID, try bool) locktrace.AcquireDoneInfo {
	t.Helper()
	starts, dones := rec.Starts(), rec.Dones()
	require.Len(t, starts, 1, "AcquireStart reports")
	require.Len(t, dones, 1, "AcquireDone reports")
	s, d := starts[0], dones[0]
	assert.Equal(t, id, s.Lock)
	assert.Equal(t, id, d.Lock)
	assert.Equal(t, s.ID, d.ID, "AcquireStart and AcquireDone of one acquisition")
	assert.NotZero(t, s.ID)
	assert.Equal(t, try, s.Try)
	assert.Equal(t, try, d.Try)
	assert.NotNil(t, s.Context)
	assert.False(t, s.Start.IsZero())
	return d
}

// checkQueuedOnce checks that rec was told once that the acquisition done
// waited (AcquireQueued, with its ID).
func checkQueuedOnce(t *testing.T, rec *tracetest.Recorder, done locktrace.AcquireDoneInfo) {
	t.Helper()
	q := rec.Queued()
	require.Len(t, q, 1, "AcquireQueued reports")
	assert.Equal(t, locktrace.AcquireQueuedInfo{ID: done.ID, Lock: done.Lock, Try: done.Try}, q[0])
}

// awaitQueued waits (bounded) until rec was told that an acquisition waits.
func awaitQueued(t *testing.T, rec *tracetest.Recorder) {
	t.Helper()
	rec.Await(t, "AcquireQueued", func(r *tracetest.Recorder) bool { return len(r.Queued()) > 0 })
}

func TestTraceAcquireOutcomes(t *testing.T) {
	servers := sharedServers(t)
	c := connect(t, servers)
	other := connect(t, servers) // a holder that is not traced
	hold := func(t *testing.T, path string) recipes.Lease {
		t.Helper()
		l, err := newMutex(t, other, path).Acquire(ctxT(t))
		require.NoError(t, err)
		return l
	}

	t.Run("acquired", func(t *testing.T) {
		const path = "/trace/outcome-acquired"
		rec := tracetest.New()
		lease, err := newMutex(t, c, path).Acquire(tracedCtx(t, rec))
		require.NoError(t, err)
		d := onlyAcquisition(t, rec, mutexID(path), false)
		assert.Equal(t, locktrace.OutcomeAcquired, d.Outcome)
		assert.NoError(t, d.Err)
		assert.False(t, d.Contended, "no one held it")
		assert.False(t, d.Reentered)
		assert.True(t, d.HasToken)
		assert.Equal(t, zktest.Token(t, lease), d.Token)
		assert.Positive(t, d.Waited)
		assert.Empty(t, rec.Queued())
		assert.Empty(t, rec.Ends(), "held")

		// Released with a context that carries no trace: the lease keeps
		// the one of its Acquire.
		require.NoError(t, lease.Release(context.Background()))
		ends := rec.Ends()
		require.Len(t, ends, 1, "LeaseEnd at the Release")
		e := ends[0]
		assert.Equal(t, mutexID(path), e.Lock)
		assert.Equal(t, locktrace.EndReleased, e.Cause)
		assert.ErrorIs(t, e.Err, recipes.ErrReleased)
		assert.Positive(t, e.Held)
		assert.False(t, e.HasMargin, "a release has no told-first margin")
		assert.True(t, e.HasToken)
		assert.Equal(t, d.Token, e.Token)
	})

	t.Run("locked", func(t *testing.T) {
		const path = "/trace/outcome-locked"
		holder := hold(t, path)
		defer func() { require.NoError(t, holder.Release(ctxT(t))) }()
		rec := tracetest.New()
		_, err := newMutex(t, c, path).TryAcquire(tracedCtx(t, rec))
		require.ErrorIs(t, err, recipes.ErrLocked)
		d := onlyAcquisition(t, rec, mutexID(path), true)
		assert.Equal(t, locktrace.OutcomeLocked, d.Outcome)
		assert.ErrorIs(t, d.Err, recipes.ErrLocked)
		assert.True(t, d.Contended)
		assert.False(t, d.HasToken)
		checkQueuedOnce(t, rec, d)
		assert.Empty(t, rec.Ends())
	})

	t.Run("contended", func(t *testing.T) {
		const path = "/trace/outcome-contended"
		holder := hold(t, path)
		rec := tracetest.New()
		m := newMutex(t, c, path)
		ctx := tracedCtx(t, rec)
		pending := zktest.AcquireAsync(func() (recipes.Lease, error) { return m.Acquire(ctx) })
		awaitQueued(t, rec)
		assert.Empty(t, rec.Dones(), "still waiting")
		require.NoError(t, holder.Release(ctxT(t)))
		lease := pending.Acquired(t, "the waiter, once the holder released")
		d := onlyAcquisition(t, rec, mutexID(path), false)
		assert.Equal(t, locktrace.OutcomeAcquired, d.Outcome)
		assert.True(t, d.Contended, "it waited behind the holder")
		assert.Equal(t, zktest.Token(t, lease), d.Token)
		checkQueuedOnce(t, rec, d)
		require.NoError(t, lease.Release(ctxT(t)))
		require.Len(t, rec.Ends(), 1)
	})

	t.Run("timeout", func(t *testing.T) {
		const path = "/trace/outcome-timeout"
		holder := hold(t, path)
		defer func() { require.NoError(t, holder.Release(ctxT(t))) }()
		rec := tracetest.New()
		// Long enough to queue (a create and a listing) on a loaded machine.
		ctx, cancel := context.WithTimeout(tracedCtx(t, rec), time.Second)
		defer cancel()
		_, err := newMutex(t, c, path).Acquire(ctx)
		require.ErrorIs(t, err, recipes.ErrNotAcquired)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		d := onlyAcquisition(t, rec, mutexID(path), false)
		assert.Equal(t, locktrace.OutcomeTimeout, d.Outcome)
		assert.Equal(t, err, d.Err)
		assert.True(t, d.Contended)
		checkQueuedOnce(t, rec, d)
		assert.Empty(t, rec.Ends())
	})

	t.Run("canceled", func(t *testing.T) {
		const path = "/trace/outcome-canceled"
		holder := hold(t, path)
		defer func() { require.NoError(t, holder.Release(ctxT(t))) }()
		rec := tracetest.New()
		ctx, cancel := context.WithCancel(tracedCtx(t, rec))
		defer cancel()
		m := newMutex(t, c, path)
		zktest.AcquireAsync(func() (recipes.Lease, error) { return m.Acquire(ctx) })
		awaitQueued(t, rec)
		cancel()
		d := rec.AwaitDone(t, 1)
		assert.Equal(t, locktrace.OutcomeCanceled, d.Outcome)
		assert.ErrorIs(t, d.Err, recipes.ErrNotAcquired)
		assert.ErrorIs(t, d.Err, context.Canceled)
		assert.True(t, d.Contended)
		onlyAcquisition(t, rec, mutexID(path), false)
		checkQueuedOnce(t, rec, d)
	})

	t.Run("error", func(t *testing.T) {
		const path = "/trace/outcome-error"
		closed := connect(t, servers)
		closed.Close()
		rec := tracetest.New()
		_, err := newMutex(t, closed, path).Acquire(tracedCtx(t, rec))
		require.ErrorIs(t, err, recipes.ErrNotAcquired)
		require.ErrorIs(t, err, session.ErrClosed)
		require.NotErrorIs(t, err, context.Canceled)
		require.NotErrorIs(t, err, context.DeadlineExceeded)
		d := onlyAcquisition(t, rec, mutexID(path), false)
		assert.Equal(t, locktrace.OutcomeError, d.Outcome)
		assert.Equal(t, err, d.Err)
		assert.Empty(t, rec.Ends())
	})

	t.Run("reentered", func(t *testing.T) {
		const path = "/trace/outcome-reentered"
		rec := tracetest.New()
		m := newMutex(t, c, path)
		outer, err := m.Acquire(tracedCtx(t, rec))
		require.NoError(t, err)
		// The lease's context carries the trace of its Acquire.
		inner, err := m.Acquire(outer.Context())
		require.NoError(t, err)
		dones := rec.Dones()
		require.Len(t, dones, 2)
		assert.False(t, dones[0].Reentered)
		assert.True(t, dones[1].Reentered, "the second re-entered the first's holding")
		assert.False(t, dones[1].Contended)
		assert.Equal(t, locktrace.OutcomeAcquired, dones[1].Outcome)
		assert.Equal(t, zktest.Token(t, outer), dones[1].Token, "one holding, one token")
		assert.NotEqual(t, dones[0].ID, dones[1].ID)

		require.NoError(t, inner.Release(ctxT(t)))
		assert.Empty(t, rec.Ends(), "the holding goes on: no LeaseEnd for a re-entered lease")
		require.NoError(t, outer.Release(ctxT(t)))
		ends := rec.Ends()
		require.Len(t, ends, 1, "one LeaseEnd for the holding")
		assert.Equal(t, locktrace.EndReleased, ends[0].Cause)
	})
}

// The trace of the client (session.WithTrace) hears of every lock made on
// it; with a trace in the Acquire's context too, both hear of everything,
// the context's first.
func TestTraceClientAndContext(t *testing.T) {
	const path = "/trace/client-and-context"
	var mu sync.Mutex
	var order []string
	// note wraps a recorder's trace so that its AcquireStart also notes
	// who was told.
	note := func(rec *tracetest.Recorder, who string) *locktrace.Trace {
		tr := rec.Trace()
		start := tr.AcquireStart
		tr.AcquireStart = func(i locktrace.AcquireStartInfo) {
			start(i)
			mu.Lock()
			order = append(order, who)
			mu.Unlock()
		}
		return tr
	}
	crec, xrec := tracetest.New(), tracetest.New()
	c := connect(t, sharedServers(t), session.WithTrace(note(crec, "client")))
	m := newMutex(t, c, path)

	// The client's trace alone.
	lease, err := m.Acquire(ctxT(t))
	require.NoError(t, err)
	require.NoError(t, lease.Release(ctxT(t)))
	onlyAcquisition(t, crec, mutexID(path), false)
	require.Len(t, crec.Ends(), 1)
	assert.Equal(t, locktrace.EndReleased, crec.Ends()[0].Cause)

	// Both.
	lease, err = m.Acquire(locktrace.WithTrace(ctxT(t), note(xrec, "context")))
	require.NoError(t, err)
	require.NoError(t, lease.Release(ctxT(t)))
	xd := onlyAcquisition(t, xrec, mutexID(path), false)
	cd := crec.Dones()
	require.Len(t, cd, 2)
	assert.Equal(t, xd, cd[1], "both were told the same")
	require.Len(t, xrec.Ends(), 1)
	require.Len(t, crec.Ends(), 2)
	assert.Equal(t, xrec.Ends()[0], crec.Ends()[1])
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"client", "context", "client"}, order, "the context's trace is told first")
}

// A holding lost at a fault: the LeaseEnd says why, with the told-first
// margin (the time left until the server may expire the session, as the
// client knows it), once, and the Release that follows reports nothing
// more.
func TestTraceLeaseEndOnFault(t *testing.T) {
	eachPolicy(t, func(t *testing.T, _ string, p *harness.Proxy, c *session.Client,
		policy session.ErrorPolicy, path string) {
		rec := tracetest.New()
		lease, err := newMutex(t, c, path).Acquire(tracedCtx(t, rec))
		require.NoError(t, err)

		p.Blackhole(t) // neither side hears the other
		defer p.Restore(t)
		e := rec.AwaitEnd(t, 1)
		assert.Equal(t, mutexID(path), e.Lock)
		assert.ErrorIs(t, e.Err, recipes.ErrLockLost)
		assert.Equal(t, context.Cause(lease.Context()), e.Err, "the lease's cause")
		assert.Positive(t, e.Held)
		assert.Equal(t, zktest.Token(t, lease), e.Token)
		require.True(t, e.HasMargin, "a lost ZooKeeper lease knows its server's deadline")
		t.Logf("policy %v: %s, told %v before the server may expire the session (session timeout %v)",
			policy, e.Cause, e.Margin.Round(time.Millisecond), trustTimeout)
		switch policy {
		case session.SuspendedIsLost:
			assert.Equal(t, locktrace.EndSuspended, e.Cause)
			assert.ErrorIs(t, e.Err, session.ErrSuspended)
			// The watchdog reports Suspended 2/3 t after the send time of
			// the last request answered, and the server may expire the
			// session t after it (session/liveness.go): the margin is t/3
			// less the time the watchdog's timer and the holding's end take
			// to run. t/4 leaves t/12 of that for a loaded machine.
			assert.GreaterOrEqual(t, e.Margin, trustTimeout/4, "told too late")
		case session.OnlyLostIsLost:
			assert.Equal(t, locktrace.EndSessionLost, e.Cause)
			assert.ErrorIs(t, e.Err, session.ErrSessionLost)
			// Trusted until t less the drift margin after that send time:
			// the margin is the drift margin less scheduling; it must not
			// be spent.
			assert.Positive(t, e.Margin, "told after the server may have expired the session")
		}

		p.Restore(t)
		require.ErrorIs(t, lease.Release(ctxT(t)), recipes.ErrLockLost)
		assert.Len(t, rec.Ends(), 1, "one LeaseEnd per holding")
	})
}

// The client is closed while the lock is held: the client's trace hears of
// the end (closed), and its ClientTrace of the Closed state.
func TestTraceLeaseEndClosed(t *testing.T) {
	const path = "/trace/end-closed"
	rec := tracetest.New()
	c := connect(t, sharedServers(t), rec.SessionOptions()...)
	lease, err := newMutex(t, c, path).Acquire(ctxT(t))
	require.NoError(t, err)
	c.Close()
	e := rec.AwaitEnd(t, 1)
	assert.Equal(t, mutexID(path), e.Lock)
	assert.Equal(t, locktrace.EndClosed, e.Cause)
	assert.ErrorIs(t, e.Err, recipes.ErrLockLost)
	assert.ErrorIs(t, e.Err, session.ErrClosed)
	require.ErrorIs(t, lease.Release(ctxT(t)), recipes.ErrLockLost)
	assert.Len(t, rec.Ends(), 1)
	states := rec.States()
	require.NotEmpty(t, states)
	assert.Equal(t, session.Closed, states[len(states)-1].State)
}

// The lock node is deleted by a third party while held (the mutex does not
// watch for it): the Release finds it gone, returns ErrLockLost, and the
// LeaseEnd says gone, with Release's error.
func TestTraceLeaseEndGone(t *testing.T) {
	const path = "/trace/end-gone"
	servers := sharedServers(t)
	rec := tracetest.New()
	lease, err := newMutex(t, connect(t, servers), path).Acquire(tracedCtx(t, rec))
	require.NoError(t, err)
	require.NoError(t, connect(t, servers).Delete(ctxT(t), lease.(znode.Lease).Node(), -1))
	assert.Empty(t, rec.Ends(), "not watched for")

	err = lease.Release(ctxT(t))
	require.ErrorIs(t, err, recipes.ErrLockLost)
	ends := rec.Ends()
	require.Len(t, ends, 1)
	assert.Equal(t, locktrace.EndGone, ends[0].Cause)
	assert.Equal(t, err, ends[0].Err, "Release's error")
	assert.False(t, ends[0].HasMargin)
}

// Someone asks for a revocable mutex (znode.Revoke) and the holder
// releases it: the LeaseEnd says revoked.
func TestTraceLeaseEndRevoked(t *testing.T) {
	const path = "/trace/end-revoked"
	servers := sharedServers(t)
	m, err := mutex.New(connect(t, servers), path, mutex.WithRevocable())
	require.NoError(t, err)
	rec := tracetest.New()
	lease, err := m.Acquire(tracedCtx(t, rec))
	require.NoError(t, err)
	zl := lease.(znode.Lease)
	require.NoError(t, znode.Revoke(ctxT(t), connect(t, servers), zl.Node()))
	select {
	case <-zl.Revoked():
	case <-time.After(waitLimit):
		t.Fatal("the holder was not told of the revocation")
	}
	require.NoError(t, lease.Release(ctxT(t)))
	ends := rec.Ends()
	require.Len(t, ends, 1)
	assert.Equal(t, locktrace.EndRevoked, ends[0].Cause)
	assert.ErrorIs(t, ends[0].Err, recipes.ErrReleased)
	assert.False(t, ends[0].HasMargin)
	assert.Equal(t, mutexID(path), ends[0].Lock)
}
