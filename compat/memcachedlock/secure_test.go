package memcachedlock_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/compat/internal/ttl"
	"github.com/zkrecipes/zkrecipes/compat/memcachedlock"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/locktest"
	"github.com/zkrecipes/zkrecipes/recipes/locktrace"
)

// The secured server's user, and the prefix of the tests' locks.
const (
	mcUser, mcPassword = "locker", "locker-secret"
	keyPrefix          = "app:"
)

// dialFunc is memcache.Client.DialContext's type.
type dialFunc = func(ctx context.Context, network, addr string) (net.Conn, error)

// tlsDial dials with TLS, trusting what cfg trusts.
func tlsDial(cfg *tls.Config) dialFunc { return (&tls.Dialer{Config: cfg}).DialContext }

// authenticating dials with dial, then authenticates the new connection
// (memcached -Y: a "set" of "user password" as its first command, answered
// STORED) before gomemcache uses it. A refusal is a failed dial (nothing
// of the caller's was sent) that names the server's answer.
func authenticating(dial dialFunc, user, password string) dialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		if err := authenticate(ctx, c, user, password); err != nil {
			_ = c.Close()
			return nil, &net.OpError{Op: "dial", Net: network, Addr: c.RemoteAddr(), Err: err}
		}
		return c, nil
	}
}

// authenticate sends memcached's ASCII authentication on c and reads the
// answer. memcached sends nothing more until asked, so the reader keeps
// nothing of what gomemcache reads next.
func authenticate(ctx context.Context, c net.Conn, user, password string) error {
	deadline, _ := ctx.Deadline()
	_ = c.SetDeadline(deadline)
	defer func() { _ = c.SetDeadline(time.Time{}) }()
	cred := user + " " + password
	if _, err := fmt.Fprintf(c, "set auth 0 0 %d\r\n%s\r\n", len(cred), cred); err != nil {
		return fmt.Errorf("memcached authentication: %w", err)
	}
	reply, err := bufio.NewReader(c).ReadString('\n')
	switch {
	case err != nil:
		return fmt.Errorf("memcached authentication: %w", err)
	case reply != "STORED\r\n":
		return fmt.Errorf("memcached authentication refused: %s", strings.TrimSpace(reply))
	}
	return nil
}

// clientWith is a client of addr that connects with dial, closed at t's
// cleanup.
func clientWith(t testing.TB, addr string, dial dialFunc) *memcache.Client {
	t.Helper()
	mc := client(t, addr)
	mc.DialContext = dial
	return mc
}

// Over TLS and authenticated, every connection (the pool's, and the
// eviction check's own) made by the client's DialContext: the contract
// holds, with a key prefix.
func TestOverTLSAuthenticated(t *testing.T) {
	ca := harness.NewCA(t, "")
	m := harness.StartMemcachedSecure(t, harness.MemcachedSecurity{
		TLS: ca.Issue(t, "memcached", harness.Loopback), Users: map[string]string{mcUser: mcPassword},
	})
	awaitBackground(t)
	dial := authenticating(tlsDial(ca.ClientConfig(nil)), mcUser, mcPassword)
	admin := clientWith(t, m.Addr(), dial)
	locktest.Run(t, locktest.Backend{
		New: func(t *testing.T, name string) recipes.Locker {
			markFresh(t, admin, keyPrefix+name)
			return newLock(t, clientWith(t, m.Addr(), dial), name, memcachedlock.WithServerAddr(m.Addr()),
				memcachedlock.WithTTL(memcachedlock.MinTTL), memcachedlock.WithKeyPrefix(keyPrefix))
		},
		Lose: func(t *testing.T, name string, _ recipes.Lease) {
			require.NoError(t, admin.Delete(keyPrefix+name))
		},
		Leftovers: func(t *testing.T, name string) []string {
			if _, err := admin.Get(keyPrefix + name); err == nil {
				return []string{keyPrefix + name}
			}
			return nil
		},
		Reentrant: true,
	})
}

