package queue_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/queue"
	"github.com/zkrecipes/zkrecipes/session"
)

// A consumer with a lock path killed mid-item (its client closed, so its
// session and lock node end): the item is delivered again, exactly one
// more time, to a consumer that was already waiting on it, and the dead
// one's handler was told why.
func TestConsumerKilledMidItem(t *testing.T) {
	servers := zktest.Shared(t)
	producer := zktest.Connect(t, servers)
	path := root(t)
	opts := []queue.Option{queue.WithLockPath(path + "-locks")}

	dying := zktest.Connect(t, servers)
	inHand := make(chan struct{})
	var cause error
	a := consume(t, newQueue(t, dying, path, opts...), func(ctx context.Context, item []byte) error {
		close(inHand)
		<-ctx.Done()
		cause = context.Cause(ctx)
		return ctx.Err()
	})
	_, err := newQueue(t, producer, path, opts...).Put(ctxT(t), []byte("x"))
	require.NoError(t, err)
	select {
	case <-inHand:
	case <-time.After(waitLimit):
		t.Fatal("the first consumer never got the item")
	}

	// The second finds the item locked, and waits.
	b := consume(t, newQueue(t, zktest.Connect(t, servers), path, opts...), nil)
	time.Sleep(zktest.StillWaiting)
	assert.Empty(t, b.got(), "an item in another's hands")

	dying.Close()
	assert.Equal(t, []string{"x"}, b.await(t, 1))
	a.stop(t)
	assert.ErrorIs(t, cause, session.ErrClosed, "the handler was told its session ended")
	zktest.WaitForNodes(t, producer, path, 0)
	b.stop(t)
	assert.Equal(t, []string{"x"}, a.got())
	assert.Equal(t, []string{"x"}, b.got())
	assert.Empty(t, children(t, producer, path+"-locks"))
}

// A consumer through a cut and through a blackhole past the session
// timeout, with items put meanwhile: it is told of each change of state
// (CURATOR-336), goes on afterwards (CURATOR-623) and gets every item;
// an item in its hands at the blackhole (its handler told by its
// context) comes again, exactly once more.
func TestConsumerFaults(t *testing.T) {
	z := harness.StartZK(t, 1)
	for _, tc := range []struct {
		name  string
		fault func(t *testing.T, p *harness.Proxy, states <-chan session.StateChange)
		lost  bool
	}{
		{name: "cut", fault: func(t *testing.T, p *harness.Proxy, states <-chan session.StateChange) {
			p.Cut(t)
			zktest.AwaitState(t, states, session.Suspended)
		}},
		{name: "blackhole past the session timeout", lost: true, fault: func(t *testing.T, p *harness.Proxy, states <-chan session.StateChange) {
			p.Blackhole(t)
			zktest.AwaitState(t, states, session.Lost)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := root(t)
			opts := []queue.Option{queue.WithLockPath(path + "-locks")}
			pc := zktest.Connect(t, z.Servers())
			producer := newQueue(t, pc, path, opts...)
			p := harness.NewProxy(t, z.Servers()[0])
			c := zktest.Connect(t, []string{p.Addr()}, session.WithSessionTimeout(2*time.Second))
			states, err := c.Subscribe(ctxT(t))
			require.NoError(t, err)
			var mu sync.Mutex
			var told []session.State
			opts = append(opts, queue.WithStateFunc(func(ch session.StateChange) {
				mu.Lock()
				told = append(told, ch.State)
				mu.Unlock()
			}))

			inHand := make(chan struct{})
			var once sync.Once
			var cause error
			cons := consume(t, newQueue(t, c, path, opts...), func(ctx context.Context, item []byte) error {
				if string(item) != "hold" {
					return nil
				}
				first := false
				once.Do(func() { first = true })
				if !first {
					return nil
				}
				close(inHand)
				<-ctx.Done()
				cause = context.Cause(ctx)
				return ctx.Err()
			})
			put := func(s string) {
				_, err := producer.Put(ctxT(t), []byte(s))
				require.NoError(t, err)
			}
			put("before")
			cons.await(t, 1)
			put("hold")
			select {
			case <-inHand:
			case <-time.After(waitLimit):
				t.Fatal("the consumer never got the held item")
			}

			tc.fault(t, p, states)
			put("during")
			p.Restore(t)
			zktest.WaitForNodes(t, pc, path, 0)
			cons.stop(t)
			assert.ElementsMatch(t, []string{"before", "hold", "hold", "during"}, cons.got())
			assert.True(t, errors.Is(cause, session.ErrSuspended) || errors.Is(cause, session.ErrSessionLost),
				"the handler was told: %v", cause)
			assert.Empty(t, children(t, pc, path+"-locks"))
			mu.Lock()
			defer mu.Unlock()
			assert.Contains(t, told, session.Suspended)
			assert.Contains(t, told, session.Reconnected)
			if tc.lost {
				assert.Contains(t, told, session.Lost)
			}
		})
	}
}

// A consumer stopped while its create of an item's lock node is out (the
// server made the node; the reply is still on its way): the node is
// deleted, not left to keep every other consumer from the item as long
// as the consumer's session lives.
func TestConsumerStoppedDuringLockCreate(t *testing.T) {
	servers := zktest.Shared(t)
	pc := zktest.Connect(t, servers)
	path := root(t)
	opts := []queue.Option{queue.WithLockPath(path + "-locks")}
	producer := newQueue(t, pc, path, opts...)
	_, err := producer.Put(ctxT(t), []byte("a"))
	require.NoError(t, err)
	second, err := producer.Put(ctxT(t), []byte("b"))
	require.NoError(t, err)
	lock := path + "-locks/" + session.BaseName(second)

	p := harness.NewProxy(t, servers[0])
	c := zktest.Connect(t, []string{p.Addr()}, session.WithSessionTimeout(4*time.Second))
	inHand, slow := make(chan struct{}), make(chan struct{})
	cons := consume(t, newQueue(t, c, path, opts...), func(ctx context.Context, item []byte) error {
		if string(item) == "a" {
			close(inHand)
			<-slow
		}
		return nil
	})
	select {
	case <-inHand:
	case <-time.After(waitLimit):
		t.Fatal("the consumer never got the first item")
	}
	// Replies now come late: the consumer is waiting for its lock node's
	// create when the node appears on the server.
	p.LatencyToClient(t, time.Second)
	close(slow)
	require.Eventually(t, func() bool {
		ok, _, err := pc.Exists(ctxT(t), lock)
		return err == nil && ok
	}, waitLimit, 5*time.Millisecond, "the consumer never made the second item's lock node")
	cons.stop(t)
	p.Restore(t)
	assert.Empty(t, children(t, pc, path+"-locks"), "a lock node left behind by a stopped consumer")
}
