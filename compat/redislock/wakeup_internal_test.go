package redislock

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
)

// A grant that reaches the waiter's client before the reply to the
// waiter's own queuing attempt (they come on two connections) still wakes
// the waiter. It was once dropped, its id not registered yet, and the
// waiter slept on its timer, up to a TTL, with the lock held in its name.
func TestGrantBeforeTheAttemptsReply(t *testing.T) {
	addr := harness.StartRedis(t).Addr()
	// A long TTL: a lost grant leaves the waiter asleep for a TTL, past
	// the waiter's context.
	const lockTTL = 30 * time.Second
	shortQuiet(t, addr, "early-grant")
	holderLock, err := New(newClient(t, addr), "early-grant", WithTTL(lockTTL))
	require.NoError(t, err)
	waiterClient := newClient(t, addr)
	waiterLock, err := New(waiterClient, "early-grant", WithTTL(lockTTL))
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	held, err := holderLock.Acquire(ctx)
	require.NoError(t, err)

	// First a wait that leaves the waiter's client subscribed to the
	// lock's grants: then a grant always reaches it.
	waited := make(chan error, 1)
	go func() {
		lease, err := waiterLock.Acquire(ctx)
		if err == nil {
			err = lease.Release(ctx)
		}
		waited <- err
	}()
	require.Eventually(t, func() bool {
		n, _ := waiterClient.r.(*redis.Client).LLen(ctx, waiterLock.keys[2]).Result()
		return n == 1
	}, 10*time.Second, time.Millisecond, "the waiter queued")
	require.NoError(t, held.Release(ctx))
	require.NoError(t, <-waited)
	held, err = holderLock.Acquire(ctx)
	require.NoError(t, err)

	// Once the waiter has queued and read the reply, and before it looks
	// for a grant: release, and let the grant reach the waiter's client.
	granted := make(chan struct{}, 1)
	delivered := func(s *subscriber, _ string) {
		if s == waiterClient.sub(t) {
			select {
			case granted <- struct{}{}:
			default:
			}
		}
	}
	var once sync.Once
	var releaseErr error
	attempted := func() {
		once.Do(func() {
			releaseErr = held.Release(ctx)
			select {
			case <-granted:
			case <-time.After(10 * time.Second):
			}
		})
	}
	testHooks.delivered.Store(&delivered)
	testHooks.attempted.Store(&attempted)
	defer func() {
		testHooks.attempted.Store(nil)
		testHooks.delivered.Store(nil)
	}()

	wctx, wcancel := context.WithTimeout(ctx, lockTTL/3)
	defer wcancel()
	lease, err := waiterLock.Acquire(wctx)
	require.NoError(t, releaseErr)
	require.NoError(t, err, "the waiter was not woken by the grant")
	require.NoError(t, lease.Release(ctx))
}

// A grant is published to the new holder's client alone: a release wakes
// one client, not every client waiting on the lock.
func TestGrantReachesOnlyItsClient(t *testing.T) {
	addr := harness.StartRedis(t).Addr()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	clients := []*Client{newClient(t, addr), newClient(t, addr), newClient(t, addr)}
	locks := make([]*Lock, len(clients))
	for i, c := range clients {
		l, err := New(c, "one-wakes", WithTTL(2*time.Second)) // short: a new server is quiet for a TTL
		require.NoError(t, err)
		locks[i] = l
	}
	held, err := locks[0].Acquire(ctx)
	require.NoError(t, err)

	var mu sync.Mutex
	deliveries := map[*subscriber]int{}
	delivered := func(s *subscriber, _ string) {
		mu.Lock()
		defer mu.Unlock()
		deliveries[s]++
	}
	testHooks.delivered.Store(&delivered)
	defer testHooks.delivered.Store(nil)

	leases := make(chan error, 2)
	for i, l := range locks[1:] {
		go func() {
			lease, err := l.Acquire(ctx)
			if err == nil {
				err = lease.Release(ctx)
			}
			leases <- err
		}()
		require.Eventually(t, func() bool { // queued in this order
			n, _ := clients[0].r.(*redis.Client).LLen(ctx, l.keys[2]).Result()
			return n == int64(i+1)
		}, 10*time.Second, time.Millisecond)
	}
	require.NoError(t, held.Release(ctx))
	require.NoError(t, <-leases)
	require.NoError(t, <-leases)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, map[*subscriber]int{clients[1].sub(t): 1, clients[2].sub(t): 1}, deliveries,
		"each grant reached the client of its waiter, and no other")
}

// newClient is a Client over a new go-redis client of addr, both closed
// when t ends.
func newClient(t *testing.T, addr string) *Client {
	r := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = r.Close() })
	c, err := NewClient(r)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// sub is the Client's one subscription (one server).
func (c *Client) sub(t *testing.T) *subscriber {
	c.mu.Lock()
	defer c.mu.Unlock()
	require.Len(t, c.subs, 1)
	for _, s := range c.subs {
		return s
	}
	return nil
}

// A grant confirmed by the acquire script (its message lost, or too old to
// hold from) gets the token of the grant, which the lock's value carries:
// it was once answered with no token at all, and the waiter retried,
// renewing the lock in its name, for as long as its context lived.
func TestConfirmedGrantGetsItsToken(t *testing.T) {
	addr := harness.StartRedis(t).Addr()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l, err := New(newClient(t, addr), "confirm", WithTTL(2*time.Second))
	require.NoError(t, err)
	before, err := l.Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, before.Release(ctx))
	admin := redis.NewClient(&redis.Options{Addr: addr})
	defer func() { _ = admin.Close() }()
	const id = "handed-to-me"
	bt, _ := before.Token()
	require.NoError(t, admin.Set(ctx, l.keys[0], fmt.Sprintf("%s %d", id, bt+5), time.Minute).Err()) // as a handoff leaves it
	got, err := l.attempt(ctx, id, true, "", time.Now())
	require.NoError(t, err)
	require.True(t, got.acquired)
	assert.Equal(t, bt+5, got.token)
	pttl, err := admin.PTTL(ctx, l.keys[0]).Result()
	require.NoError(t, err)
	assert.LessOrEqual(t, pttl, 2*time.Second, "set to the lock's TTL: renewed in its name")
}
