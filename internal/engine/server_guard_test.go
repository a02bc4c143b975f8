package engine_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/session"
	"github.com/zkrecipes/zkrecipes/znode"
)

// A lease's GuardedMulti applies its ops only while the lock node exists,
// all or none; a failure of another op is not a guard failure.
func TestGuardedMulti(t *testing.T) {
	ctx := ctxT(t)
	c := connect(t, sharedServers(t))
	base := fmt.Sprintf("/guard-%d", time.Now().UnixNano())
	_, err := c.Create(ctx, base+"/data", []byte("0"), session.Persistent)
	require.NoError(t, err)
	read := func() string {
		data, _, err := c.Get(ctx, base+"/data")
		require.NoError(t, err)
		return string(data)
	}
	lease, err := newMutex(t, c, base+"/lock").Acquire(ctx)
	require.NoError(t, err)
	zl := lease.(znode.Lease)

	_, err = zl.GuardedMulti(ctx, session.SetOp(base+"/data", []byte("1"), -1))
	require.NoError(t, err, "the guard holds")
	assert.Equal(t, "1", read())

	// Another op fails: nothing is applied, and it is not a guard failure.
	_, err = zl.GuardedMulti(ctx, session.SetOp(base+"/data", []byte("2"), -1),
		session.CreateOp(base+"/data", nil, session.Persistent))
	assert.ErrorIs(t, err, session.ErrNodeExists)
	assert.NotErrorIs(t, err, session.ErrGuardFailed)
	assert.Equal(t, "1", read())

	// The node is deleted under the holder (an operator breaks the lock):
	// nothing is applied.
	require.NoError(t, c.Delete(ctx, zl.Node(), -1))
	_, err = zl.GuardedMulti(ctx, session.SetOp(base+"/data", []byte("3"), -1),
		session.CreateOp(base+"/other", nil, session.Persistent))
	assert.ErrorIs(t, err, session.ErrGuardFailed)
	assert.Equal(t, "1", read())
	ok, _, err := c.Exists(ctx, base+"/other")
	require.NoError(t, err)
	assert.False(t, ok)

	assert.ErrorIs(t, lease.Release(ctx), recipes.ErrLockLost)
	_, err = zl.GuardedMulti(ctx, session.SetOp(base+"/data", []byte("4"), -1))
	assert.ErrorIs(t, err, session.ErrGuardFailed, "an ended lease guards nothing")
	_, err = zl.GuardedMulti(ctx)
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument)
}
