package memcachedlock_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/compat/memcachedlock"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// failing is a client whose every call fails with err.
type failing struct{ err error }

func (f failing) Add(*memcache.Item) error                             { return f.err }
func (f failing) Get(string) (*memcache.Item, error)                   { return nil, f.err }
func (f failing) GetMulti([]string) (map[string]*memcache.Item, error) { return nil, f.err }
func (f failing) CompareAndSwap(*memcache.Item) error                  { return f.err }

// promptLimit bounds a call that must return at once, or within tens of
// milliseconds of its context's end: generous, for a busy machine.
const promptLimit = 2 * time.Second

// within runs acquire and fails t unless it returns within limit.
func within(t *testing.T, limit time.Duration, acquire func() (recipes.Lease, error)) error {
	t.Helper()
	type result struct {
		lease recipes.Lease
		err   error
	}
	res := make(chan result, 1)
	start := time.Now()
	go func() {
		lease, err := acquire()
		res <- result{lease, err}
	}()
	select {
	case r := <-res:
		t.Logf("returned after %v: %v", time.Since(start).Round(time.Millisecond), r.err)
		require.Nil(t, r.lease)
		return r.err
	case <-time.After(limit):
		t.Fatalf("still waiting after %v", limit)
		return nil
	}
}

// An error that trying again cannot mend ends Acquire at once, even with a
// context that never ends.
func TestPermanentErrorsEndAcquire(t *testing.T) {
	for _, tc := range []struct {
		name string
		mc   memcachedlock.Memcached
		want error
	}{
		{"no servers", memcache.New(), memcache.ErrNoServers},
		{"malformed key", failing{memcache.ErrMalformedKey}, memcache.ErrMalformedKey},
		{"client error", failing{fmt.Errorf("memcache: unexpected response line from %q: %q", "add", "CLIENT_ERROR bad data chunk\r\n")}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLock(t, tc.mc, "k", memcachedlock.WithoutEvictionCheck())
			for _, acquire := range []func(context.Context) (recipes.Lease, error){l.Acquire, l.TryAcquire} {
				err := within(t, promptLimit, func() (recipes.Lease, error) { return acquire(context.Background()) })
				require.ErrorIs(t, err, recipes.ErrNotAcquired)
				assert.NotErrorIs(t, err, recipes.ErrLocked)
				if tc.want != nil {
					assert.ErrorIs(t, err, tc.want)
				}
			}
		})
	}
}

// An unreachable memcached is retried until the context ends; Acquire
// returns soon after that, and TryAcquire at once.
func TestUnreachableServer(t *testing.T) {
	ports, err := harness.FreePorts(1)
	require.NoError(t, err)
	addr := fmt.Sprintf("%s:%d", harness.Loopback, ports[0]) // nothing listens there
	for _, tc := range []struct {
		name string
		opt  any
	}{
		{"eviction check", memcachedlock.WithServerAddr(addr)},
		{"add", memcachedlock.WithoutEvictionCheck()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLock(t, client(t, addr), "k", tc.opt)
			err := within(t, promptLimit, func() (recipes.Lease, error) {
				ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
				defer cancel()
				return l.Acquire(ctx)
			})
			require.ErrorIs(t, err, recipes.ErrNotAcquired)
			require.ErrorIs(t, err, context.DeadlineExceeded)
			err = within(t, promptLimit, func() (recipes.Lease, error) { return l.TryAcquire(context.Background()) })
			require.ErrorIs(t, err, recipes.ErrNotAcquired)
			assert.NotErrorIs(t, err, recipes.ErrLocked)
		})
	}
}

// A memcached that answers nothing (a stopped process: the kernel still
// accepts connections): Acquire returns soon after its context ends.
func TestSilentServer(t *testing.T) {
	mute := harness.NewMute(t)
	awaitBackground(t) // the clean-up of an add that may have landed gives up within the TTL
	for _, opt := range []any{memcachedlock.WithServerAddr(mute.Addr()), memcachedlock.WithoutEvictionCheck()} {
		l := newLock(t, client(t, mute.Addr()), "k", opt, memcachedlock.WithTTL(memcachedlock.MinTTL))
		err := within(t, promptLimit, func() (recipes.Lease, error) {
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			return l.Acquire(ctx)
		})
		require.ErrorIs(t, err, recipes.ErrNotAcquired)
		require.True(t, errors.Is(err, context.DeadlineExceeded), "%v", err)
	}
}
