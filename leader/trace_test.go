package leader_test

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
	"github.com/zkrecipes/zkrecipes/session"
)

// leaderID is the LockID of the election at path in every report.
func leaderID(path string) locktrace.LockID {
	return locktrace.LockID{Backend: "zookeeper", Kind: "leader", Name: path}
}

// awaitLeaderships waits (bounded) for n Leadership reports and returns
// them.
func awaitLeaderships(t *testing.T, rec *tracetest.Recorder, n int) []locktrace.LeadershipInfo {
	t.Helper()
	rec.Await(t, "Leadership reports", func(r *tracetest.Recorder) bool { return len(r.Leaderships()) >= n })
	return rec.Leaderships()
}

// noMoreLeaderships checks, for zktest.StillWaiting (a bounded look, not a
// timing assertion), that rec gets no more than n Leadership reports.
func noMoreLeaderships(t *testing.T, rec *tracetest.Recorder, n int, what string) {
	t.Helper()
	require.Never(t, func() bool { return len(rec.Leaderships()) > n }, zktest.StillWaiting, 10*time.Millisecond, what)
}

// A participant traced by its client gains the leadership and gives it up
// (Release: Err nil); one traced by its Acquire's context is refused while
// another leads (no Leadership report), then gains it when the leader
// resigns. The leadership's acquisition and end are reported as a lock's
// of kind "leader".
func TestTraceLeadership(t *testing.T) {
	const path = "/trace/election"
	servers := sharedServers(t)
	id := leaderID(path)
	rec := tracetest.New()
	e := newLatch(t, connect(t, servers, session.WithTrace(rec.Trace())), path, "first")
	l, err := e.Campaign(ctxT(t))
	require.NoError(t, err)
	got := awaitLeaderships(t, rec, 1)
	assert.Equal(t, locktrace.LeadershipInfo{Lock: id, Leader: true}, got[0])
	d := rec.AwaitDone(t, 1)
	assert.Equal(t, id, d.Lock)
	assert.Equal(t, locktrace.OutcomeAcquired, d.Outcome)
	assert.Equal(t, zktest.Token(t, l), d.Token)

	xrec := tracetest.New()
	xctx := locktrace.WithTrace(ctxT(t), xrec.Trace())
	second := newLatch(t, connect(t, servers), path, "second")
	_, err = second.TryAcquire(xctx)
	require.ErrorIs(t, err, recipes.ErrLocked)
	assert.Equal(t, locktrace.OutcomeLocked, xrec.AwaitDone(t, 1).Outcome)
	assert.Empty(t, xrec.Leaderships(), "refused: no leadership")
	pending := zktest.AcquireAsync(func() (recipes.Lease, error) { return second.Acquire(xctx) })
	xrec.Await(t, "the second campaign queued", func(r *tracetest.Recorder) bool { return len(r.Queued()) == 2 })

	require.NoError(t, l.Release(ctxT(t)))
	got = awaitLeaderships(t, rec, 2)
	assert.Equal(t, locktrace.LeadershipInfo{Lock: id, Leader: false}, got[1], "given up: no error")
	e1 := rec.AwaitEnd(t, 1)
	assert.Equal(t, id, e1.Lock)
	assert.Equal(t, locktrace.EndReleased, e1.Cause)

	next := pending.Acquired(t, "the second, once the first resigned")
	xgot := awaitLeaderships(t, xrec, 1)
	assert.Equal(t, locktrace.LeadershipInfo{Lock: id, Leader: true}, xgot[0])
	assert.True(t, xrec.AwaitDone(t, 2).Contended)
	require.NoError(t, next.Release(ctxT(t)))
	xgot = awaitLeaderships(t, xrec, 2)
	assert.Equal(t, locktrace.LeadershipInfo{Lock: id, Leader: false}, xgot[1])
	assert.Len(t, rec.Leaderships(), 2, "the first's trace hears only of its own leaderships")
}

