package engine

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/session"
)

// The Herd (exclusive) lock, and the reentrant Lock's re-entry and guard.

const testHerdNode = testHerdPath + "/lock"

// A Herd create whose reply is lost: the node is ours (same session) and
// held, or another session's and waited for.
func TestHerdCreateLostReply(t *testing.T) {
	t.Run("node made in our session: acquired", func(t *testing.T) {
		f := newFixture(t)
		f.conn.Intercept(faultFirst(fakeOpCreate, testHerdNode, 1, lostReply))
		le, err := f.herd(f.conn).Acquire(f.ctx, false)
		require.NoError(t, err)
		st, ok := f.srv.Stat(testHerdNode)
		require.True(t, ok)
		assert.Equal(t, f.conn.SessionID(), st.EphemeralOwner)
		token, _ := le.Token()
		assert.Equal(t, st.Czxid, token)
		assert.Equal(t, 1, f.conn.Calls(fakeOpCreate), "found, not created again")
		f.release(le)
		assert.False(t, f.srv.Exists(testHerdNode))
	})
	t.Run("lost with the session value, same session: held after it", func(t *testing.T) {
		f := newFixture(t)
		f.conn.Intercept(faultFirst(fakeOpCreate, testHerdNode, 1, fakeFault{After: errConnLoss, Applied: f.conn.Bounce}))
		le, err := f.herd(f.conn).Acquire(f.ctx, false)
		require.NoError(t, err)
		st, ok := f.srv.Stat(testHerdNode)
		require.True(t, ok)
		token, _ := le.Token()
		assert.Equal(t, st.Czxid, token, "the node our lost create made")
		assert.Equal(t, 1, f.conn.Calls(fakeOpCreate), "found, not created again")
		f.release(le)
		assert.False(t, f.srv.Exists(testHerdNode))
	})
	t.Run("node made by another session: waits for it", func(t *testing.T) {
		f := newFixture(t)
		other := f.srv.Conn()
		f.conn.Intercept(faultWhen(fakeOpCreate, testHerdNode, func(n int, path string) fakeFault {
			if n > 1 {
				return fakeFault{}
			}
			_, _, err := other.CreateWithZxid(context.Background(), path, nil, session.Ephemeral)
			assert.NoError(t, err)
			return lostRequest
		}))
		res := acquireAsync(f.ctx, f.herd(f.conn))
		f.waitFor("us to watch the parent", func() bool { return f.srv.Watches(testHerdPath) == 1 })
		f.pending(res, "another session holds the node")
		st, ok := f.srv.Stat(testHerdNode)
		require.True(t, ok, "the other session's node must not be removed")
		assert.Equal(t, other.SessionID(), st.EphemeralOwner)

		require.NoError(t, f.srv.Remove(testHerdNode))
		r := f.result(res)
		require.NoError(t, r.err)
		st, _ = f.srv.Stat(testHerdNode)
		assert.Equal(t, f.conn.SessionID(), st.EphemeralOwner)
		token, _ := r.lease.Token()
		assert.Equal(t, st.Czxid, token)
		f.release(r.lease)
		assert.False(t, f.srv.Exists(testHerdNode))
	})
}

// A Herd held by another client: TryAcquire is refused, Acquire waits
// until the node goes.
func TestHerdHeldElsewhere(t *testing.T) {
	f := newFixture(t)
	f.srv.Put(testHerdNode, f.srv.Conn().SessionID(), session.Ephemeral)
	h := f.herd(f.conn)
	_, err := h.Acquire(f.ctx, true)
	assert.ErrorIs(t, err, recipes.ErrLocked)
	res := acquireAsync(f.ctx, h)
	f.waitFor("us to watch the parent", func() bool { return f.srv.Watches(testHerdPath) == 1 })
	f.pending(res, "the node is held")
	require.NoError(t, f.srv.Remove(testHerdNode))
	r := f.result(res)
	require.NoError(t, r.err)
	f.release(r.lease)
}

// Re-entering a Herd with its own lease's context fails at once: waiting
// for itself would never end.
func TestHerdNotReentrant(t *testing.T) {
	f := newFixture(t)
	h := f.herd(f.conn)
	le, err := h.Acquire(f.ctx, false)
	require.NoError(t, err)
	// Bounded, so that a re-entry that waits for itself fails the test.
	inner, cancel := context.WithTimeout(le.Context(), testWait)
	defer cancel()
	for _, try := range []bool{false, true} {
		_, err := h.Acquire(inner, try)
		assert.ErrorIs(t, err, recipes.ErrNotReentrant, "try %v", try)
	}
	assert.Equal(t, 1, f.conn.Calls(fakeOpCreate), "no request for the refused re-entries")
	assert.NoError(t, le.Err())
	f.release(le)
}

// The reentrant Lock: re-entry through a lease's context shares the node,
// which goes with the last Release; GuardedMulti writes only while it is
// there.
func TestLockReentryAndGuard(t *testing.T) {
	f := newFixture(t)
	l := f.mutex(f.conn)
	outer, err := l.Acquire(f.ctx, false)
	require.NoError(t, err)
	reentry, cancel := context.WithTimeout(outer.Context(), testWait) // bounded: see TestHerdNotReentrant
	defer cancel()
	inner, err := l.Acquire(reentry, false)
	require.NoError(t, err)
	assert.Equal(t, nodeOf(outer), nodeOf(inner))
	assert.Equal(t, 1, f.conn.Calls(fakeOpCreate))
	f.release(inner)
	assert.NoError(t, outer.Err())
	assert.True(t, f.srv.Exists(nodeOf(outer)))

	g := outer.(*lease)
	_, err = g.GuardedMulti(f.ctx, session.CreateOp("/fenced", []byte("1"), 0))
	require.NoError(t, err)
	require.NoError(t, f.srv.Remove(nodeOf(outer))) // an operator breaks the lock
	_, err = g.GuardedMulti(f.ctx, session.SetOp("/fenced", []byte("2"), -1))
	assert.ErrorIs(t, err, session.ErrGuardFailed)
	st, _ := f.srv.Stat("/fenced")
	assert.Equal(t, int32(0), st.Version, "the guarded write did nothing")
	assert.ErrorIs(t, outer.Release(f.ctx), recipes.ErrLockLost, "the node was gone at Release")
}
