package engine

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/session"
)

// The wait of a queued node (queue.attempt, queue.wait, acquireLoop).

// A refused TryAcquire and a cancelled wait leave no node of ours: removed
// before Acquire returns, or in the background when the delete fails.
func TestQueueGiveUpLeavesNoNode(t *testing.T) {
	for _, tc := range []struct {
		name       string
		deleteLost bool // the first delete of our node is lost: background
		createOut  bool // cancel while our create is still out
		try        bool
	}{
		{name: "TryAcquire refused", try: true},
		{name: "TryAcquire refused, delete lost", try: true, deleteLost: true},
		{name: "wait cancelled"},
		{name: "wait cancelled, delete lost", deleteLost: true},
		{name: "cancelled with the create out"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			holder := f.put(f.srv.Conn())
			if tc.deleteLost {
				f.conn.Intercept(faultFirst(fakeOpDelete, testLockPath+"/", 1, lostRequest))
			}
			gate := make(chan struct{})
			if tc.createOut {
				f.conn.Intercept(faultFirst(fakeOpCreate, testLockPath+"/", 1, fakeFault{Block: gate}))
			}
			l := f.mutex(f.conn)

			var err error
			if tc.try {
				_, err = l.Acquire(f.ctx, true)
				assert.ErrorIs(t, err, recipes.ErrLocked)
			} else {
				ctx, cancel := context.WithCancel(f.ctx)
				res := acquireAsync(ctx, l)
				if tc.createOut {
					f.waitFor("our create to be out", func() bool { return f.conn.Calls(fakeOpCreate) == 1 })
				} else {
					f.waitFor("us to wait on the holder", func() bool { return f.srv.Watches(holder) == 1 })
				}
				cancel()
				err = f.result(res).err
				assert.ErrorIs(t, err, context.Canceled)
				close(gate) // a create still out lands now
			}
			assert.ErrorIs(t, err, recipes.ErrNotAcquired)
			if !tc.deleteLost && !tc.createOut {
				assert.Equal(t, []string{holder}, f.queue(), "our node is removed before Acquire returns")
			}
			f.waitFor("only the holder's node left", func() bool {
				st, _ := f.srv.Stat(testLockPath)
				q := f.queue()
				return len(q) == 1 && q[0] == holder && st.Cversion == 3 // holder's, ours made and removed
			})
		})
	}
}

// A session value that ends while we wait: the wait goes on under the next
// value, with the same node and place when the ZooKeeper session is the
// same, and with a new node (the old one removed) when it is not.
func TestQueueSessionValueEndsMidWait(t *testing.T) {
	for _, tc := range []struct {
		name     string
		end      func(c *fakeConn)
		sameNode bool
	}{
		{"same session: reconnected", func(c *fakeConn) { c.Disconnect(); c.Reconnect() }, true},
		{"new session: the old one given up while the server keeps it", func(c *fakeConn) { c.Renew() }, false},
		{"new session: the old one expired", func(c *fakeConn) { c.Expire() }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			holderConn := f.srv.Conn()
			holder := f.put(holderConn)
			res := acquireAsync(f.ctx, f.mutex(f.conn))
			f.waitFor("us to wait on the holder", func() bool { return f.srv.Watches(holder) == 1 })
			ours := f.ownedBy(f.conn.SessionID())
			require.Len(t, ours, 1)
			// A third client queues behind us: our place is ahead of it.
			third := f.srv.Conn()
			thirdRes := acquireAsync(f.ctx, f.mutex(third))
			f.waitFor("the third to queue", func() bool { return len(f.queue()) == 3 })

			oldSession := f.conn.SessionID()
			tc.end(f.conn)
			if tc.sameNode {
				// Our next attempt lists again with our kept node.
				f.waitFor("the wait to resume", func() bool { return f.conn.Calls(fakeOpChildren) == 2 })
				assert.Equal(t, ours, f.ownedBy(f.conn.SessionID()), "our node is kept")
			} else {
				f.waitFor("the old node gone and a new one queued", func() bool {
					return !f.srv.Exists(ours[0]) && len(f.ownedBy(f.conn.SessionID())) == 1
				})
			}
			f.pending(res, "the holder still holds")
			require.NoError(t, f.srv.Remove(holder))

			if tc.sameNode {
				ourLease, thirdLease := f.inOrder(res, thirdRes)
				assert.Equal(t, ours[0], nodeOf(ourLease), "same node, same place")
				assert.Equal(t, 1, f.conn.Calls(fakeOpCreate))
				f.release(thirdLease)
			} else {
				_, ourLease := f.inOrder(thirdRes, res) // the third is ahead of our new node now
				assert.NotEqual(t, ours[0], nodeOf(ourLease))
				assert.Equal(t, f.ownedBy(f.conn.SessionID()), []string{nodeOf(ourLease)})
				assert.NotEqual(t, oldSession, ourLease.(*lease).SessionID())
				f.release(ourLease)
				f.srv.ExpireSession(oldSession)
			}
			assert.Empty(t, f.queue())
		})
	}
}

