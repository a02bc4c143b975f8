package redislock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"github.com/zkrecipes/zkrecipes/compat/internal/grants"
	"github.com/zkrecipes/zkrecipes/compat/internal/redisguard"
	"github.com/zkrecipes/zkrecipes/compat/internal/ttl"
	"github.com/zkrecipes/zkrecipes/internal/hold"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// Redis is what the locks need of a go-redis client: scripts, and one
// subscription for the waiters. *redis.Client and *redis.ClusterClient have
// it.
type Redis interface {
	redis.Scripter
	Subscribe(ctx context.Context, channels ...string) *redis.PubSub
}

// Named defaults and limits.
const (
	// DefaultTTL is how long a lock outlives a holder that stops renewing
	// it (a crash, a partition).
	DefaultTTL = 10 * time.Second
	// MinTTL is the shortest TTL allowed: it must leave room for the margin
	// (recipes.DriftMargin) and for a renewal every third of it.
	MinTTL = 50 * time.Millisecond
	// MaxTTL is the longest TTL allowed: 30 days.
	MaxTTL = ttl.MaxTTL
)

// Client shares one Redis subscription among the waiters of every lock made
// from it: a channel of its own, on which releases tell its waiters that
// the lock is theirs. The subscription holds one connection, and a
// goroutine reading it, from the first wait until Close: close it when
// done. A grant that never arrives (a connection that died silently) costs
// time, not safety: the waiter's timer wakes it within the holder's TTL.
//
// The keys, the scripts and the grant messages are this package's version's
// own: processes that share a lock must run the same version of it.
type Client struct {
	r       Redis
	sub     *subscriber
	checked redisguard.Once // the server's eviction settings, at first use
}

// NewClient returns a Client over r. No I/O is done until a lock is used.
func NewClient(r Redis) (*Client, error) {
	if ttl.IsNil(r) {
		return nil, fmt.Errorf("redislock: %w: nil Redis client", recipes.ErrInvalidArgument)
	}
	return &Client{r: r, sub: newSubscriber(r)}, nil
}

// Close ends the subscription; waiters still waiting go on with their
// timers alone.
func (c *Client) Close() error { return c.sub.close() }

// Lock is a lock on one name in one Redis.
type Lock struct {
	c         *Client
	name      string
	trace     *recipes.Trace
	keys      []string // lock, fence, queue, waiters, quiet
	renewKeys []string // lock, quiet
	ttl       time.Duration
	terms     ttl.Terms // of its leases
	check     bool      // the server's eviction settings, at first use
}

var _ recipes.Locker = (*Lock)(nil)

// Option configures New.
type Option func(*options)

type options struct {
	ttl     time.Duration
	noCheck bool
	trace   *recipes.Trace
}

// WithTTL sets how long the lock outlives a holder that stops renewing it
// (default DefaultTTL, from MinTTL to MaxTTL). The holder
// renews it every third of it, and its lease ends
// recipes.DriftMargin(ttl) before the TTL counted from the last confirmed
// request. Processes that share a lock must use the same TTL: a server
// that restarted waits this TTL before it grants again.
func WithTTL(d time.Duration) Option { return func(o *options) { o.ttl = d } }

// WithoutEvictionCheck skips the check, at the first use of the Client's
// server, that Redis cannot evict the lock's keys (maxmemory 0, or
// maxmemory-policy noeviction). Use it where the server refuses INFO and
// you know the setting, or to accept the risk: with eviction possible,
// Redis may delete a held lock under memory pressure and grant it to
// another client while its holder still trusts its lease (until its next
// renewal, a third of the TTL later), and the queue of waiters may be lost.
func WithoutEvictionCheck() Option { return func(o *options) { o.noCheck = true } }

// New returns the lock named name. Its keys are "{name}", "{name}:fence",
// "{name}:queue", "{name}:waiters" and "{name}:quiet" (one hash tag: one
// slot of a Redis Cluster; the last marks the server's quiet period after
// a restart, and outlives the lock's last use by a day). No I/O is done.
func New(c *Client, name string, opts ...Option) (*Lock, error) {
	switch {
	case c == nil:
		return nil, fmt.Errorf("redislock: %w: nil Client (make one with NewClient)", recipes.ErrInvalidArgument)
	case name == "":
		return nil, fmt.Errorf("redislock: %w: empty lock name", recipes.ErrInvalidArgument)
	case strings.ContainsAny(name, "{}"):
		return nil, fmt.Errorf("redislock: %w: lock name %q: braces would break its hash tag", recipes.ErrInvalidArgument, name)
	}
	o := options{ttl: DefaultTTL}
	for _, opt := range opts {
		if opt == nil {
			return nil, fmt.Errorf("redislock: %w: nil Option", recipes.ErrInvalidArgument)
		}
		opt(&o)
	}
	if o.ttl < MinTTL || o.ttl > MaxTTL {
		return nil, fmt.Errorf("redislock: %w: TTL %v: must be from %v (room for the margin and renewals) to %v",
			recipes.ErrInvalidArgument, o.ttl, MinTTL, MaxTTL)
	}
	tag := "{" + name + "}"
	l := &Lock{c: c, name: name, ttl: o.ttl, check: !o.noCheck, trace: o.trace,
		keys:      []string{tag, tag + ":fence", tag + ":queue", tag + ":waiters", tag + ":quiet"},
		renewKeys: []string{tag, tag + ":quiet"},
	}
	l.terms = ttl.NewTerms(o.ttl, o.ttl-recipes.DriftMargin(o.ttl), l.String())
	return l, nil
}

// Name is the lock's name.
func (l *Lock) Name() string { return l.name }

