package semaphore_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/tracetest"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/locktrace"
	"github.com/zkrecipes/zkrecipes/semaphore"
	"github.com/zkrecipes/zkrecipes/session"
)

// The semaphore reports as a lock of kind "semaphore": a full semaphore
// refuses a TryAcquire (contended) and makes an Acquire wait (contended),
// and each holding of n leases ends once.
func TestTraceSemaphore(t *testing.T) {
	const path = "/trace/semaphore"
	servers := sharedServers(t)
	ctx := ctxT(t)
	id := locktrace.LockID{Backend: "zookeeper", Kind: "semaphore", Name: path}
	rec := tracetest.New()
	s, err := semaphore.New(connect(t, servers, session.WithTrace(rec.Trace())), path, 2)
	require.NoError(t, err)
	other, err := semaphore.New(connect(t, servers), path, 2) // not traced
	require.NoError(t, err)

	mine, err := s.Acquire(ctx, 1)
	require.NoError(t, err)
	d := rec.AwaitDone(t, 1)
	assert.Equal(t, id, d.Lock)
	assert.Equal(t, locktrace.OutcomeAcquired, d.Outcome)
	assert.False(t, d.Contended)
	theirs, err := other.Acquire(ctx, 1) // full now
	require.NoError(t, err)

	_, err = s.TryAcquire(ctx, 1)
	require.ErrorIs(t, err, recipes.ErrLocked)
	d = rec.AwaitDone(t, 2)
	assert.Equal(t, locktrace.OutcomeLocked, d.Outcome)
	assert.True(t, d.Contended, "the semaphore is full")
	require.Len(t, rec.Queued(), 1)
	assert.Equal(t, locktrace.AcquireQueuedInfo{ID: d.ID, Lock: id, Try: true}, rec.Queued()[0])

	pending := zktest.AcquireAsync(func() (recipes.Lease, error) { return s.Acquire(ctx, 1) })
	rec.Await(t, "the waiter queued", func(r *tracetest.Recorder) bool { return len(r.Queued()) == 2 })
	require.NoError(t, theirs.Release(ctx))
	next := pending.Acquired(t, "the waiter, once a lease was released")
	d = rec.AwaitDone(t, 3)
	assert.Equal(t, locktrace.OutcomeAcquired, d.Outcome)
	assert.True(t, d.Contended)
	assert.Equal(t, d.ID, rec.Queued()[1].ID)

	require.NoError(t, next.Release(ctx))
	require.NoError(t, mine.Release(ctx))
	ends := rec.Ends()
	require.Len(t, ends, 2, "one LeaseEnd per holding")
	for _, e := range ends {
		assert.Equal(t, id, e.Lock)
		assert.Equal(t, locktrace.EndReleased, e.Cause)
	}
}