// The node to watch is gone between the listing and the GetW (NoNode, no
// watch): the engine lists again rather than wait for an event that will
// not come.
func TestQueueWatchedNodeAlreadyGone(t *testing.T) {
	f := newFixture(t)
	holderConn := f.srv.Conn()
	holder := f.put(holderConn)
	var once sync.Once
	f.conn.Intercept(faultWhen(fakeOpGetW, holder, func(int, string) fakeFault {
		once.Do(func() { assert.NoError(t, holderConn.Delete(context.Background(), holder, -1)) })
		return fakeFault{}
	}))

	le, err := f.mutex(f.conn).Acquire(f.ctx, false)
	require.NoError(t, err)
	assert.Equal(t, 1, f.conn.Calls(fakeOpGetW))
	assert.Equal(t, 2, f.conn.Calls(fakeOpChildren), "listed again after the NoNode")
	f.release(le)
}

// Fast handoff: the deletion of the head we watch grants the lock without
// listing again; the deletion of a node that was not the head does not.
func TestQueueFastHandoff(t *testing.T) {
	t.Run("head deleted: granted without listing", func(t *testing.T) {
		f := newFixture(t)
		holder := f.put(f.srv.Conn())
		res := acquireAsync(f.ctx, f.mutex(f.conn))
		f.waitFor("us to watch the head", func() bool { return f.srv.Watches(holder) == 1 })
		require.NoError(t, f.srv.Remove(holder))
		r := f.result(res)
		require.NoError(t, r.err)
		assert.Equal(t, 1, f.conn.Calls(fakeOpChildren), "no listing after the deletion event")
		f.release(r.lease)
	})
	t.Run("predecessor deleted, head still there: listed again, no grant", func(t *testing.T) {
		f := newFixture(t)
		head, pred := f.put(f.srv.Conn()), f.put(f.srv.Conn())
		res := acquireAsync(f.ctx, f.mutex(f.conn))
		f.waitFor("us to watch our predecessor", func() bool { return f.srv.Watches(pred) == 1 })
		require.NoError(t, f.srv.Remove(pred))
		f.waitFor("us to watch the head", func() bool { return f.srv.Watches(head) == 1 })
		f.pending(res, "the head still holds")
		assert.Equal(t, 2, f.conn.Calls(fakeOpChildren))
		require.NoError(t, f.srv.Remove(head))
		r := f.result(res)
		require.NoError(t, r.err)
		assert.Equal(t, 2, f.conn.Calls(fakeOpChildren), "then the fast handoff")
		f.release(r.lease)
	})
}

