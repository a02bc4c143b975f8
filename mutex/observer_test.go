package mutex_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/internal/testkit/holdertest"
	"github.com/zkrecipes/zkrecipes/internal/testkit/tracetest"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/locktrace"
	"github.com/zkrecipes/zkrecipes/session"
)

// Why here and not in session/: this tests the session's proof through an
// observer, but what it asserts is the mutex's exclusion and hand-off,
// and session's tests take no lock.

// observedTimeout is the session timeout of the holder on the observer. A
// cut observer answers its clients' pings by itself for syncLimit ticks (2s
// with the harness's zoo.cfg) before it gives up on the leader and drops
// them, while the leader, which expires the sessions, no longer hears of
// them: the holder is told when it can no longer prove that the leader
// hears its session, or at that drop. (internal/testkit/cuttest runs the
// same with ZooKeeper's default timing, where the drop comes 10 s after
// the cut.)
const observedTimeout = 6 * time.Second

// Through a client connected to an observer only (3 voters, 1 observer),
// against a client connected to the voters only: the mutex excludes and
// hands off both ways, and a holder on an observer cut off from the quorum
// is told before its session can expire.
func TestObserver(t *testing.T) {
	z := harness.StartZKObserved(t, 3, 1)
	obs := z.Observers()[0]

	t.Run("handoff", func(t *testing.T) {
		const path = "/observer/handoff"
		ctx := ctxT(t)
		onObserver := newMutex(t, connect(t, []string{obs.Addr()}), path)
		voters := connect(t, z.VoterServers())
		onVoters := newMutex(t, voters, path)

		held, err := onObserver.Acquire(ctx)
		require.NoError(t, err)
		_, err = onVoters.TryAcquire(ctx)
		require.ErrorIs(t, err, recipes.ErrLocked, "the voters' client sees the observer's client's node")
		pending := zktest.AcquireAsync(func() (recipes.Lease, error) { return onVoters.Acquire(ctx) })
		pending.Waiting(t, "the voters' client while the observer's client holds")
		require.NoError(t, held.Release(ctx))
		next := pending.Acquired(t, "the voters' client, once the observer's client released")
		assert.Greater(t, zktest.Token(t, next), zktest.Token(t, held))

		_, err = onObserver.TryAcquire(ctx)
		require.ErrorIs(t, err, recipes.ErrLocked, "the observer serves the voters' client's node")
		pending = zktest.AcquireAsync(func() (recipes.Lease, error) { return onObserver.Acquire(ctx) })
		pending.Waiting(t, "the observer's client while the voters' client holds")
		require.NoError(t, next.Release(ctx))
		last := pending.Acquired(t, "the observer's client, told of the release through the observer")
		assert.Greater(t, zktest.Token(t, last), zktest.Token(t, next))
		require.NoError(t, last.Release(ctx))
		waitForNodes(t, voters, path, 0)
	})

	t.Run("holder on a cut observer is told first", func(t *testing.T) {
		const path = "/observer/cut"
		rec := tracetest.New()
		holder := connect(t, []string{obs.Addr()}, session.WithSessionTimeout(observedTimeout),
			session.WithTrace(rec.Trace()))
		require.Equal(t, observedTimeout, holder.SessionTimeout(), "the server granted another timeout")
		voters := connect(t, z.VoterServers())

		// The successor on the voters is granted the lock once the leader
		// expires the holder's session; the holder must have been told
		// before (the order of the two moments, measured on one clock).
		gap := holdertest.HolderToldFirst(t, newMutex(t, holder, path), newMutex(t, voters, path),
			func() { z.CutObserver(t, obs) }, 0)

		e := rec.AwaitEnd(t, 1)
		assert.Equal(t, mutexID(path), e.Lock)
		assert.Equal(t, locktrace.EndSuspended, e.Cause, "told at the observer's drop")
		assert.ErrorIs(t, e.Err, recipes.ErrLockLost)
		assert.ErrorIs(t, e.Err, session.ErrSuspended)
		require.True(t, e.HasMargin, "a lost ZooKeeper lease knows its server's deadline")
		// The margin the client reports counts from the send time of the
		// last request the leader is proven to have heard: never larger
		// than the real one (the gap to the successor's grant), and at
		// least a quarter of the session timeout, the time left when the
		// default policy gives up on a member that cannot prove.
		t.Logf("holder told %v before the successor's grant; reported margin %v (session timeout %v)",
			gap.Round(time.Millisecond), e.Margin.Round(time.Millisecond), observedTimeout)
		assert.GreaterOrEqual(t, e.Margin, observedTimeout/4-recipes.DriftMargin(observedTimeout), "told too late")
		assert.LessOrEqual(t, e.Margin, gap, "the reported margin is not larger than the real one")

		// Restored, the observer serves again: the holder's client, whose
		// session the leader expired, gets a new one through it and takes
		// the lock again.
		z.RestoreObserver(t, obs)
		z.WaitReady(t)
		waitForNodes(t, voters, path, 0) // the successor released; nothing left behind
		again, err := newMutex(t, holder, path).Acquire(ctxT(t))
		require.NoError(t, err, "through the restored observer")
		require.NoError(t, again.Release(ctxT(t)))
		waitForNodes(t, voters, path, 0)
	})
	// Under OnlyLostIsLost the lease outlives the observer's drop, until
	// the session's trust ends: counted from replies the cut observer gave
	// by itself, it would end after the leader expired the session; counted
	// from the last request the leader is proven to have heard, the holder
	// is told first, and the margin it reports is no larger than the real
	// one.
	t.Run("OnlyLostIsLost", func(t *testing.T) {
		const path = "/observer/lag"
		rec := tracetest.New()
		holder := connect(t, []string{obs.Addr()}, session.WithSessionTimeout(observedTimeout),
			session.WithErrorPolicy(session.OnlyLostIsLost), session.WithTrace(rec.Trace()))
		voters := connect(t, z.VoterServers())
		gap := holdertest.HolderToldFirst(t, newMutex(t, holder, path), newMutex(t, voters, path),
			func() { z.CutObserver(t, obs) }, 0)
		e := rec.AwaitEnd(t, 1)
		require.True(t, e.HasMargin)
		t.Logf("holder told %v before the successor's grant; reported margin %v", gap.Round(time.Millisecond), e.Margin.Round(time.Millisecond))
		assert.LessOrEqual(t, e.Margin, gap, "the reported margin is not larger than the real one")
		z.RestoreObserver(t, obs)
		z.WaitReady(t)
		waitForNodes(t, voters, path, 0)
	})
}
