package redlock_test

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/compat/internal/ttl"
	"github.com/zkrecipes/zkrecipes/compat/redlock"
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

// secured is n secured redis servers: the admin's password and the lock's
// user, over TLS alone with certificates of ca when it is not nil; and
// the TLS configuration of a client that trusts them (nil without TLS).
func secured(t testing.TB, n int, ca *harness.CA) ([]*harness.Redis, *tls.Config) {
	t.Helper()
	var cfg *tls.Config
	if ca != nil {
		cfg = ca.ClientConfig(nil)
	}
	servers := make([]*harness.Redis, n)
	for i := range servers {
		sec := harness.RedisSecurity{
			Password: adminPassword,
			Users:    []string{lockUser + " on >" + lockPassword + " " + redlock.ACLRule(keyPrefix)},
		}
		if ca != nil {
			sec.TLS, sec.CA = ca.Issue(t, "redis"+strconv.Itoa(i), harness.Loopback), ca
		}
		servers[i] = harness.StartRedisSecure(t, sec)
	}
	return servers, cfg
}

// as is a client of each server as user (the default user when ""), over
// TLS with cfg when it is not nil, closed at t's cleanup.
func as(t testing.TB, servers []*harness.Redis, user, password string, cfg *tls.Config) []*redis.Client {
	t.Helper()
	out := make([]*redis.Client, len(servers))
	for i, s := range servers {
		out[i] = redis.NewClient(&redis.Options{Addr: s.Addr(), Username: user, Password: password, TLSConfig: cfg, MaxRetries: -1})
		t.Cleanup(func() { _ = out[i].Close() })
	}
	return out
}

// lockOver is the lock name over the clients rs, with keyPrefix (and
// opts, after it, for the Client).
func lockOver(t testing.TB, rs []*redis.Client, name string, opts ...redlock.ClientOption) *redlock.Lock {
	t.Helper()
	servers := make([]redlock.Redis, len(rs))
	for i, r := range rs {
		servers[i] = r
	}
	c := newClient(t, servers, append([]redlock.ClientOption{redlock.WithKeyPrefix(keyPrefix)}, opts...)...)
	return lockOn(t, c, name, redlock.WithTTL(time.Second))
}

// settleAs is settle through the admins' clients.
func settleAs(t testing.TB, admins []*redis.Client, d time.Duration) {
	t.Helper()
	for i, c := range admins {
		require.Eventually(t, func() bool {
			info, err := c.Info(ctxT(t), "server").Result()
			m := uptime.FindStringSubmatch(info)
			if err != nil || m == nil {
				return false
			}
			up, _ := strconv.Atoi(m[1])
			return time.Duration(up)*time.Second >= d
		}, waitLimit, 50*time.Millisecond, "server %d never came out of its quiet period", i)
	}
}

// securedBackend is the contract's backend for locks with keyPrefix and
// opts over clients that user makes; admins can do anything.
func securedBackend(admins []*redis.Client, user func(t testing.TB) []*redis.Client, opts ...redlock.ClientOption) locktest.Backend {
	return locktest.Backend{
		New: func(t *testing.T, name string) recipes.Locker { return lockOver(t, user(t), name, opts...) },
		Lose: func(t *testing.T, name string, _ recipes.Lease) {
			for _, a := range admins[:2] { // a majority no longer has it
				require.NoError(t, a.Del(ctxT(t), keyPrefix+"{"+name+"}").Err())
			}
		},
		Leftovers: func(t *testing.T, name string) []string {
			var left []string
			for _, a := range admins {
				if n, _ := a.Exists(ctxT(t), keyPrefix+"{"+name+"}").Result(); n > 0 {
					left = append(left, a.Options().Addr)
				}
			}
			return left
		},
		Reentrant: true,
		NoTokens:  true,
	}
}

// refusals is what a server's ACL LOG holds: what it refused since the
// last ACL LOG RESET, one line each.
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

// The lock under exactly ACLRule on three servers: the contract holds,
// and no server refused anything the lock sent, in its scripts or out.
func TestUnderACLRule(t *testing.T) {
	servers, _ := secured(t, 3, nil)
	admins := as(t, servers, "", adminPassword, nil)
	settleAs(t, admins, time.Second)
	for _, a := range admins {
		require.NoError(t, a.Do(ctxT(t), "ACL", "LOG", "RESET").Err())
	}
	locktest.Run(t, securedBackend(admins, func(t testing.TB) []*redis.Client {
		return as(t, servers, lockUser, lockPassword, nil)
	}))
	for _, a := range admins {
		assert.Empty(t, refusals(t, a), "server %s refused commands of the lock", a.Options().Addr)
	}
}

