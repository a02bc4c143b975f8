// Package redlock is the lock contract of recipes over N independent Redis
// servers, as the Redlock algorithm describes: a lock is held when a
// majority of the servers took it within its validity. It has no fencing
// token: Lease.Token says so, (0, false).
//
//	servers := []redlock.Redis{redis.NewClient(...), redis.NewClient(...), redis.NewClient(...)}
//	l, _ := redlock.New(servers, "orders", redlock.WithTTL(10*time.Second))
//	lease, err := l.Acquire(ctx)
//
// # How it works
//
// Acquire sends SET key id NX PX ttl to every server at once, each bounded
// by a short per-server timeout (WithServerTimeout). It holds the lock when
// a majority took it and less than the TTL less the margin has passed
// since it started; otherwise it releases what it took, everywhere, and
// tries again after a random delay (no wake-up across independent servers:
// waiters are not served in order). A watchdog extends the lock on every
// server every third of the TTL, and an extension counts only when a
// majority confirms it; Release deletes the key where it is still ours.
//
// # When the holder is told
//
// As for redislock: the lease's context is cancelled, with a cause that is
// recipes.ErrLockLost, recipes.DriftMargin(ttl) before the TTL counted from
// the start of the last acquisition or extension a majority confirmed,
// when a majority no longer has it, or on a failed extension.
//
// # No fencing token
//
// There is no single order of writes across independent servers, so no
// number that orders the holders. Kleppmann ("How to do distributed
// locking", 2016): a lock without a fencing token cannot protect storage
// from a holder delayed by a pause or the network, and Redlock's safety
// rests on bounded clock drift, pauses and network delay. Antirez ("Is
// Redlock safe?", 2016): the algorithm assumes bounded drift on purpose,
// and a resource that needs fencing can use the lock's random value as a
// compare-and-set key instead of a counter. Use redislock (one server, with
// tokens) or ZooKeeper when you need to fence.
package redlock

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"github.com/zkrecipes/zkrecipes/compat/internal/ttl"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// Redis is what the lock needs of each server's go-redis client;
// *redis.Client has it.
type Redis interface {
	redis.Scripter
	SetNX(ctx context.Context, key string, value any, expiration time.Duration) *redis.BoolCmd
}

// Named defaults and limits.
const (
	// DefaultTTL is how long the lock outlives a holder that stops
	// renewing it.
	DefaultTTL = 10 * time.Second
	// MinTTL is the shortest TTL allowed.
	MinTTL = 50 * time.Millisecond
	// DefaultRetryDelay bounds the random delay between two attempts
	// (from a tenth of it up to it).
	DefaultRetryDelay = 50 * time.Millisecond
)

// DefaultServerTimeout is the per-server timeout for a TTL: 1% of it, at
// least 5ms and at most 400ms (the Redlock description: a few tens of
// milliseconds for a TTL of ten seconds).
func DefaultServerTimeout(ttl time.Duration) time.Duration {
	return min(max(ttl/100, 5*time.Millisecond), 400*time.Millisecond)
}

// Lock is a lock on one name over N servers.
type Lock struct {
	servers []Redis
	name    string
	key     string
	o       options
	terms   ttl.Terms // of its leases
}

var _ recipes.Locker = (*Lock)(nil)

// Option configures New.
type Option func(*options)

type options struct {
	ttl, serverTimeout, retryDelay time.Duration
}

// WithTTL sets how long the lock outlives a holder that stops renewing it
// (default DefaultTTL, at least MinTTL).
func WithTTL(d time.Duration) Option { return func(o *options) { o.ttl = d } }

// WithServerTimeout bounds each server's answer (default
// DefaultServerTimeout(ttl)); it must be well under the TTL.
func WithServerTimeout(d time.Duration) Option { return func(o *options) { o.serverTimeout = d } }

// WithRetryDelay bounds the random delay between attempts (default
// DefaultRetryDelay).
func WithRetryDelay(d time.Duration) Option { return func(o *options) { o.retryDelay = d } }

// New returns the lock named name (key "{name}") over servers, which must
// be independent (not replicas of each other). No I/O is done.
func New(servers []Redis, name string, opts ...Option) (*Lock, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("redlock: %w: "+format, append([]any{recipes.ErrInvalidArgument}, args...)...)
	}
	switch {
	case len(servers) == 0:
		return nil, bad("no servers")
	case name == "":
		return nil, bad("empty lock name")
	case strings.ContainsAny(name, "{}"):
		return nil, bad("lock name %q: braces would break its hash tag", name)
	}
	for i, s := range servers {
		if s == nil {
			return nil, bad("server %d is nil", i)
		}
	}
	o := options{ttl: DefaultTTL, retryDelay: DefaultRetryDelay}
	for _, opt := range opts {
		if opt == nil {
			return nil, bad("nil Option")
		}
		opt(&o)
	}
	if o.serverTimeout == 0 {
		o.serverTimeout = DefaultServerTimeout(o.ttl)
	}
	switch {
	case o.ttl < MinTTL:
		return nil, bad("TTL %v: must be at least %v, to leave room for the margin and renewals", o.ttl, MinTTL)
	case o.serverTimeout <= 0 || o.serverTimeout >= o.ttl/3:
		return nil, bad("server timeout %v: must be positive and under a third of the TTL %v", o.serverTimeout, o.ttl)
	case o.retryDelay <= 0:
		return nil, bad("retry delay %v must be positive", o.retryDelay)
	}
	return &Lock{servers: servers, name: name, key: "{" + name + "}", o: o,
		terms: ttl.NewTerms(o.ttl, o.ttl-recipes.DriftMargin(o.ttl), "redlock "+name)}, nil
}