// A wrong password, none, or a server certificate from a CA the client
// does not trust end Acquire at once, whether the eviction check or the
// lock's own requests meet them first, with an error that names the cause.
func TestSecuredServerRefuses(t *testing.T) {
	ca := harness.NewCA(t, "")
	m := harness.StartMemcachedSecure(t, harness.MemcachedSecurity{
		TLS: ca.Issue(t, "memcached", harness.Loopback), Users: map[string]string{mcUser: mcPassword},
	})
	trusted := tlsDial(ca.ClientConfig(nil))
	for _, tc := range []struct {
		name string
		dial dialFunc
		want []string
	}{
		{"wrong password", authenticating(trusted, mcUser, "wrong"), []string{"memcached authentication refused: CLIENT_ERROR"}},
		{"no authentication", trusted, []string{"CLIENT_ERROR unauthenticated"}},
		{"untrusted CA", authenticating(tlsDial(harness.NewCA(t, "another CA").ClientConfig(nil)), mcUser, mcPassword),
			[]string{"tls: failed to verify certificate", "x509: certificate signed by unknown authority"}},
	} {
		for _, opt := range []any{memcachedlock.WithServerAddr(m.Addr()), memcachedlock.WithoutEvictionCheck()} {
			t.Run(tc.name, func(t *testing.T) {
				l := newLock(t, clientWith(t, m.Addr(), tc.dial), "secure", opt, memcachedlock.WithKeyPrefix(keyPrefix))
				for _, try := range []bool{false, true} {
					ctx := ctxT(t)
					var err error
					if try {
						_, err = l.TryAcquire(ctx)
					} else {
						_, err = l.Acquire(ctx)
					}
					require.ErrorIs(t, err, recipes.ErrNotAcquired)
					assert.NotErrorIs(t, err, recipes.ErrLocked)
					assert.ErrorIs(t, err, ttl.ErrPermanent)
					assert.ErrorIs(t, err, recipes.ErrRefused)
					assert.NoError(t, ctx.Err(), "it returned at once, not at its context's end")
					for _, want := range tc.want {
						assert.Contains(t, err.Error(), want)
					}
					t.Log(err)
				}
			})
		}
	}
}

// A certificate refused to a renewal's new connection (a certificate
// rotated on one side only, say) does not end the lease at once, as it
// ends an acquisition: the renewal is tried again until the lease's
// deadline, and the lease lives on when a try gets through.
func TestRenewalRetriesARefusedCertificate(t *testing.T) {
	ca := harness.NewCA(t, "")
	m := harness.StartMemcachedSecure(t, harness.MemcachedSecurity{TLS: ca.Issue(t, "memcached", harness.Loopback)})
	trusted, untrusted := tlsDial(ca.ClientConfig(nil)), tlsDial(harness.NewCA(t, "another CA").ClientConfig(nil))
	var (
		untrust  atomic.Bool
		refusals atomic.Int32
		renewed  atomic.Int32 // renewals confirmed
	)
	trace := &locktrace.Trace{Renewal: func(ri locktrace.RenewalInfo) {
		if ri.Err == nil {
			renewed.Add(1)
		}
	}}
	mc := clientWith(t, m.Addr(), func(ctx context.Context, network, addr string) (net.Conn, error) {
		if untrust.Load() {
			refusals.Add(1)
			return untrusted(ctx, network, addr)
		}
		return trusted(ctx, network, addr)
	})
	admin := clientWith(t, m.Addr(), trusted)
	markFresh(t, admin, keyPrefix+"rotated")
	l := newLock(t, mc, "rotated", memcachedlock.WithoutEvictionCheck(), memcachedlock.WithTTL(10*time.Second),
		memcachedlock.WithKeyPrefix(keyPrefix), memcachedlock.WithTrace(trace))
	lease, err := l.Acquire(ctxT(t))
	require.NoError(t, err)

	untrust.Store(true)
	require.NoError(t, mc.Close()) // its idle connections: the next request dials
	require.Eventually(t, func() bool { return refusals.Load() >= 3 || lease.Err() != nil }, waitLimit, time.Millisecond,
		"the renewal dials, is refused, and tries again")
	assert.NoError(t, lease.Err(), "a refused certificate does not end the lease")
	before := renewed.Load()
	untrust.Store(false)
	require.Eventually(t, func() bool { return renewed.Load() > before }, waitLimit, time.Millisecond,
		"renewed once a try got through")
	assert.NoError(t, lease.Err())
	require.NoError(t, lease.Release(ctxT(t)))
}
