package engine

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/session"
)

// A held lock (holding, lease): its end with the session value, and the
// release of its node.

// A release whose delete keeps failing with connection loss: Release says
// the delete goes on in the background, the lease ends at once, and the
// background retries until the delete succeeds, or stops once the session
// has ended (the server removed the node).
func TestReleaseDeleteLost(t *testing.T) {
	for _, tc := range []struct {
		name string
		// settle ends the failures: the connection heals, or the session
		// expires.
		settle func(f *fixture, failing *atomic.Bool)
	}{
		{"retried until the delete goes through", func(f *fixture, failing *atomic.Bool) { failing.Store(false) }},
		{"stops once the session has ended", func(f *fixture, _ *atomic.Bool) { f.conn.Expire() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			le, err := f.mutex(f.conn).Acquire(f.ctx, false)
			require.NoError(t, err)
			node := nodeOf(le)

			var failing atomic.Bool
			failing.Store(true)
			relCtx, cancelRelease := context.WithCancel(f.ctx)
			defer cancelRelease()
			f.conn.Intercept(faultWhen(fakeOpDelete, node, func(n int, _ string) fakeFault {
				if n == 2 {
					cancelRelease() // Release stops retrying: the rest is the background's
				}
				if failing.Load() {
					return lostRequest
				}
				return fakeFault{}
			}))

			err = le.Release(relCtx)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "in the background")
			assert.ErrorIs(t, err, errConnLoss)
			assert.NotErrorIs(t, err, recipes.ErrLockLost)
			select {
			case <-le.Done():
			default:
				t.Fatal("the lease did not end at Release")
			}
			assert.ErrorIs(t, le.Err(), recipes.ErrReleased)
			assert.ErrorIs(t, le.Release(f.ctx), recipes.ErrNotHeld)

			// The background goes on retrying while the connection fails.
			tries := f.conn.Calls(fakeOpDelete)
			f.waitFor("a retry in the background", func() bool { return f.conn.Calls(fakeOpDelete) > tries })
			assert.True(t, f.srv.Exists(node))

			tc.settle(f, &failing)
			f.waitFor("the node to be gone", func() bool { return !f.srv.Exists(node) })
			waitNoEngineGoroutines(t) // the background work stopped
		})
	}
}

// Release with a context that ends while it waits to retry a lost delete:
// the delete must go on in the background (or Release must say it did not
// happen), never be dropped silently.
func TestReleaseContextEndsBeforeRetry(t *testing.T) {
	f := newFixture(t)
	le, err := f.mutex(f.conn).Acquire(f.ctx, false)
	require.NoError(t, err)
	node := nodeOf(le)
	relCtx, cancelRelease := context.WithCancel(f.ctx)
	f.conn.Intercept(faultWhen(fakeOpDelete, node, func(n int, _ string) fakeFault {
		if n == 1 {
			cancelRelease() // ends while the reply is lost
			return lostRequest
		}
		return fakeFault{}
	}))
	err = le.Release(relCtx)
	if err == nil {
		assert.False(t, f.srv.Exists(node), "Release returned nil but our node is still there")
	}
	f.waitFor("the node to be gone", func() bool { return !f.srv.Exists(node) })
}

// The lease's context ends with a cause that is ErrLockLost when its
// session value ends, and the node goes: deleted by our background
// clean-up after a reconnection, or by the server on expiry.
func TestLeaseLostWithSessionValue(t *testing.T) {
	for _, tc := range []struct {
		name  string
		end   func(c *fakeConn)
		cause error
		then  func(c *fakeConn)
	}{
		{"connection lost, then back", (*fakeConn).Disconnect, session.ErrSuspended, (*fakeConn).Reconnect},
		{"session expired", (*fakeConn).Expire, session.ErrSessionLost, func(*fakeConn) {}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			le, err := f.mutex(f.conn).Acquire(f.ctx, false)
			require.NoError(t, err)
			node := nodeOf(le)
			tc.end(f.conn)

			f.waitDone(le.Done(), "the lease to end")
			cause := context.Cause(le.Context())
			assert.ErrorIs(t, cause, recipes.ErrLockLost)
			assert.ErrorIs(t, cause, tc.cause, "the cause says why")
			assert.ErrorIs(t, le.Err(), recipes.ErrLockLost)

			tc.then(f.conn)
			f.waitFor("the node to be gone", func() bool { return !f.srv.Exists(node) })
			err = le.Release(f.ctx)
			assert.ErrorIs(t, err, recipes.ErrLockLost)
			assert.True(t, errors.Is(le.Release(f.ctx), recipes.ErrNotHeld))
		})
	}
}
