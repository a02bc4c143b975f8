package mutex_test

import (
	"context"
	"path"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/session"
	"github.com/zkrecipes/zkrecipes/znode"
)

// Why here and not in session/: this tests the session's reconnection
// beside a sick member, but what it asserts is a lock's queue and grant,
// and session's tests take no lock.

// Beside a member that accepts and never answers, under the default error
// policy: a waiter keeps its place across its own reconnection through the
// sick member, and a holder is told at the disconnection (its lease ends
// with ErrLockLost), keeps its session, and gives the lock to the waiter,
// whose node is the one it queued before.
func TestBesideASickMember(t *testing.T) {
	server := sharedServers(t)[0]
	holder := zktest.ConnectBesideSick(t, server)
	waiter := zktest.ConnectBesideSick(t, server)
	observer := connect(t, sharedServers(t))
	const lockPath = "/mutex-sick-member"
	ctx := ctxT(t)
	mh, err := mutex.New(holder.Client, lockPath)
	require.NoError(t, err)
	mw, err := mutex.New(waiter.Client, lockPath)
	require.NoError(t, err)

	held, err := mh.Acquire(ctx)
	require.NoError(t, err)
	pending := zktest.AcquireAsync(func() (recipes.Lease, error) { return mw.Acquire(ctx) })
	queue := func() []string {
		kids, _, err := observer.Children(ctx, lockPath)
		require.NoError(t, err)
		slices.Sort(kids)
		return kids
	}
	// The switch comes as soon as the waiter's node exists: its create's
	// reply may still be out, and is then lost with the connection.
	require.Eventually(t, func() bool { return len(queue()) == 2 }, waitLimit, zktest.StillWaiting/10)
	before := queue()

	waiter.Switch(t)
	pending.Waiting(t, "the waiter after its reconnection")
	assert.Equal(t, before, queue(), "the waiter kept its node")
	require.NoError(t, held.Err(), "the holder's lease does not end for the waiter's switch")

	holder.Switch(t)
	select {
	case <-held.Done():
	case <-time.After(waitLimit):
		t.Fatal("the holder's lease outlived its disconnection (default policy)")
	}
	assert.ErrorIs(t, context.Cause(held.Context()), recipes.ErrLockLost)
	assert.ErrorIs(t, held.Err(), session.ErrSuspended)

	got := pending.Acquired(t, "the waiter, once the holder's lease ended")
	assert.Contains(t, before, path.Base(got.(znode.Lease).Node()), "granted on the node it queued")
	require.NoError(t, got.Release(ctx))
	require.Eventually(t, func() bool { return len(queue()) == 0 }, waitLimit, zktest.StillWaiting/10,
		"nothing left behind")
}
