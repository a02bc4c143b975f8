package redislock_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/compat/internal/ttl"
	"github.com/zkrecipes/zkrecipes/compat/redislock"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/locktest"
)

// The secured servers' users: the default user, with a password, is the
// tests' admin; the lock's user has exactly ACLRule(keyPrefix).
const (
	adminPassword = "admin-secret"
	lockUser      = "locker"
	lockPassword  = "locker-secret"
	keyPrefix     = "app:"
)

// lockUserRules is the lock user's ACL: on, its password, and
// ACLRule(keyPrefix), nothing more.
func lockUserRules() string {
	return lockUser + " on >" + lockPassword + " " + redislock.ACLRule(keyPrefix)
}

// startSecured starts a redis with the admin's password and the lock's
// user, over TLS alone when cert is not nil.
func startSecured(t testing.TB, cert *harness.Cert, ca *harness.CA) *harness.Redis {
	t.Helper()
	return harness.StartRedisSecure(t, harness.RedisSecurity{
		Password: adminPassword, Users: []string{lockUserRules()}, TLS: cert, CA: ca,
	})
}

// as is a go-redis client of addr as user (the default user when ""),
// over TLS with cfg when it is not nil, closed at t's cleanup.
func as(t testing.TB, addr, user, password string, cfg *tls.Config) *redis.Client {
	t.Helper()
	r := redis.NewClient(&redis.Options{Addr: addr, Username: user, Password: password, TLSConfig: cfg})
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// lockClientOf is a lock client over r, closed at t's cleanup.
func lockClientOf(t testing.TB, r redislock.Redis, opts ...redislock.ClientOption) *redislock.Client {
	t.Helper()
	c, err := redislock.NewClient(r, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// securedBackend is the contract's backend for locks with keyPrefix whose
// clients new makes; admin can do anything.
func securedBackend(admin redis.Cmdable, new func(t testing.TB) redislock.Redis) locktest.Backend {
	return locktest.Backend{
		New: func(t *testing.T, name string) recipes.Locker {
			return newLock(t, lockClientOf(t, new(t), redislock.WithKeyPrefix(keyPrefix)), name, redislock.WithTTL(time.Second))
		},
		Lose: func(t *testing.T, name string, _ recipes.Lease) {
			require.NoError(t, admin.Del(ctxT(t), keyPrefix+"{"+name+"}").Err())
		},
		Leftovers: func(t *testing.T, name string) []string { return prefixedLeftovers(t, admin, keyPrefix, name) },
		Reentrant: true,
	}
}

// refusals is the server's ACL LOG: what it refused since the last ACL
// LOG RESET, one line each.
func refusals(t testing.TB, admin *redis.Client) []string {
	t.Helper()
	entries, err := admin.Do(ctxT(t), "ACL", "LOG").Slice()
	require.NoError(t, err)
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = fmt.Sprint(e)
	}
	return out
}

// The lock under exactly ACLRule: the contract holds, waiters are handed
// the lock in turn across clients, and the server refused nothing the
// lock sent (ACL LOG), in the scripts or out (a refused SUBSCRIBE would
// leave waiters to their timers, and show here).
func TestUnderACLRule(t *testing.T) {
	r := startSecured(t, nil, nil)
	admin := as(t, r.Addr(), "", adminPassword, nil)
	require.NoError(t, admin.Do(ctxT(t), "ACL", "LOG", "RESET").Err())
	user := func(t testing.TB) redislock.Redis { return as(t, r.Addr(), lockUser, lockPassword, nil) }

	locktest.Run(t, securedBackend(admin, user))
	t.Run("Handoff", func(t *testing.T) { handoffInTurn(t, admin, user) })
	assert.Empty(t, refusals(t, admin), "the server refused commands of the lock")
}

// handoffInTurn: a holder and three waiters, each with a client of its
// own, queued one after the other; each release hands the lock to the
// next in the queue, with a higher token.
func handoffInTurn(t *testing.T, admin redis.Cmdable, user func(testing.TB) redislock.Redis) {
	ctx := ctxT(t)
	const name, waiters = "handoff", 3
	queue := keyPrefix + "{" + name + "}:queue"
	locks := make([]*redislock.Lock, 1+waiters)
	for i := range locks {
		locks[i] = newLock(t, lockClientOf(t, user(t), redislock.WithKeyPrefix(keyPrefix)), name)
	}
	lease, err := locks[0].Acquire(ctx)
	require.NoError(t, err)
	got := make([]chan recipes.Lease, len(locks))
	for i := 1; i < len(locks); i++ {
		got[i] = make(chan recipes.Lease, 1)
		go func() {
			le, err := locks[i].Acquire(ctx)
			assert.NoError(t, err, "waiter %d", i)
			got[i] <- le
		}()
		require.Eventually(t, func() bool { // queued behind the ones before it
			n, err := admin.LLen(ctx, queue).Result()
			return err == nil && n == int64(i)
		}, waitLimit, 5*time.Millisecond, "waiter %d never queued", i)
	}
	for i := 1; i < len(locks); i++ {
		prev, _ := lease.Token()
		require.NoError(t, lease.Release(ctx))
		lease = <-got[i]
		require.NotNil(t, lease, "waiter %d", i)
		next, _ := lease.Token()
		assert.Greater(t, next, prev, "waiter %d's token", i)
	}
	require.NoError(t, lease.Release(ctx))
	assert.Empty(t, prefixedLeftovers(t, admin, keyPrefix, name))
}

// The rule is tight: the lock's user is refused keys and channels outside
// the prefix and commands the lock does not use, and a lock outside the
// prefix fails at once (not at its context's end) with an error that
// says what the lock needs.
func TestACLRuleIsTight(t *testing.T) {
	r := startSecured(t, nil, nil)
	user := as(t, r.Addr(), lockUser, lockPassword, nil)
	ctx := ctxT(t)

	require.NoError(t, user.Set(ctx, keyPrefix+"k", "v", time.Minute).Err(), "a key of the prefix")
	for _, cmd := range [][]any{
		{"GET", "k"}, {"SET", "other:k", "v"}, {"DEL", "{orders}"}, {"PUBLISH", "zkrecipes:redislock:grants:x", "m"},
		{"SUBSCRIBE", "other"}, {"KEYS", "*"}, {"FLUSHALL"}, {"CONFIG", "GET", "maxmemory"}, {"INCR", keyPrefix + "n"},
		{"EVAL", "return redis.call('GET', 'other')", "0"},
	} {
		err := user.Do(ctx, cmd...).Err()
		if assert.Error(t, err, "%v", cmd) {
			assert.True(t, strings.HasPrefix(err.Error(), "NOPERM") || strings.Contains(err.Error(), "The user executing the script can't"),
				"%v: %v", cmd, err)
		}
	}

	for _, tc := range []struct {
		name string
		opts []redislock.ClientOption
		want string
	}{
		{"no prefix", nil, "give it a key prefix its user may use (WithKeyPrefix)"},
		{"another prefix", []redislock.ClientOption{redislock.WithKeyPrefix("other:")}, `its user needs redislock.ACLRule("other:")`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLock(t, lockClientOf(t, user, tc.opts...), "orders")
			for _, try := range []bool{false, true} {
				ctx := ctxT(t)
				var err error
				if try {
					_, err = l.TryAcquire(ctx)
				} else {
					_, err = l.Acquire(ctx)
				}
				require.ErrorIs(t, err, recipes.ErrNotAcquired)
				assert.ErrorIs(t, err, ttl.ErrPermanent)
				assert.ErrorIs(t, err, recipes.ErrRefused)
				assert.NoError(t, ctx.Err(), "it returned at once, not at its context's end")
				assert.Contains(t, err.Error(), "NOPERM this user has no permissions to access one of the keys")
				assert.Contains(t, err.Error(), tc.want)
				t.Log(err)
			}
		})
	}
}

// A rule changed under a holder (EVALSHA taken away): its next renewal is
// refused, and its lease ends at once with that refusal as the cause, not
// at its deadline for want of renewals.
func TestRuleRevokedUnderHolder(t *testing.T) {
	r := startSecured(t, nil, nil)
	admin := as(t, r.Addr(), "", adminPassword, nil)
	ctx := ctxT(t)
	l := newLock(t, lockClientOf(t, as(t, r.Addr(), lockUser, lockPassword, nil), redislock.WithKeyPrefix(keyPrefix)), "revoked")
	lease, err := l.Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, admin.Do(ctx, "ACL", "SETUSER", lockUser, "-evalsha", "-eval").Err())
	select {
	case <-lease.Done():
	case <-ctx.Done():
		t.Fatal("the lease outlived a refused renewal")
	}
	cause := context.Cause(lease.Context())
	assert.ErrorIs(t, cause, recipes.ErrLockLost)
	assert.ErrorContains(t, cause, "renewal failed")
	assert.ErrorContains(t, cause, "NOPERM this user has no permissions to run the 'evalsha' command")
	assert.NotContains(t, cause.Error(), "no renewal confirmed", "ended by the refusal, not by its deadline")
}

