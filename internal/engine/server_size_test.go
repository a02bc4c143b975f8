package engine_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/session"
)

// Lock data over the server's request limit is refused before anything is
// sent: Acquire fails at once with an error naming the limit, the
// connection is not dropped, and the other leases of the client live on.
// (The server drops a connection that sends more; the engine used to retry
// that forever, suspending the client, and so ending its leases, every
// time.)
func TestOversizedDataIsRefusedBeforeSending(t *testing.T) {
	c := connect(t, sharedServers(t))
	states, err := c.Subscribe(ctxT(t))
	require.NoError(t, err)
	ctx := ctxT(t)
	kept, err := newMutex(t, c, "/faults/size-kept").Acquire(ctx)
	require.NoError(t, err)

	m := newMutexWithData(t, c, "/faults/size", make([]byte, session.DefaultMaxRequestSize))
	_, err = m.Acquire(context.Background()) // must end by itself
	require.ErrorIs(t, err, recipes.ErrNotAcquired)
	require.ErrorIs(t, err, session.ErrRequestTooLarge)
	assert.Contains(t, err.Error(), "limit of 1048575")
	_, err = m.TryAcquire(ctx)
	require.ErrorIs(t, err, session.ErrRequestTooLarge)

	assert.NoError(t, kept.Err(), "the client's other lease lives on")
	select {
	case ch := <-states:
		t.Fatalf("the connection changed state: %v", ch)
	default:
	}
	assert.Empty(t, children(t, c, "/faults/size"))
	require.NoError(t, kept.Release(ctx))
}

// When the server's limit is below the client's (a smaller jute.maxbuffer
// on the server than WithMaxRequestSize), each create drops the connection:
// Acquire gives up after a few drops in a row, with an error that says so,
// instead of retrying until its context ends.
func TestCreateThatDropsTheConnectionIsNotRetriedForever(t *testing.T) {
	for _, policy := range []session.ErrorPolicy{session.SuspendedIsLost, session.OnlyLostIsLost} {
		c := connect(t, sharedServers(t), session.WithMaxRequestSize(2<<20), session.WithErrorPolicy(policy))
		m := newMutexWithData(t, c, "/faults/size-server", make([]byte, 1100000))
		_, err := m.Acquire(context.Background()) // must end by itself
		require.ErrorIs(t, err, recipes.ErrNotAcquired, "policy %v", policy)
		assert.Contains(t, err.Error(), "jute.maxbuffer")
		assert.Contains(t, err.Error(), "dropped 4 times in a row")
		waitForNodes(t, c, "/faults/size-server", 0)
	}
}
