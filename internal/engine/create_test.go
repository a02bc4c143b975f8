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

// The create of a queue node whose reply is lost (retryCreate,
// findProtected): the node is found by its protected prefix when the server
// made it, made again when it did not, and never taken from another
// session.

func TestQueueCreateLostReply(t *testing.T) {
	for _, tc := range []struct {
		name    string
		fault   fakeFault
		creates int // requests sent: 1 when the lost one is found and used
	}{
		{"applied: found by prefix and used", lostReply, 1},
		{"not applied: looked for, then created again", lostRequest, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.conn.Intercept(faultFirst(fakeOpCreate, testLockPath+"/", 1, tc.fault))

			le, err := f.mutex(f.conn).Acquire(f.ctx, false)
			require.NoError(t, err)
			q := f.queue()
			require.Len(t, q, 1, "exactly one node of ours")
			assert.Equal(t, q[0], nodeOf(le))
			st, _ := f.srv.Stat(q[0])
			assert.Equal(t, f.conn.SessionID(), st.EphemeralOwner)
			token, ok := le.Token()
			assert.True(t, ok)
			assert.Equal(t, st.Czxid, token, "the token is the czxid of the node we hold")
			assert.Equal(t, tc.creates, f.conn.Calls(fakeOpCreate))
			assert.Equal(t, 2, f.conn.Calls(fakeOpChildren), "one look for the lost node, one listing to own")

			f.release(le)
			assert.Empty(t, f.queue(), "nothing left after Release")
		})
	}
}

// A node with our protected prefix that another session owns is not ours
// (a create of ours that landed in another of our sessions): findProtected
// does not take it, it is removed, and our create goes again. Since it is
// ours alone, the wait may grant before its removal is done.
func TestQueueCreateLostReplyForeignNode(t *testing.T) {
	f := newFixture(t)
	other := f.srv.Conn()
	var mu sync.Mutex
	var foreign string
	f.conn.Intercept(faultWhen(fakeOpCreate, testLockPath+"/", func(n int, path string) fakeFault {
		if n > 1 {
			return fakeFault{}
		}
		// Our create is lost; a node of the same name appears in another
		// session.
		node, _, err := other.CreateWithZxid(context.Background(), path, nil, session.Ephemeral|session.PersistentSequential)
		mu.Lock()
		foreign = node
		mu.Unlock()
		assert.NoError(t, err)
		return lostRequest
	}))

	le, err := f.mutex(f.conn).Acquire(f.ctx, false)
	require.NoError(t, err)
	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, foreign)
	assert.NotEqual(t, foreign, nodeOf(le), "another session's node was taken as ours")
	st, ok := f.srv.Stat(nodeOf(le))
	require.True(t, ok)
	assert.Equal(t, f.conn.SessionID(), st.EphemeralOwner)
	token, _ := le.Token()
	assert.Equal(t, st.Czxid, token)
	f.waitFor("the foreign node removed", func() bool { return !f.srv.Exists(foreign) })
	assert.Equal(t, 2, f.conn.Calls(fakeOpCreate))

	f.release(le)
	assert.Empty(t, f.queue())
}