// Authenticated and TLS clients: the contract holds over TLS as the ACL
// user; a wrong password, none, or a server certificate from a CA the
// client does not trust end Acquire at once, with an error that names
// the cause.
func TestAuthAndTLS(t *testing.T) {
	awaitDialers(t)
	ca := harness.NewCA(t, "")
	r := startSecured(t, ca.Issue(t, "redis", harness.Loopback), ca)
	admin := as(t, r.TLSAddr(), "", adminPassword, ca.ClientConfig(nil))
	locktest.Run(t, securedBackend(admin, func(t testing.TB) redislock.Redis {
		return as(t, r.TLSAddr(), lockUser, lockPassword, ca.ClientConfig(nil))
	}))

	for _, tc := range []struct {
		name           string
		user, password string
		cfg            *tls.Config
		want           []string
	}{
		{"wrong password", lockUser, "wrong", ca.ClientConfig(nil), []string{"WRONGPASS invalid username-password pair"}},
		{"wrong default password", "", "wrong", ca.ClientConfig(nil), []string{"WRONGPASS"}},
		{"no password", "", "", ca.ClientConfig(nil), []string{"NOAUTH Authentication required"}},
		{"untrusted CA", lockUser, lockPassword, harness.NewCA(t, "another CA").ClientConfig(nil),
			[]string{"tls: failed to verify certificate", "x509: certificate signed by unknown authority"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLock(t, lockClientOf(t, as(t, r.TLSAddr(), tc.user, tc.password, tc.cfg), redislock.WithKeyPrefix(keyPrefix)), "secure")
			ctx := ctxT(t)
			_, err := l.Acquire(ctx)
			require.ErrorIs(t, err, recipes.ErrNotAcquired)
			assert.ErrorIs(t, err, ttl.ErrPermanent)
			assert.ErrorIs(t, err, recipes.ErrRefused)
			assert.NoError(t, ctx.Err(), "it returned at once, not at its context's end")
			for _, want := range tc.want {
				assert.Contains(t, err.Error(), want)
			}
			t.Log(err)
		})
	}
}

