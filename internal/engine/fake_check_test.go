package engine

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/session"
)

// The fake itself: what the engine's tests rely on it to do like ZooKeeper.

func TestFakeTreeAndWatches(t *testing.T) {
	f := newFixture(t)
	c, ctx := f.conn, f.ctx
	seq := session.EphemeralSequential

	// Parents are made as containers; the sequence is the parent's cversion.
	a, czA, err := c.CreateWithZxid(ctx, "/p/q/n-", []byte("a"), seq)
	require.NoError(t, err)
	assert.Equal(t, "/p/q/n-0000000000", a)
	st, ok := f.srv.Stat(a)
	require.True(t, ok)
	assert.Equal(t, czA, st.Czxid)
	assert.Equal(t, c.SessionID(), st.EphemeralOwner)
	require.NoError(t, c.Delete(ctx, a, -1))
	b, czB, err := c.CreateWithZxid(ctx, "/p/q/n-", nil, seq)
	require.NoError(t, err)
	assert.Equal(t, "/p/q/n-0000000002", b, "a delete bumps the cversion too")
	assert.Greater(t, czB, czA)
	_, _, err = c.CreateWithZxid(ctx, b+"/child", nil, 0)
	assert.ErrorIs(t, err, session.ErrNoChildrenForEphemerals)

	// GetW on a missing node: NoNode and no watch left behind.
	_, _, err = c.GetW(ctx, "/p/q/missing")
	assert.ErrorIs(t, err, session.ErrNoNode)
	assert.Zero(t, f.srv.Watches("/p/q/missing"))

	// Watches fire once, then their channel is closed.
	_, data, err := c.GetW(ctx, b)
	require.NoError(t, err)
	_, kidsW, err := c.ChildrenW(ctx, "/p/q")
	require.NoError(t, err)
	require.NoError(t, f.srv.Remove(b))
	assert.Equal(t, session.Event{Type: session.EventNodeDeleted, Path: b}, <-data)
	assert.Equal(t, session.EventNodeChildrenChanged, (<-kidsW).Type)
	_, open := <-data
	assert.False(t, open)
	assert.Zero(t, f.srv.Watches(b))

	// An empty container that had children is reaped.
	f.srv.ReapContainers()
	assert.False(t, f.srv.Exists("/p/q"))
	assert.True(t, f.srv.Exists("/p"), "/p had a child, the reaped /p/q: reaped on the next pass")
}

func TestFakeMulti(t *testing.T) {
	f := newFixture(t)
	c, ctx := f.conn, f.ctx
	guard := f.srv.Put("/g", 0, 0)
	res, err := c.Multi(ctx, session.CheckOp(guard, -1), session.CreateOp("/x", []byte("1"), 0), session.SetOp("/x", []byte("2"), 0))
	require.NoError(t, err)
	assert.Equal(t, "/x", res[1].Created)
	assert.Equal(t, int32(1), res[2].Stat.Version)

	// All or nothing: the failing check undoes the delete before it.
	_, err = c.Multi(ctx, session.DeleteOp("/x", -1), session.CheckOp("/missing", -1))
	var me *session.MultiError
	require.ErrorAs(t, err, &me)
	assert.Equal(t, 1, me.Index)
	assert.ErrorIs(t, err, session.ErrNoNode)
	assert.True(t, f.srv.Exists("/x"))

	// Guarded creates fail with ErrGuardFailed once the guard is gone.
	require.NoError(t, f.srv.Remove(guard))
	_, _, err = c.CreateWithZxid(ctx, "/y", nil, 0, guard)
	assert.ErrorIs(t, err, session.ErrGuardFailed)
	assert.False(t, f.srv.Exists("/y"))
}

func TestFakeSessionsAndFaults(t *testing.T) {
	f := newFixture(t)
	c, ctx := f.conn, f.ctx
	s1, err := c.Session(ctx)
	require.NoError(t, err)
	node, _, err := c.CreateWithZxid(ctx, "/e", nil, session.Ephemeral)
	require.NoError(t, err)

	// A disconnection ends the value; requests fail, retryably, until the
	// same session comes back with a new value.
	c.Disconnect()
	assert.ErrorIs(t, s1.Err(), session.ErrSuspended)
	_, _, err = c.Get(ctx, node)
	assert.True(t, session.IsRetryable(err), "%v", err)
	assert.True(t, c.SessionMayLive(s1.ID()))
	c.Reconnect()
	s2, err := c.Session(ctx)
	require.NoError(t, err)
	assert.NotSame(t, s1, s2)
	assert.Equal(t, s1.ID(), s2.ID())

	// Expiry: the ephemeral nodes go, the client's watches end, a new
	// session starts.
	_, dw, err := c.GetW(ctx, node)
	require.NoError(t, err)
	c.Expire()
	assert.ErrorIs(t, s2.Err(), session.ErrSessionLost)
	assert.False(t, f.srv.Exists(node))
	assert.Equal(t, session.EventNodeDeleted, (<-dw).Type)
	assert.False(t, c.SessionMayLive(s1.ID()))
	assert.NotEqual(t, s1.ID(), c.SessionID())

	// Faults: a lost request does nothing, a lost reply does it all, a
	// blocked one waits for its gate or its context.
	gate := make(chan struct{})
	c.Intercept(faultFirst(fakeOpCreate, "/lost-", -1, lostRequest))
	c.Intercept(faultFirst(fakeOpCreate, "/done-", -1, lostReply))
	c.Intercept(faultFirst(fakeOpCreate, "/gate-", -1, fakeFault{Block: gate}))
	_, _, err = c.CreateWithZxid(ctx, "/lost-", nil, 0)
	assert.ErrorIs(t, err, errConnLoss)
	assert.False(t, f.srv.Exists("/lost-"))
	_, _, err = c.CreateWithZxid(ctx, "/done-", nil, 0)
	assert.ErrorIs(t, err, errConnLoss)
	assert.True(t, f.srv.Exists("/done-"))
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, _, err = c.CreateWithZxid(cctx, "/gate-", nil, 0)
	assert.True(t, errors.Is(err, context.Canceled) && !f.srv.Exists("/gate-"), "%v", err)
	close(gate)
	_, _, err = c.CreateWithZxid(ctx, "/gate-", nil, 0)
	assert.NoError(t, err)

	// Applied runs between the change and the reply: the connection drops
	// there, and the reply is lost with it.
	var applied bool
	c.Intercept(faultFirst(fakeOpCreate, "/cut-", -1, fakeFault{After: errConnLoss, Applied: func() {
		applied = f.srv.Exists("/cut-")
		c.Disconnect()
	}}))
	s3, err := c.Session(ctx)
	require.NoError(t, err)
	_, _, err = c.CreateWithZxid(ctx, "/cut-", nil, 0)
	assert.ErrorIs(t, err, errConnLoss)
	assert.True(t, applied, "Applied ran after the change")
	assert.ErrorIs(t, s3.Err(), session.ErrSuspended)
	c.Reconnect()
	assert.Equal(t, 6, c.Calls(fakeOpCreate), "every request counted, faulted or not")
}
