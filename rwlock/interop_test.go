package rwlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/curator"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// Interoperability with Curator's InterProcessReadWriteLock (Debian's 5.4
// jars, in a JVM driven by package curator) on the same path of a real
// ZooKeeper.

// stillWaiting is how long a waiter is watched to see that it does not get
// the lock while another holds it: a bounded look, not a timing assertion.
const stillWaiting = 300 * time.Millisecond

func curatorRW(t *testing.T, servers []string, path string) *curator.Agent {
	t.Helper()
	a := curator.Start(t, servers)
	a.DoExpect(t, "rw "+path, "ok")
	return a
}

// acquireAsync runs l.Acquire in a goroutine bounded by the test's context.
func acquireAsync(ctx context.Context, l recipes.Locker) <-chan recipes.Lease {
	out := make(chan recipes.Lease, 1)
	go func() {
		lease, err := l.Acquire(ctx)
		if err == nil {
			out <- lease
		}
		close(out)
	}()
	return out
}

func waitLease(t *testing.T, what string, ch <-chan recipes.Lease) recipes.Lease {
	t.Helper()
	select {
	case l, ok := <-ch:
		require.True(t, ok, "%s: Acquire failed", what)
		return l
	case <-time.After(waitLimit):
		t.Fatalf("%s: not acquired within %v", what, waitLimit)
		return nil
	}
}

func notYet(t *testing.T, what string, ch <-chan recipes.Lease) {
	t.Helper()
	select {
	case l := <-ch:
		t.Fatalf("%s acquired (token %d) while the other side held the lock", what, zktest.Token(t, l))
	case <-time.After(stillWaiting):
	}
}

func TestInteropCuratorWriterBlocksGo(t *testing.T) {
	servers := sharedServers(t)
	ctx := ctxT(t)
	const path = "/interop-rw-curator-writer"
	a := curatorRW(t, servers, path)
	a.DoExpect(t, "write-acquire", "acquired")

	rw := newRW(t, connect(t, servers), path)
	_, err := rw.ReadLock().TryAcquire(ctx)
	assert.ErrorIs(t, err, recipes.ErrLocked, "our reader behind Curator's writer")
	_, err = rw.WriteLock().TryAcquire(ctx)
	assert.ErrorIs(t, err, recipes.ErrLocked, "our writer behind Curator's writer")

	reader := acquireAsync(ctx, rw.ReadLock())
	notYet(t, "our reader", reader)
	a.DoExpect(t, "write-release", "released")
	require.NoError(t, waitLease(t, "our reader", reader).Release(ctx))
}

func TestInteropCuratorReaderAdmitsReadersBlocksWriters(t *testing.T) {
	servers := sharedServers(t)
	ctx := ctxT(t)
	const path = "/interop-rw-curator-reader"
	a := curatorRW(t, servers, path)
	a.DoExpect(t, "read-acquire", "acquired")

	r, err := newRW(t, connect(t, servers), path).ReadLock().TryAcquire(ctx)
	require.NoError(t, err, "our reader beside Curator's reader")
	w := newRW(t, connect(t, servers), path).WriteLock()
	_, err = w.TryAcquire(ctx)
	assert.ErrorIs(t, err, recipes.ErrLocked, "our writer while Curator reads")
	writer := acquireAsync(ctx, w)
	require.NoError(t, r.Release(ctx))
	notYet(t, "our writer", writer)
	a.DoExpect(t, "read-release", "released")
	require.NoError(t, waitLease(t, "our writer", writer).Release(ctx))
}

func TestInteropGoWriterBlocksCurator(t *testing.T) {
	servers := sharedServers(t)
	ctx := ctxT(t)
	const path = "/interop-rw-go-writer"
	a := curatorRW(t, servers, path)
	w, err := newRW(t, connect(t, servers), path).WriteLock().Acquire(ctx)
	require.NoError(t, err)
	a.DoExpect(t, "read-tryacquire", "locked")
	a.DoExpect(t, "write-tryacquire", "locked")
	a.Send(t, "read-acquire")
	a.ExpectNoReply(t, stillWaiting)
	require.NoError(t, w.Release(ctx))
	a.Expect(t, "acquired", waitLimit)
	a.DoExpect(t, "read-release", "released")
}

func TestInteropGoReaderAdmitsCuratorReaderBlocksWriter(t *testing.T) {
	servers := sharedServers(t)
	ctx := ctxT(t)
	const path = "/interop-rw-go-reader"
	a := curatorRW(t, servers, path)
	r, err := newRW(t, connect(t, servers), path).ReadLock().Acquire(ctx)
	require.NoError(t, err)
	a.DoExpect(t, "read-tryacquire", "acquired")
	a.DoExpect(t, "read-release", "released")
	a.DoExpect(t, "write-tryacquire", "locked")
	a.Send(t, "write-acquire")
	a.ExpectNoReply(t, stillWaiting)
	require.NoError(t, r.Release(ctx))
	a.Expect(t, "acquired", waitLimit)

	// Curator's writer now blocks our reader, and both sides see one queue.
	reader := acquireAsync(ctx, newRW(t, connect(t, servers), path).ReadLock())
	notYet(t, "our reader", reader)
	parts := a.Participants(t)
	assert.Len(t, parts, 2, "Curator sees its writer and our reader: %v", parts)
	a.DoExpect(t, "write-release", "released")
	require.NoError(t, waitLease(t, "our reader", reader).Release(ctx))
}
