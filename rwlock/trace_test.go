package rwlock_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/tracetest"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/locktrace"
	"github.com/zkrecipes/zkrecipes/session"
)

// The halves of a read/write lock report as locks of kinds "read" and
// "write", named by the lock's path: readers share, and a writer behind a
// reader is contended.
func TestTraceReadWrite(t *testing.T) {
	const path = "/trace/rwlock"
	rec := tracetest.New()
	servers := sharedServers(t)
	l := newRW(t, connect(t, servers, session.WithTrace(rec.Trace())), path)
	other := newRW(t, connect(t, servers), path) // not traced
	ctx := ctxT(t)
	readID := locktrace.LockID{Backend: "zookeeper", Kind: "read", Name: path}
	writeID := locktrace.LockID{Backend: "zookeeper", Kind: "write", Name: path}

	otherRead, err := other.ReadLock().Acquire(ctx)
	require.NoError(t, err)
	read, err := l.ReadLock().Acquire(ctx)
	require.NoError(t, err)
	d := rec.Dones()[0]
	assert.Equal(t, readID, d.Lock)
	assert.Equal(t, locktrace.OutcomeAcquired, d.Outcome)
	assert.False(t, d.Contended, "readers share")
	require.NoError(t, read.Release(ctx))
	e := rec.AwaitEnd(t, 1)
	assert.Equal(t, readID, e.Lock)
	assert.Equal(t, locktrace.EndReleased, e.Cause)

	_, err = l.WriteLock().TryAcquire(ctx)
	require.ErrorIs(t, err, recipes.ErrLocked)
	d = rec.Dones()[1]
	assert.Equal(t, writeID, d.Lock)
	assert.Equal(t, locktrace.OutcomeLocked, d.Outcome)
	assert.True(t, d.Contended, "a reader holds it")
	q := rec.Queued()
	require.Len(t, q, 1)
	assert.Equal(t, locktrace.AcquireQueuedInfo{ID: d.ID, Lock: writeID, Try: true}, q[0])

	ws := l.WriteLock()
	pending := zktest.AcquireAsync(func() (recipes.Lease, error) { return ws.Acquire(ctx) })
	rec.Await(t, "the writer queued", func(r *tracetest.Recorder) bool { return len(r.Queued()) == 2 })
	require.NoError(t, otherRead.Release(ctx))
	write := pending.Acquired(t, "the writer, once the reader released")
	d = rec.AwaitDone(t, 3)
	assert.Equal(t, writeID, d.Lock)
	assert.Equal(t, locktrace.OutcomeAcquired, d.Outcome)
	assert.True(t, d.Contended)
	assert.Equal(t, zktest.Token(t, write), d.Token)
	require.NoError(t, write.Release(ctx))
	e = rec.AwaitEnd(t, 2)
	assert.Equal(t, writeID, e.Lock)
	assert.Equal(t, locktrace.EndReleased, e.Cause)
	assert.Len(t, rec.Starts(), 3)
}
