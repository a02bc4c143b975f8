// Package memcachedlock is the lock contract of recipes on one memcached
// server, for services that have nothing else. A program that uses it
// links neither ZooKeeper nor go-redis.
//
//	l, _ := memcachedlock.New(memcache.New("127.0.0.1:11211"), "orders", memcachedlock.WithTTL(10*time.Second))
//	lease, err := l.Acquire(ctx)
//
// # How it works
//
// Acquire adds the lock item (add: only if absent) with a TTL in whole
// seconds, then reads it back for its CAS value: two round trips. When
// another holds it, the waiter polls with exponential backoff and jitter,
// up to MaxPoll apart (memcached has no notification), so waiting is not
// fair. The holder renews by compare-and-swap with the CAS it holds, every
// third of the time it trusts the lock (the TTL less a second and the
// margin), and Release deletes by compare-and-swap with an expiry of -1
// (the item expires at once): atomic, so it never deletes an item someone
// else now holds, as the common get-then-delete does.
//
// # Tokens
//
// The fencing token is the lock item's CAS value at acquisition. memcached
// keeps one CAS counter per server process, shared by every key: it grows
// across all keys and survives eviction, so a later holder's token is
// always higher. A cold restart of memcached resets it: after one, tokens
// start low again, and a fenced resource refuses the new holders' writes
// (safe, but stuck until it forgets the old token). A warm restart keeps it.
//
// # When the holder is told
//
// memcached counts TTLs in whole seconds on a clock that ticks once a
// second, so an item may expire up to a second early. The lease ends, with
// a cause that is recipes.ErrLockLost, a second plus
// recipes.DriftMargin(ttl) before the TTL counted from the send time of the
// last confirmed add or renewal, when a renewal finds the item gone or
// someone else's (evicted, deleted, a restart), or on any renewal error.
package memcachedlock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
	"github.com/google/uuid"
	"github.com/zkrecipes/zkrecipes/compat/internal/ttl"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// Memcached is what the lock needs of a gomemcache client; *memcache.Client
// has it. Its calls take no context: the lock abandons a call whose context
// ended, and cleans up after it.
type Memcached interface {
	Add(item *memcache.Item) error
	Get(key string) (*memcache.Item, error)
	CompareAndSwap(item *memcache.Item) error
}

// Named defaults and limits.
const (
	// DefaultTTL is how long the lock outlives a holder that stops renewing
	// it.
	DefaultTTL = 10 * time.Second
	// MinTTL is the shortest TTL: memcached counts whole seconds and may
	// expire an item a second early, so a lease is trusted for the TTL less
	// a second (and the margin).
	MinTTL = 2 * time.Second
	// MaxPoll is the longest wait between two tries of a waiter.
	MaxPoll = 100 * time.Millisecond
	// firstPoll is the first wait, doubled at each try up to MaxPoll.
	firstPoll = 2 * time.Millisecond
	// abandonTimeout bounds the clean-up after an abandoned call.
	abandonTimeout = 5 * time.Second
)

// Lock is a lock on one key of one memcached.
type Lock struct {
	mc    Memcached
	key   string
	ttl   time.Duration
	terms ttl.Terms // of its leases
}

var _ recipes.Locker = (*Lock)(nil)

// Option configures New.
type Option func(*options)

type options struct{ ttl time.Duration }

// WithTTL sets how long the lock outlives a holder that stops renewing it:
// whole seconds, at least MinTTL (default DefaultTTL).
func WithTTL(d time.Duration) Option { return func(o *options) { o.ttl = d } }

// New returns the lock whose item is key. No I/O is done.
func New(mc Memcached, key string, opts ...Option) (*Lock, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("memcachedlock: %w: "+format, append([]any{recipes.ErrInvalidArgument}, args...)...)
	}
	switch {
	case mc == nil:
		return nil, bad("nil memcached client")
	case key == "" || len(key) > 250:
		return nil, bad("key %q: must be 1 to 250 bytes", key)
	}
	for _, r := range key {
		if r <= ' ' || r == 0x7f {
			return nil, bad("key %q: no spaces or control characters in a memcached key", key)
		}
	}
	o := options{ttl: DefaultTTL}
	for _, opt := range opts {
		if opt == nil {
			return nil, bad("nil Option")
		}
		opt(&o)
	}
	switch {
	case o.ttl < MinTTL:
		return nil, bad("TTL %v: must be at least %v (memcached counts whole seconds, and may expire an item a second early)", o.ttl, MinTTL)
	case o.ttl%time.Second != 0:
		return nil, bad("TTL %v: memcached counts whole seconds", o.ttl)
	case o.ttl > 30*24*time.Hour:
		return nil, bad("TTL %v: memcached takes more than 30 days as a date", o.ttl)
	}
	// Trusted a second less: memcached may expire an item up to a second
	// early (it counts whole seconds on a clock that ticks once a second).
	valid := o.ttl - time.Second - recipes.DriftMargin(o.ttl)
	return &Lock{mc: mc, key: key, ttl: o.ttl, terms: ttl.NewTerms(o.ttl, valid, "memcached lock "+key)}, nil
}