// Lookahead: a waiter two behind the head watches both nodes ahead. When
// the head goes, it decides again from its last listing, with no request:
// its predecessor is the head now (no node can get ahead of ours), and the
// watch on it is still armed. Any other change lists again.
func TestQueueLookahead(t *testing.T) {
	// waitWatching starts our Acquire and waits until we watch the nodes
	// two ahead and just ahead.
	waitWatching := func(f *fixture, twoAhead, ahead string) <-chan acquireResult {
		res := acquireAsync(f.ctx, f.lookahead(f.conn))
		f.waitFor("us to watch two nodes ahead", func() bool {
			return f.srv.Watches(twoAhead) == 1 && f.srv.Watches(ahead) == 1
		})
		return res
	}
	t.Run("head goes, then the predecessor: granted on the listing made at our create", func(t *testing.T) {
		f := newFixture(t)
		head, pred := f.put(f.srv.Conn()), f.put(f.srv.Conn())
		res := waitWatching(f, head, pred)
		require.NoError(t, f.srv.Remove(head))
		f.pending(res, "our predecessor holds the lock after the head")
		require.NoError(t, f.srv.Remove(pred))
		r := f.result(res)
		require.NoError(t, r.err)
		assert.Equal(t, 1, f.conn.Calls(fakeOpChildren), "no listing after the head's deletion")
		assert.Equal(t, 2, f.conn.Calls(fakeOpGetW), "the predecessor's watch kept, not set again")
		f.release(r.lease)
	})
	t.Run("head and predecessor go at once: granted, whichever event is read first", func(t *testing.T) {
		// Both go once both watches are set, before their replies reach
		// us: both events are in when we wait, and the one read first is
		// the select's pick, at random. Rounds enough that each comes first.
		f := newFixture(t)
		other := f.srv.Conn()
		for round := range 20 {
			head, pred := f.put(f.srv.Conn()), f.put(f.srv.Conn())
			var mu sync.Mutex
			set := 0
			bothGo := func(int, string) fakeFault {
				return fakeFault{Applied: func() {
					mu.Lock()
					defer mu.Unlock()
					if set++; set == 2 {
						_, err := other.Multi(f.ctx, session.DeleteOp(head, -1), session.DeleteOp(pred, -1))
						assert.NoError(t, err)
					}
				}}
			}
			f.conn.Intercept(faultWhen(fakeOpGetW, head, bothGo))
			f.conn.Intercept(faultWhen(fakeOpGetW, pred, bothGo))
			listings := f.conn.Calls(fakeOpChildren)
			r := f.result(acquireAsync(f.ctx, f.lookahead(f.conn)))
			require.NoError(t, r.err)
			require.Equal(t, listings+1, f.conn.Calls(fakeOpChildren), "round %d: only the listing made at our create", round)
			f.release(r.lease)
		}
	})
	t.Run("the node two ahead is a waiter that gives up: listed again, place kept", func(t *testing.T) {
		f := newFixture(t)
		head, quitter, pred := f.put(f.srv.Conn()), f.put(f.srv.Conn()), f.put(f.srv.Conn())
		res := waitWatching(f, quitter, pred)
		require.NoError(t, f.srv.Remove(quitter))
		f.waitFor("us to watch the head instead", func() bool { return f.srv.Watches(head) == 1 })
		assert.Equal(t, 2, f.conn.Calls(fakeOpChildren), "listed again: the node that went was not the head")
		// A newcomer queues behind us: it must not get ahead of us.
		late := acquireAsync(f.ctx, f.lookahead(f.srv.Conn()))
		f.waitFor("the newcomer to queue", func() bool { return len(f.queue()) == 4 })
		require.NoError(t, f.srv.Remove(head))
		f.pending(res, "our predecessor holds the lock after the head")
		require.NoError(t, f.srv.Remove(pred))
		_, lateLease := f.inOrder(res, late)
		assert.Equal(t, 2, f.conn.Calls(fakeOpChildren), "then the head went as the head: no listing")
		f.release(lateLease)
		assert.Empty(t, f.queue())
	})
	t.Run("the head's data changes: listed again, no grant", func(t *testing.T) {
		f := newFixture(t)
		headConn := f.srv.Conn()
		head, pred := f.put(headConn), f.put(f.srv.Conn())
		res := waitWatching(f, head, pred)
		// What a revocation request does (znode.Revoke).
		_, err := headConn.Multi(f.ctx, session.SetOp(head, []byte("__REVOKE__"), -1))
		require.NoError(t, err)
		f.waitFor("us to list again and watch the head again", func() bool {
			return f.conn.Calls(fakeOpChildren) == 2 && f.srv.Watches(head) == 1
		})
		require.NoError(t, f.srv.Remove(pred)) // a waiter ahead gives up
		f.pending(res, "the head still holds")
		require.NoError(t, f.srv.Remove(head))
		r := f.result(res)
		require.NoError(t, r.err)
		f.release(r.lease)
	})
}