// Acquire waits until the lock is held, ctx ends (an error that is
// recipes.ErrNotAcquired and ctx's error; nothing is left in Redis) or
// fails. Waiters are served in the order they first queued (FIFO): the
// holder's release hands the lock to the first waiter still alive and tells
// it through the Client's subscription; a timer from the holder's remaining
// TTL (with jitter) covers a lost message or a crashed holder. With a
// context from a live lease of this Lock it re-enters at once.
//
// The lease's context is cancelled, with a cause that is
// recipes.ErrLockLost, recipes.DriftMargin(ttl) before the TTL counted from
// the send time of the last confirmed request (acquire or renewal) would
// let the lock go, when a renewal finds the lock gone or someone else's, or
// on any renewal error: before anyone else can be granted the lock. It is
// NOT safe to assume the lock is held until Release: do the work with the
// lease's context, and fence writes with its token.
func (l *Lock) Acquire(ctx context.Context) (recipes.Lease, error) { return l.acquire(ctx, true) }

// TryAcquire takes the lock if it is free now and no one waits for it, and
// otherwise returns an error that is recipes.ErrLocked at once.
func (l *Lock) TryAcquire(ctx context.Context) (recipes.Lease, error) { return l.acquire(ctx, false) }

func (l *Lock) acquire(ctx context.Context, wait bool) (recipes.Lease, error) {
	return ttl.Acquire(ctx, l, l.trace, recipes.LockID{Backend: "redis", Kind: "lock", Name: l.name}, !wait,
		func(a *hold.Acquisition) (recipes.Lease, error) {
			w := waiting{l: l, id: uuid.NewString(), wait: wait, a: a}
			return w.run(ctx)
		})
}

// outcome is what an attempt found.
type outcome struct {
	acquired bool
	token    int64         // when acquired
	quiet    bool          // free, but the server may have forgotten its holder
	wait     time.Duration // the holder's remaining TTL, or the quiet period's
}

// attempt runs the acquire script once (after the eviction check, at the
// Client's first use). sent is when it is sent: a grant made after it may
// be trusted from then (stamp). Errors that trying again cannot mend are
// marked ttl.ErrPermanent.
func (l *Lock) attempt(ctx context.Context, id string, queue bool, sent time.Time) (outcome, error) {
	if l.check {
		err := l.c.checked.Check(func() error { return redisguard.Check(ctx, l.c.r, "redislock.WithoutEvictionCheck()") })
		if errors.Is(err, redisguard.ErrEviction) {
			return outcome{}, ttl.Permanent(err)
		}
		if err != nil {
			return outcome{}, redisguard.Permanent(err)
		}
	}
	q := "0"
	if queue {
		q = "1"
	}
	res, err := acquireScript.Run(ctx, l.c.r, l.keys, id, l.ttl.Milliseconds(), q, l.waitTTL().Milliseconds(),
		l.c.sub.channel, grants.Stamp(sent)).Int64Slice()
	if err != nil {
		return outcome{}, redisguard.Permanent(err)
	}
	if len(res) != 2 {
		return outcome{}, ttl.Permanent(fmt.Errorf("redislock: acquire script answered %v", res))
	}
	wait := time.Duration(res[1]) * time.Millisecond
	switch res[0] {
	case 1:
		return outcome{acquired: true, token: res[1]}, nil
	case 2:
		return outcome{quiet: true, wait: wait}, nil
	}
	return outcome{wait: wait}, nil
}

// waitTTL is how long a waiter's queue entry lives without a refresh: a
// waiter refreshes it at least every TTL (its timer), so a waiter that
// crashed is skipped after three.
func (l *Lock) waitTTL() time.Duration { return 3 * l.ttl }

// hold turns an acquisition sent at sent into a lease.
func (l *Lock) hold(ctx context.Context, id string, token int64, sent time.Time) (*hold.Lease, error) {
	return ttl.Hold(ctx, l, token, true, sent, l.terms, server{l, id})
}

// server is a holding's lock in Redis.
type server struct {
	l  *Lock
	id string
}

func (s server) Renew(ctx context.Context) error {
	n, err := renewScript.Run(ctx, s.l.c.r, s.l.renewKeys, s.id, s.l.ttl.Milliseconds()).Int64()
	if err == nil && n == 0 {
		return ttl.ErrNotOurs
	}
	return redisguard.Permanent(err)
}

func (s server) Free(ctx context.Context) error {
	n, err := releaseScript.Run(ctx, s.l.c.r, s.l.keys, s.id).Int64()
	if err == nil && n == 0 {
		return ttl.ErrNotOurs
	}
	return redisguard.Permanent(err)
}

// cancel takes a waiter that gives up out of the queue, and releases the
// lock if it was handed to it meanwhile, in the background (bounded,
// whatever ctx says), so that the caller returns at once: its queue entry
// would expire by itself, and a lock handed to it by its TTL.
func (l *Lock) cancel(ctx context.Context, id string) {
	go func() {
		cctx, stop := context.WithTimeout(context.WithoutCancel(ctx), cancelTimeout)
		defer stop()
		_ = cancelScript.Run(cctx, l.c.r, l.keys, id).Err()
	}()
}

// Bounds of the wait.
const (
	cancelTimeout = 5 * time.Second
	// retryBase and retryCap bound the backoff after a Redis error.
	retryBase = 50 * time.Millisecond
	retryCap  = 2 * time.Second
)

// errRedis wraps a Redis error of Acquire.
func errRedis(what string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("redislock: %s: %w", what, err)
}

// WithTrace reports the lock's acquisitions, leases and renewals to t (see
// recipes.Trace); a trace in an Acquire's context is called too.
func WithTrace(t *recipes.Trace) Option { return func(o *options) { o.trace = t } }