// A campaign whose context comes from the leadership re-enters it: no
// second gain, and the leadership ends (once) when the last of its leases
// is released, whichever goes first.
func TestTraceLeadershipReentered(t *testing.T) {
	const path = "/trace/election-reentered"
	rec := tracetest.New()
	e := newLatch(t, connect(t, sharedServers(t)), path, "only")
	outer, err := e.Acquire(locktrace.WithTrace(ctxT(t), rec.Trace()))
	require.NoError(t, err)
	inner, err := e.Campaign(outer.Context())
	require.NoError(t, err)
	assert.True(t, rec.AwaitDone(t, 2).Reentered)
	awaitLeaderships(t, rec, 1)

	require.NoError(t, outer.Release(ctxT(t)))
	noMoreLeaderships(t, rec, 1, "the re-entered lease still leads")
	require.NoError(t, inner.Err())
	require.NoError(t, inner.Release(ctxT(t)))
	got := awaitLeaderships(t, rec, 2)
	assert.Equal(t, locktrace.LeadershipInfo{Lock: leaderID(path), Leader: false}, got[1])
	noMoreLeaderships(t, rec, 2, "one loss per leadership")
	assert.Len(t, rec.Ends(), 1)
}

// Lead runs its function while leading: gained before it runs, given up
// when it returns.
func TestTraceLead(t *testing.T) {
	const path = "/trace/election-lead"
	rec := tracetest.New()
	e := newLatch(t, connect(t, sharedServers(t), session.WithTrace(rec.Trace())), path, "only")
	require.NoError(t, e.Lead(ctxT(t), func(ctx context.Context) error {
		assert.Len(t, rec.Leaderships(), 1, "gained before the function runs")
		return nil
	}))
	got := awaitLeaderships(t, rec, 2)
	assert.True(t, got[0].Leader)
	assert.Equal(t, locktrace.LeadershipInfo{Lock: leaderID(path), Leader: false}, got[1])
}

// The leader's connection is blackholed: the leadership is lost, with the
// cause of its end (the session suspended, under the default policy).
func TestTraceLeadershipLostOnFault(t *testing.T) {
	const path = "/trace/election-fault"
	p := harness.NewProxy(t, sharedServers(t)[0])
	rec := tracetest.New()
	e := newLatch(t, connect(t, []string{p.Addr()}, session.WithSessionTimeout(faultTimeout),
		session.WithTrace(rec.Trace())), path, "cut-off")
	l, err := e.Campaign(ctxT(t))
	require.NoError(t, err)
	awaitLeaderships(t, rec, 1)

	p.Blackhole(t)
	defer p.Restore(t)
	got := awaitLeaderships(t, rec, 2)
	lost := got[1]
	assert.Equal(t, leaderID(path), lost.Lock)
	assert.False(t, lost.Leader)
	assert.ErrorIs(t, lost.Err, recipes.ErrLockLost)
	assert.ErrorIs(t, lost.Err, session.ErrSuspended)
	assert.Equal(t, locktrace.EndSuspended, locktrace.EndCauseOf(lost.Err))
	assert.Equal(t, l.Err(), lost.Err, "the leadership's cause")
	e1 := rec.AwaitEnd(t, 1)
	assert.Equal(t, locktrace.EndSuspended, e1.Cause)
	assert.True(t, e1.HasMargin)
	t.Logf("leader told %v before the server may expire its session (timeout %v)",
		e1.Margin.Round(time.Millisecond), faultTimeout)
	p.Restore(t)
	require.ErrorIs(t, l.Release(ctxT(t)), recipes.ErrLockLost)
	noMoreLeaderships(t, rec, 2, "one loss per leadership")
}

// The leader's client is closed: the participant leaves the election,
// which the leader package counts as giving the leadership up (Err nil);
// the lease's end says closed.
func TestTraceLeadershipEndsAtClose(t *testing.T) {
	const path = "/trace/election-close"
	rec := tracetest.New()
	c := connect(t, sharedServers(t), session.WithTrace(rec.Trace()))
	l, err := newLatch(t, c, path, "closing").Campaign(ctxT(t))
	require.NoError(t, err)
	awaitLeaderships(t, rec, 1)
	c.Close()
	got := awaitLeaderships(t, rec, 2)
	assert.Equal(t, locktrace.LeadershipInfo{Lock: leaderID(path), Leader: false}, got[1])
	assert.ErrorIs(t, l.Err(), session.ErrClosed)
	assert.Equal(t, locktrace.EndClosed, rec.AwaitEnd(t, 1).Cause)
}
