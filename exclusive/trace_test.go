package exclusive_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/exclusive"
	"github.com/zkrecipes/zkrecipes/internal/testkit/tracetest"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/locktrace"
)

// The exclusive lock reports as a lock of kind "exclusive": refused and
// contended behind a holder, then acquired once it is released.
func TestTraceExclusive(t *testing.T) {
	const path = "/trace/exclusive"
	servers := sharedServers(t)
	ctx := ctxT(t)
	id := locktrace.LockID{Backend: "zookeeper", Kind: "exclusive", Name: path}
	holder, err := exclusive.New(connect(t, servers), path)
	require.NoError(t, err)
	held, err := holder.Acquire(ctx)
	require.NoError(t, err)

	l, err := exclusive.New(connect(t, servers), path)
	require.NoError(t, err)
	rec := tracetest.New()
	tctx := locktrace.WithTrace(ctx, rec.Trace())
	_, err = l.TryAcquire(tctx)
	require.ErrorIs(t, err, recipes.ErrLocked)
	d := rec.AwaitDone(t, 1)
	assert.Equal(t, id, d.Lock)
	assert.Equal(t, locktrace.OutcomeLocked, d.Outcome)
	assert.True(t, d.Contended)
	require.Len(t, rec.Queued(), 1)
	assert.Equal(t, locktrace.AcquireQueuedInfo{ID: d.ID, Lock: id, Try: true}, rec.Queued()[0])

	pending := zktest.AcquireAsync(func() (recipes.Lease, error) { return l.Acquire(tctx) })
	rec.Await(t, "the waiter queued", func(r *tracetest.Recorder) bool { return len(r.Queued()) == 2 })
	require.NoError(t, held.Release(ctx))
	lease := pending.Acquired(t, "the waiter, once the holder released")
	d = rec.AwaitDone(t, 2)
	assert.Equal(t, id, d.Lock)
	assert.Equal(t, locktrace.OutcomeAcquired, d.Outcome)
	assert.True(t, d.Contended)
	assert.Equal(t, zktest.Token(t, lease), d.Token)
	assert.Equal(t, d.ID, rec.Queued()[1].ID)
	require.NoError(t, lease.Release(ctx))
	e := rec.AwaitEnd(t, 1)
	assert.Equal(t, id, e.Lock)
	assert.Equal(t, locktrace.EndReleased, e.Cause)
	assert.Len(t, rec.Ends(), 1)
}