// Key is the lock's item key.
func (l *Lock) Key() string { return l.key }

// Acquire waits until the lock is held (polling, see the package doc), ctx
// ends (an error that is recipes.ErrNotAcquired and ctx's; nothing is left
// in memcached) or a call fails. With a context from a live lease of this
// Lock it re-enters at once. It is NOT safe to assume the lock is held
// until Release: do the work with the lease's context, and fence writes
// with its token.
func (l *Lock) Acquire(ctx context.Context) (recipes.Lease, error) { return l.acquire(ctx, true) }

// TryAcquire takes the lock if it is free now, and otherwise returns an
// error that is recipes.ErrLocked at once.
func (l *Lock) TryAcquire(ctx context.Context) (recipes.Lease, error) { return l.acquire(ctx, false) }

func (l *Lock) acquire(ctx context.Context, wait bool) (recipes.Lease, error) {
	if le, err := ttl.Begin(ctx, l); err != nil {
		return nil, err
	} else if le != nil {
		return le, nil
	}
	id := []byte(uuid.NewString())
	poll := firstPoll
	for {
		sent := time.Now()
		cas, err := l.add(ctx, id)
		switch {
		case err == nil:
			le, err := ttl.Hold(ctx, l, int64(cas), true, sent, l.terms, &server{l: l, id: id, cas: cas})
			if err != nil {
				return nil, err
			}
			return le, nil
		case ctx.Err() != nil:
			return nil, recipes.NotAcquired(ctx)
		case !errors.Is(err, memcache.ErrNotStored):
			if !wait {
				return nil, fmt.Errorf("%w: memcached lock %s: %w", recipes.ErrNotAcquired, l.key, err)
			}
		case !wait:
			return nil, fmt.Errorf("%w: memcached lock %s", recipes.ErrLocked, l.key)
		}
		if !ttl.Sleep(ctx, ttl.Jitter(poll)) {
			return nil, recipes.NotAcquired(ctx)
		}
		poll = min(2*poll, MaxPoll)
	}
}

// add adds the lock item with value id and returns its CAS: the token.
// memcache.ErrNotStored: someone holds it. A call abandoned because ctx
// ended is settled in the background: an item it added is deleted.
func (l *Lock) add(ctx context.Context, id []byte) (uint64, error) {
	type result struct {
		cas uint64
		err error
	}
	res := make(chan result, 1)
	go func() {
		err := l.mc.Add(&memcache.Item{Key: l.key, Value: id, Expiration: int32(l.ttl / time.Second)})
		if err != nil {
			res <- result{err: err}
			return
		}
		it, err := l.mc.Get(l.key)
		switch {
		case err != nil:
			res <- result{err: fmt.Errorf("read back after add: %w", err)}
		case string(it.Value) != string(id):
			res <- result{err: fmt.Errorf("read back after add: %w", memcache.ErrNotStored)} // expired and taken already
		default:
			res <- result{cas: it.CasID}
		}
	}()
	select {
	case r := <-res:
		if r.err != nil && !errors.Is(r.err, memcache.ErrNotStored) {
			go l.deleteIfOurs(id) // the add may have landed
		}
		return r.cas, r.err
	case <-ctx.Done():
		go func() {
			if r := <-res; !errors.Is(r.err, memcache.ErrNotStored) {
				l.deleteIfOurs(id)
			}
		}()
		return 0, ctx.Err()
	}
}

// deleteIfOurs deletes the lock item if its value is id, by
// compare-and-swap: never another holder's.
func (l *Lock) deleteIfOurs(id []byte) {
	deadline := time.Now().Add(abandonTimeout)
	for time.Now().Before(deadline) {
		it, err := l.mc.Get(l.key)
		if err != nil || string(it.Value) != string(id) {
			return
		}
		err = l.mc.CompareAndSwap(&memcache.Item{Key: l.key, Expiration: -1, CasID: it.CasID})
		if !errors.Is(err, memcache.ErrCASConflict) {
			return
		}
	}
}