// maxCreateDrops: a create whose connection drops every time ends Acquire
// with an error instead of retrying forever, and leaves nothing behind.
func TestQueueCreateDrops(t *testing.T) {
	for _, tc := range []struct {
		name           string
		drops          int // -1: every create
		fault          func(*fakeConn) fakeFault
		minReq, maxReq int // creates sent (maxReq 0: no bound)
		acquired       bool
	}{
		{
			name: "every request lost", drops: -1, minReq: maxCreateDrops, maxReq: maxCreateDrops,
			fault: func(*fakeConn) fakeFault { return lostRequest },
		},
		{
			// Each drop also ends the session value (the client suspends)
			// before the server heard the create: each next value looks
			// for the node, finds none and creates again, and each drop
			// counts once, where the end of the session value cut it.
			name: "every request lost, and the session value with it", drops: -1, minReq: maxCreateDrops, maxReq: maxCreateDrops,
			fault: func(c *fakeConn) fakeFault { c.Bounce(); return lostRequest },
		},
		{
			// The same after the server made the node: the next value
			// finds it, and that ends the drops.
			name: "every reply lost, and the session value with it", drops: -1, minReq: 1, maxReq: 1, acquired: true,
			fault: func(c *fakeConn) fakeFault { c.Bounce(); return lostReply },
		},
		{
			name: "drops in a row below the limit, then through", drops: maxCreateDrops - 1,
			minReq: maxCreateDrops, maxReq: maxCreateDrops, acquired: true,
			fault: func(*fakeConn) fakeFault { return lostRequest },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.conn.Intercept(faultWhen(fakeOpCreate, testLockPath+"/", func(n int, _ string) fakeFault {
				if tc.drops >= 0 && n > tc.drops {
					return fakeFault{}
				}
				return tc.fault(f.conn)
			}))

			le, err := f.mutex(f.conn).Acquire(f.ctx, false)
			if tc.acquired {
				require.NoError(t, err)
				f.release(le)
			} else {
				require.Error(t, err)
				assert.ErrorIs(t, err, recipes.ErrNotAcquired)
				assert.ErrorIs(t, err, errCreateDrops, "gave up for the drops, not for the context")
				assert.NoError(t, f.ctx.Err())
			}
			n := f.conn.Calls(fakeOpCreate)
			assert.GreaterOrEqual(t, n, tc.minReq, "creates")
			if tc.maxReq > 0 {
				assert.LessOrEqual(t, n, tc.maxReq, "creates")
			}
			f.waitFor("no node left", func() bool { return len(f.queue()) == 0 })
		})
	}
}

// The connection drops between the server applying our create and its
// reply, which is lost with it, and the session value ends. Under the same
// ZooKeeper session the next value finds the node by its protected prefix
// and keeps it: a waiter that queued meanwhile stays behind us. Under a new
// session the node is gone or removed, and we queue again, behind it.
func TestQueueCreateReplyLostWithSessionValue(t *testing.T) {
	for _, tc := range []struct {
		name     string
		resume   func(c *fakeConn)
		sameNode bool
	}{
		{"same session: reconnected", (*fakeConn).Reconnect, true},
		{"new session: the old one given up while the server keeps it", func(c *fakeConn) { c.Renew() }, false},
		{"new session: the old one expired", (*fakeConn).Expire, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			holder := f.put(f.srv.Conn())
			cut := make(chan struct{})
			f.conn.Intercept(faultFirst(fakeOpCreate, testLockPath+"/", 1, fakeFault{After: errConnLoss, Applied: func() {
				f.conn.Disconnect()
				close(cut)
			}}))
			res := acquireAsync(f.ctx, f.mutex(f.conn))
			f.waitDone(cut, "our create applied, its reply lost")
			oldSession := f.conn.SessionID()
			ours := f.ownedBy(oldSession)
			require.Len(t, ours, 1)
			// A third client queues behind our node while we are away.
			third := f.srv.Conn()
			thirdRes := acquireAsync(f.ctx, f.mutex(third))
			f.waitFor("the third to wait on our node", func() bool { return f.srv.Watches(ours[0]) == 1 })

			tc.resume(f.conn)
			if tc.sameNode {
				f.waitFor("us to wait on the holder", func() bool { return f.srv.Watches(holder) == 1 })
				assert.Equal(t, ours, f.ownedBy(f.conn.SessionID()), "our node is kept")
				assert.Equal(t, 1, f.conn.Calls(fakeOpCreate), "found, not created again")
			} else {
				f.waitFor("the old node gone and a new one queued", func() bool {
					return !f.srv.Exists(ours[0]) && len(f.ownedBy(f.conn.SessionID())) == 1
				})
				assert.Equal(t, 2, f.conn.Calls(fakeOpCreate))
			}
			f.pending(res, "the holder still holds")
			require.NoError(t, f.srv.Remove(holder))

			if tc.sameNode {
				ourLease, thirdLease := f.inOrder(res, thirdRes)
				assert.Equal(t, ours[0], nodeOf(ourLease), "granted on the node our lost create made")
				f.release(thirdLease)
			} else {
				_, ourLease := f.inOrder(thirdRes, res) // the third is ahead of our new node now
				assert.NotEqual(t, ours[0], nodeOf(ourLease))
				assert.NotEqual(t, oldSession, ourLease.(*lease).SessionID())
				f.release(ourLease)
			}
			f.srv.ExpireSession(oldSession)
			assert.Empty(t, f.queue())
		})
	}
}

