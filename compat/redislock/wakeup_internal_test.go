package redislock

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/compat/internal/grants"
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
	q := &releaseAfterAttempt{waiting: waiting{l: waiterLock, id: uuid.NewString()}, release: func() error { return held.Release(ctx) }}
	wctx, wcancel := context.WithTimeout(ctx, lockTTL/3)
	defer wcancel()
	lease, err := grants.Wait(wctx, q, true, waiterLock.ttl, nil)
	require.NoError(t, q.releaseErr)
	require.NoError(t, err, "the waiter was not woken by the grant")
	require.NoError(t, lease.Release(ctx))
}

// releaseAfterAttempt is a waiter that, after its first attempt, runs
// release and gives the grant it makes time to reach the waiter's
// watcher, before it lets grants.Wait go on.
type releaseAfterAttempt struct {
	waiting
	watch      *grants.Watcher
	release    func() error
	releaseErr error
	done       bool
}

func (r *releaseAfterAttempt) Watch() *grants.Watcher {
	r.watch = r.waiting.Watch()
	return r.watch
}

func (r *releaseAfterAttempt) Attempt(ctx context.Context, queue bool, sent time.Time) (grants.Outcome, error) {
	o, err := r.waiting.Attempt(ctx, queue, sent)
	if !r.done {
		r.done = true
		r.releaseErr = r.release()
		// Until the grant is in the watcher's buffer (a watcher made after
		// this attempt would never see it): bounded, the test's context
		// tells a grant that never came.
		for i := 0; i < 10000 && (r.watch == nil || len(r.watch.Grants) == 0); i++ {
			time.Sleep(time.Millisecond)
		}
	}
	return o, err
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

	// Every grant channel, watched from outside: a grant is a message on
	// the channel of one Client.
	admin := redis.NewClient(&redis.Options{Addr: addr})
	defer func() { _ = admin.Close() }()
	watched := admin.PSubscribe(ctx, "*zkrecipes:redislock:grants:*")
	defer func() { _ = watched.Close() }()
	_, err = watched.Receive(ctx) // the subscription is confirmed
	require.NoError(t, err)

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
	// A message after them all: those before it arrive first.
	const end = "end:zkrecipes:redislock:grants:"
	require.NoError(t, admin.Publish(ctx, end, "").Err())
	grantsTo := map[string]int{}
	for {
		msg, err := watched.ReceiveMessage(ctx)
		require.NoError(t, err)
		if msg.Channel == end {
			break
		}
		if _, _, ok := grants.Parse(msg.Payload); ok {
			grantsTo[msg.Channel]++
		}
	}
	assert.Equal(t, map[string]int{locks[1].channel: 1, locks[2].channel: 1}, grantsTo,
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