// ACLRule on a Redis Cluster: the user has the rule on every node; the
// contract holds with a ClusterClient (CLUSTER SLOTS, COMMAND,
// SSUBSCRIBE, SPUBLISH), so does a handoff with WithReplicaAck (WAIT,
// SCRIPT LOAD), and no node refused anything.
func TestUnderACLRuleOnACluster(t *testing.T) {
	c := harness.StartRedisCluster(t, 3, 1)
	ctx := ctxT(t)
	rule := strings.Fields(lockUserRules())
	for _, addr := range c.Addrs() {
		node := rdb(t, addr)
		args := []any{"ACL", "SETUSER"}
		for _, f := range rule {
			args = append(args, f)
		}
		require.NoError(t, node.Do(ctx, args...).Err(), addr)
		require.NoError(t, node.Do(ctx, "ACL", "LOG", "RESET").Err(), addr)
	}
	admin := clusterClient(t, c)
	user := func(t testing.TB) redislock.Redis {
		r := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), Username: lockUser, Password: lockPassword})
		t.Cleanup(func() { _ = r.Close() })
		return r
	}
	locktest.Run(t, securedBackend(admin, user))
	t.Run("ReplicaAck", func(t *testing.T) {
		// WAIT after each script, in a pipeline: a master without the
		// script (flushed) is sent SCRIPT LOAD.
		for _, addr := range c.Addrs() {
			require.NoError(t, rdb(t, addr).ScriptFlush(ctx).Err(), addr)
		}
		acks := redislock.WithReplicaAck(1, 500*time.Millisecond)
		first := newLock(t, lockClientOf(t, user(t), redislock.WithKeyPrefix(keyPrefix)), "acked", acks)
		second := newLock(t, lockClientOf(t, user(t), redislock.WithKeyPrefix(keyPrefix)), "acked", acks)
		lease, err := first.Acquire(ctx)
		require.NoError(t, err)
		next := make(chan recipes.Lease, 1)
		go func() {
			le, err := second.Acquire(ctx)
			assert.NoError(t, err)
			next <- le
		}()
		require.NoError(t, lease.Release(ctx))
		lease = <-next
		require.NotNil(t, lease)
		require.NoError(t, lease.Release(ctx))
	})
	for _, addr := range c.Addrs() {
		assert.Empty(t, refusals(t, rdb(t, addr)), "node %s refused commands of the lock", addr)
	}
}

// awaitDialers waits at t's end, once the clients made after this call
// are closed (clean-ups run last first), until go-redis's background
// redialers are gone, bounded: a pool whose dials failed (a certificate
// refused) dials again every second until it sees its client closed, and
// goleak checks the package at its end.
func awaitDialers(t *testing.T) {
	t.Cleanup(func() {
		buf := make([]byte, 1<<20)
		for deadline := time.Now().Add(waitLimit); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if n := runtime.Stack(buf, true); !bytes.Contains(buf[:n], []byte("pool.(*ConnPool).tryDial")) {
				return
			}
		}
		t.Errorf("go-redis still redials after %v", waitLimit)
	})
}