// A create still out when the session value ends lands later. Under the
// same session the next value waits for its outcome and takes the node it
// made; under a new session it queues its own node, and the late one
// (which landed in the new session: go-zookeeper sends a request queued
// during a disconnection on the next connection) is removed.
func TestQueueCreateLandsAfterSessionValueEnded(t *testing.T) {
	for _, tc := range []struct {
		name     string
		end      func(c *fakeConn)
		sameNode bool
	}{
		{"same session: taken over", (*fakeConn).Bounce, true},
		{"same session, two values later: taken over", func(c *fakeConn) { c.Bounce(); c.Bounce() }, true},
		{"new session: removed", func(c *fakeConn) { c.Renew() }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			gate := make(chan struct{})
			f.conn.Intercept(faultFirst(fakeOpCreate, testLockPath+"/", 1, fakeFault{Block: gate}))

			res := acquireAsync(f.ctx, f.mutex(f.conn))
			f.waitFor("the create to be out", func() bool { return f.conn.Calls(fakeOpCreate) == 1 })
			tc.end(f.conn)
			if tc.sameNode {
				f.pending(res, "the create is still out")
				close(gate) // the create lands now, in our session
				r := f.result(res)
				require.NoError(t, r.err)
				assert.Equal(t, []string{nodeOf(r.lease)}, f.queue())
				assert.Equal(t, 1, f.conn.Calls(fakeOpCreate), "taken over, not created again")
				f.release(r.lease)
				assert.Empty(t, f.queue())
				return
			}
			r := f.result(res)
			require.NoError(t, r.err)
			require.Equal(t, []string{nodeOf(r.lease)}, f.queue())
			close(gate) // the first create lands now, behind our node
			f.waitFor("the late node to be made and removed", func() bool {
				st, _ := f.srv.Stat(testLockPath)
				q := f.queue()
				return st.Cversion == 3 && len(q) == 1 && q[0] == nodeOf(r.lease) // 2 creates, 1 delete
			})
			assert.Equal(t, 2, f.conn.Calls(fakeOpCreate))
			f.release(r.lease)
			assert.Empty(t, f.queue())
		})
	}
}

// A create whose request was lost lands after findProtected looked (a
// request still in flight on another member): the node it makes has our
// prefix, sorts ahead of the node we made next, and would keep us waiting
// on ourselves. The wait drops it.
func TestQueueStrayOfOurOwnIsDropped(t *testing.T) {
	f := newFixture(t)
	var mu sync.Mutex
	var first string
	f.conn.Intercept(faultWhen(fakeOpCreate, testLockPath+"/", func(n int, path string) fakeFault {
		mu.Lock()
		defer mu.Unlock()
		switch n {
		case 1:
			first = path
			return lostRequest
		case 2: // the lost create lands now, ahead of this one
			f.srv.Put(first, f.conn.SessionID(), session.Ephemeral|session.PersistentSequential)
		}
		return fakeFault{}
	}))
	le, err := f.mutex(f.conn).Acquire(f.ctx, false)
	require.NoError(t, err, "Acquire waited on its own stray node")
	f.waitFor("the stray node gone", func() bool { return len(f.queue()) == 1 })
	assert.Equal(t, []string{nodeOf(le)}, f.queue())
	f.release(le)
	assert.Empty(t, f.queue())
}
