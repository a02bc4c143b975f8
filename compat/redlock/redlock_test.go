package redlock_test

import (
	"bytes"
	"context"
	"errors"
	"regexp"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/compat/redlock"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/locktest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(settlingM{m}) }

// settlingM runs the tests, then waits (at most backgroundLimit) for the
// releases that the locks go on with in the background: they end by
// themselves (when answered, at the TTL, or at the next try on a closed
// client), so they are not leaks; goleak then finds anything else.
type settlingM struct{ m *testing.M }

const backgroundLimit = 10 * time.Second

func (s settlingM) Run() int {
	code := s.m.Run()
	for end := time.Now().Add(backgroundLimit); time.Now().Before(end) && backgroundReleases(); {
		time.Sleep(10 * time.Millisecond)
	}
	return code
}

// backgroundReleases reports whether a release goes on in the background.
func backgroundReleases() bool {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	return bytes.Contains(buf, []byte("ttl.(*Pending).Go"))
}

const waitLimit = 60 * time.Second

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	t.Cleanup(cancel)
	return ctx
}

// clients gives a contender its own clients of the servers.
func clients(t testing.TB, servers []*harness.Redis) []redlock.Redis {
	t.Helper()
	out := make([]redlock.Redis, len(servers))
	for i, s := range servers {
		r := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1})
		t.Cleanup(func() { _ = r.Close() })
		out[i] = r
	}
	return out
}

// newLock is the lock name over a Client of its own of servers.
func newLock(t testing.TB, servers []*harness.Redis, name string, opts ...redlock.Option) *redlock.Lock {
	t.Helper()
	return lockOn(t, newClient(t, clients(t, servers)), name, opts...)
}

// newClient is a Client over rs.
func newClient(t testing.TB, rs []redlock.Redis, opts ...redlock.ClientOption) *redlock.Client {
	t.Helper()
	c, err := redlock.NewClient(rs, opts...)
	require.NoError(t, err)
	return c
}

// lockOn is c's lock name.
func lockOn(t testing.TB, c *redlock.Client, name string, opts ...redlock.Option) *redlock.Lock {
	t.Helper()
	l, err := redlock.New(c, name, opts...)
	require.NoError(t, err)
	return l
}

// uptime reads a server's uptime_in_seconds.
var uptime = regexp.MustCompile(`uptime_in_seconds:(\d+)`)

// settle waits until every server is out of the quiet period of a lock of
// TTL d: a server grants nothing for a TTL after it started (it may have
// forgotten a holder), and every test starts new servers.
func settle(t testing.TB, servers []*harness.Redis, d time.Duration) {
	t.Helper()
	ctx := ctxT(t)
	for i, c := range clients(t, servers) {
		require.Eventually(t, func() bool {
			info, err := c.(*redis.Client).Info(ctx, "server").Result()
			m := uptime.FindStringSubmatch(info)
			if err != nil || m == nil {
				return false
			}
			up, _ := strconv.Atoi(m[1])
			return time.Duration(up)*time.Second >= d
		}, waitLimit, 50*time.Millisecond, "server %d never came out of its quiet period", i)
	}
}

func TestContract(t *testing.T) {
	servers := harness.StartRedisN(t, 3)
	settle(t, servers, time.Second)
	admins := clients(t, servers)
	locktest.Run(t, locktest.Backend{
		New: func(t *testing.T, name string) recipes.Locker {
			return newLock(t, servers, name, redlock.WithTTL(time.Second))
		},
		Lose: func(t *testing.T, name string, _ recipes.Lease) {
			for _, a := range admins[:2] { // a majority no longer has it
				require.NoError(t, a.(*redis.Client).Del(ctxT(t), "{"+name+"}").Err())
			}
		},
		Leftovers: func(t *testing.T, name string) []string {
			var left []string
			for i, a := range admins {
				if n, _ := a.(*redis.Client).Exists(ctxT(t), "{"+name+"}").Result(); n > 0 {
					left = append(left, servers[i].Addr())
				}
			}
			return left
		},
		Reentrant: true,
		NoTokens:  true,
	})
}

// One server of three down: the lock works on the other two. Two down: no
// majority, nothing is acquired (TryAcquire says the servers did not
// answer: the lock is not known to be held), and what one server gave is
// released.
func TestServersDown(t *testing.T) {
	servers := harness.StartRedisN(t, 3)
	settle(t, servers, time.Second)
	l := newLock(t, servers, "down", redlock.WithTTL(time.Second))
	ctx := ctxT(t)

	servers[0].Stop(t)
	lease, err := l.Acquire(ctx)
	require.NoError(t, err, "two of three are a majority")
	_, ok := lease.Token()
	assert.False(t, ok, "Redlock has no fencing token")
	require.NoError(t, lease.Release(ctx))

	servers[1].Stop(t)
	_, err = l.TryAcquire(ctx)
	require.ErrorIs(t, err, recipes.ErrNotAcquired)
	assert.NotErrorIs(t, err, recipes.ErrLocked, "down is not held")
	assert.ErrorContains(t, err, "1 of 3 servers gave it, 2 needed")
	assert.ErrorContains(t, err, servers[0].Addr())
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	_, err = l.Acquire(short)
	require.ErrorIs(t, err, recipes.ErrNotAcquired)
	require.True(t, errors.Is(err, context.DeadlineExceeded))
	last := clients(t, servers[2:])[0].(*redis.Client)
	assert.Eventually(t, func() bool { // at once, or in the background when ctx ended mid-attempt
		n, err := last.Exists(ctx, "{down}").Result()
		return err == nil && n == 0
	}, 5*time.Second, 10*time.Millisecond, "the one server that gave it was released")
}