// Name is the lock's name.
func (l *Lock) Name() string { return l.name }

// quorum is the majority of the servers.
func (l *Lock) quorum() int { return len(l.servers)/2 + 1 }

// Acquire waits until a majority of the servers give the lock within its
// validity, ctx ends (an error that is recipes.ErrNotAcquired and ctx's;
// what was taken is released everywhere) or the call fails. With a
// context from a live lease of this Lock it re-enters at once. It is NOT
// safe to assume the lock is held until Release: do the work with the
// lease's context, which is cancelled before the servers can let the lock
// go (see the package doc).
func (l *Lock) Acquire(ctx context.Context) (recipes.Lease, error) { return l.acquire(ctx, true) }

// TryAcquire makes one attempt; when no majority gave the lock it returns
// an error that is recipes.ErrLocked (and recipes.ErrNotAcquired).
func (l *Lock) TryAcquire(ctx context.Context) (recipes.Lease, error) { return l.acquire(ctx, false) }

func (l *Lock) acquire(ctx context.Context, wait bool) (recipes.Lease, error) {
	if le, err := ttl.Begin(ctx, l); err != nil {
		return nil, err
	} else if le != nil {
		return le, nil
	}
	id := uuid.NewString()
	for {
		start := time.Now()
		took := l.each(ctx, func(ctx context.Context, r Redis) (bool, error) {
			return r.SetNX(ctx, l.key, id, l.o.ttl).Result()
		})
		if took >= l.quorum() {
			le, err := ttl.Hold(ctx, l, 0, false, start, l.terms, server{l, id})
			if err == nil {
				return le, nil
			}
			// Taken too late to be valid: Hold released it. Try again.
		} else {
			l.free(ctx, id)
		}
		switch {
		case ctx.Err() != nil:
			return nil, recipes.NotAcquired(ctx)
		case !wait:
			return nil, fmt.Errorf("%w: redlock %s: %d of %d servers gave it, %d needed", recipes.ErrLocked, l.name,
				took, len(l.servers), l.quorum())
		}
		d := l.o.retryDelay
		if !ttl.Sleep(ctx, d/10+time.Duration(rand.Int64N(int64(d-d/10)+1))) {
			return nil, recipes.NotAcquired(ctx)
		}
	}
}

// each runs op on every server at once, each bounded by the server
// timeout, and returns how many said true.
func (l *Lock) each(ctx context.Context, op func(context.Context, Redis) (bool, error)) int {
	var wg sync.WaitGroup
	var mu sync.Mutex
	n := 0
	for _, s := range l.servers {
		wg.Go(func() {
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.o.serverTimeout)
			defer cancel()
			if ok, err := op(sctx, s); ok && err == nil {
				mu.Lock()
				n++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return n
}

// free deletes the key wherever it is still id's.
func (l *Lock) free(ctx context.Context, id string) int {
	return l.each(ctx, func(ctx context.Context, r Redis) (bool, error) {
		n, err := releaseScript.Run(ctx, r, []string{l.key}, id).Int64()
		return n == 1, err
	})
}

// releaseScript deletes KEYS[1] if ARGV[1] holds it.
var releaseScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
return redis.call('DEL', KEYS[1])
`)

// extendScript extends KEYS[1] to ARGV[2] ms if ARGV[1] holds it.
var extendScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
return redis.call('PEXPIRE', KEYS[1], ARGV[2])
`)

// server is a holding's lock on the servers.
type server struct {
	l  *Lock
	id string
}

// Renew extends the lock everywhere; it counts only with a majority.
func (s server) Renew(ctx context.Context) error {
	n := s.l.each(ctx, func(ctx context.Context, r Redis) (bool, error) {
		v, err := extendScript.Run(ctx, r, []string{s.l.key}, s.id, s.l.o.ttl.Milliseconds()).Int64()
		return v == 1, err
	})
	if n < s.l.quorum() {
		return fmt.Errorf("%w: %d of %d servers extended it, %d needed", ttl.ErrNotOurs, n, len(s.l.servers), s.l.quorum())
	}
	return nil
}

// Free releases the lock everywhere; ErrNotOurs when no majority had it.
func (s server) Free(ctx context.Context) error {
	if n := s.l.free(ctx, s.id); n < s.l.quorum() {
		return fmt.Errorf("%w: it was ours on %d of %d servers", ttl.ErrNotOurs, n, len(s.l.servers))
	}
	return nil
}
