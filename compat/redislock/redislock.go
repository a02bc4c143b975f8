package redislock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"github.com/zkrecipes/zkrecipes/compat/internal/ttl"
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
	r   Redis
	sub *subscriber
}

// NewClient returns a Client over r. No I/O is done until a lock waits.
func NewClient(r Redis) (*Client, error) {
	if r == nil {
		return nil, fmt.Errorf("redislock: %w: nil Redis client", recipes.ErrInvalidArgument)
	}
	return &Client{r: r, sub: newSubscriber(r)}, nil
}

// Close ends the subscription; waiters still waiting go on with their
// timers alone.
func (c *Client) Close() error { return c.sub.close() }

// Lock is a lock on one name in one Redis.
type Lock struct {
	c     *Client
	name  string
	keys  []string
	ttl   time.Duration
	terms ttl.Terms // of its leases
}

var _ recipes.Locker = (*Lock)(nil)

// Option configures New.
type Option func(*options)

type options struct{ ttl time.Duration }

// WithTTL sets how long the lock outlives a holder that stops renewing it
// (default DefaultTTL, at least MinTTL). The holder renews it every third
// of it, and its lease ends recipes.DriftMargin(ttl) before the TTL counted
// from the last confirmed request.
func WithTTL(d time.Duration) Option { return func(o *options) { o.ttl = d } }

// New returns the lock named name. Its keys are "{name}", "{name}:fence",
// "{name}:queue" and "{name}:waiters" (one hash tag: one slot of a Redis
// Cluster). No I/O is done.
func New(c *Client, name string, opts ...Option) (*Lock, error) {
	switch {
	case c == nil:
		return nil, fmt.Errorf("redislock: %w: nil Client", recipes.ErrInvalidArgument)
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
	if o.ttl < MinTTL {
		return nil, fmt.Errorf("redislock: %w: TTL %v: must be at least %v, to leave room for the margin and renewals",
			recipes.ErrInvalidArgument, o.ttl, MinTTL)
	}
	tag := "{" + name + "}"
	return &Lock{c: c, name: name, ttl: o.ttl, keys: []string{tag, tag + ":fence", tag + ":queue", tag + ":waiters"},
		terms: ttl.NewTerms(o.ttl, o.ttl-recipes.DriftMargin(o.ttl), "redis lock "+name)}, nil
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
	if le, err := ttl.Begin(ctx, l); err != nil {
		return nil, err
	} else if le != nil {
		return le, nil
	}
	id := uuid.NewString()
	w := waiting{l: l, id: id, wait: wait}
	le, err := w.run(ctx)
	if err != nil {
		return nil, err // not a typed nil in the interface
	}
	return le, nil
}

// attempt runs the acquire script once: acquired with its token, or the
// holder's remaining TTL.
// sent is when it is sent: a grant made after it may be trusted from
// then (stamp).
func (l *Lock) attempt(ctx context.Context, id string, queue bool, sent time.Time) (acquired bool, token int64, pttl time.Duration, err error) {
	q := "0"
	if queue {
		q = "1"
	}
	res, err := acquireScript.Run(ctx, l.c.r, l.keys, id, l.ttl.Milliseconds(), q, l.waitTTL().Milliseconds(),
		l.c.sub.channel, stamp(sent)).Int64Slice()
	if err != nil {
		return false, 0, 0, err
	}
	if len(res) != 2 {
		return false, 0, 0, fmt.Errorf("redislock: acquire script answered %v", res)
	}
	if res[0] == 1 {
		return true, res[1], 0, nil
	}
	return false, 0, time.Duration(res[1]) * time.Millisecond, nil
}

// epoch is the origin of the stamps: the monotonic clock's reading,
// as a number that a script can keep and publish.
var epoch = time.Now()

func stamp(t time.Time) int64 { return int64(t.Sub(epoch)) }

func unstamp(n int64) time.Time { return epoch.Add(time.Duration(n)) }

// waitTTL is how long a waiter's queue entry lives without a refresh: a
// waiter refreshes it at least every TTL (its timer), so a waiter that
// crashed is skipped after three.
func (l *Lock) waitTTL() time.Duration { return 3 * l.ttl }

// hold turns an acquisition sent at sent into a lease.
func (l *Lock) hold(ctx context.Context, id string, token int64, sent time.Time) (*recipes.HeldLease, error) {
	return ttl.Hold(ctx, l, token, true, sent, l.terms, server{l, id})
}

// server is a holding's lock in Redis.
type server struct {
	l  *Lock
	id string
}

func (s server) Renew(ctx context.Context) error {
	n, err := renewScript.Run(ctx, s.l.c.r, s.l.keys[:1], s.id, s.l.ttl.Milliseconds()).Int64()
	if err == nil && n == 0 {
		return ttl.ErrNotOurs
	}
	return err
}

func (s server) Free(ctx context.Context) error {
	n, err := releaseScript.Run(ctx, s.l.c.r, s.l.keys, s.id).Int64()
	if err == nil && n == 0 {
		return ttl.ErrNotOurs
	}
	return err
}

// cancel takes a waiter that gives up out of the queue, and releases the
// lock if it was handed to it meanwhile, bounded, whatever ctx says.
func (l *Lock) cancel(ctx context.Context, id string) error {
	cctx, stop := context.WithTimeout(context.WithoutCancel(ctx), cancelTimeout)
	defer stop()
	return cancelScript.Run(cctx, l.c.r, l.keys, id).Err()
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