// The rule is tight: the lock's user is refused keys outside the prefix
// and channels, and a lock outside the prefix fails at once (not at its
// context's end) with an error that says what the lock needs.
func TestACLRuleIsTight(t *testing.T) {
	servers, _ := secured(t, 3, nil)
	settleAs(t, as(t, servers, "", adminPassword, nil), time.Second)
	users := as(t, servers, lockUser, lockPassword, nil)
	ctx := ctxT(t)
	require.NoError(t, users[0].Set(ctx, keyPrefix+"k", "v", time.Minute).Err(), "a key of the prefix")
	for _, cmd := range [][]any{
		{"GET", "k"}, {"SET", "other:k", "v"}, {"DEL", "{orders}"}, {"PUBLISH", keyPrefix + "c", "m"},
		{"KEYS", "*"}, {"FLUSHALL"}, {"INCR", keyPrefix + "n"}, {"EVAL", "return redis.call('GET', 'other')", "0"},
	} {
		err := users[0].Do(ctx, cmd...).Err()
		if assert.Error(t, err, "%v", cmd) {
			assert.True(t, strings.HasPrefix(err.Error(), "NOPERM") || strings.Contains(err.Error(), "The user executing the script can't"),
				"%v: %v", cmd, err)
		}
	}
	for _, tc := range []struct {
		name   string
		prefix string
		want   string
	}{
		{"no prefix", "", "give it a key prefix its user may use (WithKeyPrefix)"},
		{"another prefix", "other:", `its user needs redlock.ACLRule("other:")`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Every server's answer counts: a server timeout no loaded
			// machine outlasts (under the TTL's third), so that no answer
			// comes too late to be one of the "3 of 3".
			l := lockOver(t, users, "orders", redlock.WithKeyPrefix(tc.prefix),
				redlock.WithServerTimeout(300*time.Millisecond))
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
				assert.Contains(t, err.Error(), "3 of 3 servers cannot take it")
				assert.Contains(t, err.Error(), "NOPERM this user has no permissions to access one of the keys")
				assert.Contains(t, err.Error(), tc.want)
				t.Log(err)
			}
		})
	}
}

// Authenticated TLS clients: the contract holds as the ACL user over TLS;
// a wrong password, none, or server certificates from a CA the client
// does not trust end Acquire at once, with an error that names the cause.
func TestAuthAndTLS(t *testing.T) {
	awaitDialers(t)
	ca := harness.NewCA(t, "")
	servers, cfg := secured(t, 3, ca)
	admins := as(t, servers, "", adminPassword, cfg)
	settleAs(t, admins, time.Second)
	// A new connection's TLS handshake takes round trips and crypto: the
	// default server timeout for this short TTL (10ms) would count some
	// servers as down under -race.
	tlsTimeout := redlock.WithServerTimeout(200 * time.Millisecond)
	locktest.Run(t, securedBackend(admins, func(t testing.TB) []*redis.Client {
		return as(t, servers, lockUser, lockPassword, cfg)
	}, tlsTimeout))

	for _, tc := range []struct {
		name           string
		user, password string
		cfg            *tls.Config
		want           []string
	}{
		{"wrong password", lockUser, "wrong", cfg, []string{"WRONGPASS invalid username-password pair"}},
		{"no password", "", "", cfg, []string{"NOAUTH Authentication required"}},
		{"untrusted CA", lockUser, lockPassword, harness.NewCA(t, "another CA").ClientConfig(nil),
			[]string{"tls: failed to verify certificate", "x509: certificate signed by unknown authority"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := lockOver(t, as(t, servers, tc.user, tc.password, tc.cfg), "secure", tlsTimeout)
			ctx := ctxT(t)
			_, err := l.Acquire(ctx)
			require.ErrorIs(t, err, recipes.ErrNotAcquired)
			assert.ErrorIs(t, err, ttl.ErrPermanent)
			assert.ErrorIs(t, err, recipes.ErrRefused)
			assert.NoError(t, ctx.Err(), "it returned at once, not at its context's end")
			assert.Contains(t, err.Error(), "of 3 servers cannot take it, 2 needed")
			for _, want := range tc.want {
				assert.Contains(t, err.Error(), want)
			}
			t.Log(err)
		})
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
