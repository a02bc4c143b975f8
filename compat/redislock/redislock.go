package redislock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"github.com/zkrecipes/zkrecipes/compat/internal/grants"
	"github.com/zkrecipes/zkrecipes/compat/internal/redisguard"
	"github.com/zkrecipes/zkrecipes/compat/internal/ttl"
	"github.com/zkrecipes/zkrecipes/internal/hold"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/locktrace"
)

// Redis is what the locks need of a go-redis client: scripts, and
// subscriptions for the waiters. *redis.Client (also from
// redis.NewFailoverClient, for Sentinel) and *redis.ClusterClient have it.
type Redis interface {
	redis.Scripter
	Subscribe(ctx context.Context, channels ...string) *redis.PubSub
	SSubscribe(ctx context.Context, channels ...string) *redis.PubSub
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
// the lock is theirs (under the Client's key prefix, see WithKeyPrefix). The subscription holds one
// connection, and a goroutine reading it, from the first wait until
// Close: close it when done (Close also waits for the Client's clean-ups
// in the background, so that a process that closes it before it exits
// leaves nothing in Redis). A grant that never arrives (a connection
// that died silently) costs time, not safety: the waiter's timer wakes it
// within the holder's TTL.
//
// Over a *redis.ClusterClient the grants are sharded (SPUBLISH and
// SSUBSCRIBE, Redis 7.0 or later): the channel of a lock is in the lock's
// slot and served by that slot's shard alone, where a classic PUBLISH
// would cross the cluster bus to every node. The Client then has one
// subscription (one connection) per slot its waiters wait in, and moves it
// when its slot moves to another shard.
//
// The keys, the scripts and the grant messages are this package's version's
// own: processes that share a lock must run the same version of it.
type Client struct {
	r       Redis
	id      string // of its grant channels
	sharded bool
	prefix  string          // of its locks' keys and channels (WithKeyPrefix)
	noCheck bool            // WithoutEvictionCheck
	checked redisguard.Once // the server's eviction settings, at first use
	bg      ttl.Pending     // clean-ups in the background, waited for by Close

	mu     sync.Mutex
	subs   map[string]*subscriber // by channel
	closed bool
}

// ClientOption configures NewClient.
type ClientOption func(*clientOptions)

type clientOptions struct {
	noCheck bool
	prefix  string
}

// NewClient returns a Client over r. No I/O is done until a lock is used.
func NewClient(r Redis, opts ...ClientOption) (*Client, error) {
	if ttl.IsNil(r) {
		return nil, fmt.Errorf("redislock: %w: nil Redis client", recipes.ErrInvalidArgument)
	}
	var o clientOptions
	for _, opt := range opts {
		if opt == nil {
			return nil, fmt.Errorf("redislock: %w: nil ClientOption", recipes.ErrInvalidArgument)
		}
		opt(&o)
	}
	if err := ValidKeyPrefix(o.prefix); err != nil {
		return nil, err
	}
	cc, sharded := r.(*redis.ClusterClient)
	if sharded && (cc.Options().ReadOnly || cc.Options().RouteByLatency || cc.Options().RouteRandomly) {
		// Its subscriptions would go to replicas, which a release's
		// count (PUBSUB SHARDNUMSUB, on the master) does not see.
		return nil, fmt.Errorf("redislock: %w: a ClusterClient with ReadOnly, RouteByLatency or RouteRandomly subscribes on replicas: use one without", recipes.ErrInvalidArgument)
	}
	return &Client{r: r, id: uuid.NewString(), sharded: sharded, prefix: o.prefix, noCheck: o.noCheck, subs: map[string]*subscriber{}}, nil
}

// channel is the grant channel of the Client's waiters on the lock whose
// key prefix is prefix and hash tag is tag, and the command that
// publishes on it. It starts with the prefix, so that an ACL that grants
// the prefix's channels grants it.
func (c *Client) channel(prefix, tag string) (channel, publish string) {
	const name = "zkrecipes:redislock:grants:"
	if !c.sharded {
		return prefix + name + c.id, "PUBLISH"
	}
	return prefix + "{" + slotTag(keySlot(tag)) + "}" + name + c.id, "SPUBLISH"
}

// subscription is the subscription to channel; once the Client is closed,
// a closed one (its waiters go on with their timers alone).
func (c *Client) subscription(channel string) *subscriber {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		s := newSubscriber(c.r, channel, c.sharded)
		s.board.Close()
		return s
	}
	s := c.subs[channel]
	if s == nil {
		s = newSubscriber(c.r, channel, c.sharded)
		c.subs[channel] = s
	}
	return s
}

// ErrClosed: the Client was closed (Close); its locks take the lock no
// more.
var ErrClosed = errors.New("redislock: the Client is closed")

// ErrQuiet: the Redis server restarted (or lost its data) less than a TTL
// ago, so it may have forgotten the lock's holder: it grants the lock to
// no one until the TTL has passed. TryAcquire's error is then
// recipes.ErrLocked and ErrQuiet (also recipes.ErrQuiet); Acquire waits.
var ErrQuiet = fmt.Errorf("%w: redislock: the server restarted less than a TTL ago and may have forgotten the lock's holder", recipes.ErrQuiet)

// isClosed says whether Close was called.
func (c *Client) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// Close ends the subscriptions (waiters still waiting go on with their
// timers alone; later Acquires and TryAcquires fail with an error that is
// recipes.ErrNotAcquired and ErrClosed), then waits for the Client's clean-ups that run in the
// background (a waiter's removal from a queue that failed when it gave
// up, a release tried again) for ttl.CloseWait at most, and stops those
// still running then: the server lets what they leave go at its TTL (a
// queue entry, three TTLs after it was last refreshed). Its error says
// how many it stopped. Close a Client before the process exits, so that
// nothing of it is left in Redis.
func (c *Client) Close() error {
	c.mu.Lock()
	c.closed = true
	subs := c.subs
	c.subs = map[string]*subscriber{}
	c.mu.Unlock()
	var errs []error
	for _, s := range subs {
		errs = append(errs, s.close())
	}
	ctx, cancel := context.WithTimeout(context.Background(), ttl.CloseWait)
	defer cancel()
	if err := c.bg.Wait(ctx); err != nil {
		errs = append(errs, fmt.Errorf("redislock: %w", err))
	}
	return errors.Join(errs...)
}

// Lock is a lock on one name in one Redis.
type Lock struct {
	c         *Client
	name      string
	prefix    string // of its keys and channel (WithKeyPrefix)
	trace     *locktrace.Trace
	keys      []string // lock, fence, queue, quiet
	renewKeys []string // lock, quiet
	channel   string   // its Client's grant channel for it
	publish   string   // the command that publishes there
	ttl       time.Duration
	terms     ttl.Terms // of its leases
	check     bool      // the server's eviction settings, at first use

	acks       int // replicas that must acknowledge its writes (WithReplicaAck)
	ackTimeout time.Duration

	// The acquire script's arguments that are the lock's own (its TTL and
	// its queue entries' in ms, publish, channel), boxed once: each
	// element of a request's []any made anew is an allocation.
	ttlArg, waitArg, publishArg, channelArg any
}

var _ recipes.Locker = (*Lock)(nil)

// Option configures New.
type Option func(*options)

type options struct {
	ttl   time.Duration
	trace *locktrace.Trace

	acks       int
	ackTimeout time.Duration
	ackSet     bool
}

// WithTTL sets how long the lock outlives a holder that stops renewing it
// (default DefaultTTL, from MinTTL to MaxTTL). The holder
// renews it every third of it, and its lease ends
// recipes.DriftMargin(ttl) before the TTL counted from the last confirmed
// request. Processes that share a lock must use the same TTL: a server
// that restarted waits this TTL before it grants again.
func WithTTL(d time.Duration) Option { return func(o *options) { o.ttl = d } }

// WithoutEvictionCheck skips the check, at the first use of the Client's
// server, that Redis cannot evict its locks' keys (maxmemory 0, or
// maxmemory-policy noeviction). Use it to accept the risk (it does not
// spare the lock INFO, which its scripts call too: see ACLRule): with
// eviction possible, Redis may delete a held lock under memory pressure
// and grant it to another client while its holder still trusts its lease
// (until its next renewal, a third of the TTL later), and the queue of
// waiters may be lost.
func WithoutEvictionCheck() ClientOption { return func(o *clientOptions) { o.noCheck = true } }

// New returns the lock named name. Its keys are "{name}", "{name}:fence",
// "{name}:queue" and "{name}:quiet", after the Client's key prefix (WithKeyPrefix)
// when it has one (one hash tag: one slot of a Redis Cluster; the last
// marks the server's quiet period after a restart, and outlives the
// lock's last use by a day, as the fence does). No I/O is done. zklock
// --backend redis PATH takes New(c, PATH), the leading / included: its
// /orders is the key "{/orders}", not New(c, "orders")'s "{orders}".
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
	if err := checkAck(o, c.r); err != nil {
		return nil, err
	}
	key := c.prefix + "{" + name + "}" // the lock's; the others add a suffix
	l := &Lock{c: c, name: name, prefix: c.prefix, ttl: o.ttl, check: !c.noCheck, trace: o.trace, acks: o.acks, ackTimeout: o.ackTimeout,
		keys:      []string{key, key + ":fence", key + ":queue", key + ":quiet"},
		renewKeys: []string{key, key + ":quiet"},
	}
	l.channel, l.publish = c.channel(c.prefix, name)
	l.ttlArg, l.waitArg, l.publishArg, l.channelArg = l.ttl.Milliseconds(), l.waitTTL().Milliseconds(), l.publish, l.channel
	l.terms = ttl.NewTerms(o.ttl, o.ttl-recipes.DriftMargin(o.ttl), l.String())
	return l, nil
}

// Name is the lock's name.
func (l *Lock) Name() string { return l.name }

// Acquire waits until the lock is held, ctx ends (an error that is
// recipes.ErrNotAcquired and ctx's error) or fails. A waiter that gives up
// leaves nothing in Redis: before Acquire returns it takes its queue entry
// out, and gives back the lock if it was handed to it meanwhile (a round
// trip after ctx ends; when Redis does not answer within 2 s, that goes
// on in the background, and the Client's Close waits for it). Waiters are
// served in the order they first queued (FIFO): the holder's release
// hands the lock to the first waiter still alive and tells it through the
// Client's subscription; a timer (for the first in the queue, the
// holder's remaining TTL; else the TTL; with jitter) covers a lost message
// or a crashed holder. With a context from a live lease of this Lock it
// re-enters at once.
//
// The lease's context is cancelled, with a cause that is
// recipes.ErrLockLost, recipes.DriftMargin(ttl) before the TTL counted from
// the send time of the last confirmed request (acquire or renewal) would
// let the lock go, when a renewal finds the lock gone or someone else's, or
// on a renewal error that trying again cannot mend (others are tried again
// until the deadline): before anyone else can be granted the lock. It is
// NOT safe to assume the lock is held until Release: do the work with the
// lease's context, and fence writes with its token.
func (l *Lock) Acquire(ctx context.Context) (recipes.Lease, error) { return l.acquire(ctx, true) }

// TryAcquire takes the lock if it is free now and no one waits for it, and
// otherwise returns an error that is recipes.ErrLocked at once.
func (l *Lock) TryAcquire(ctx context.Context) (recipes.Lease, error) { return l.acquire(ctx, false) }

func (l *Lock) acquire(ctx context.Context, wait bool) (recipes.Lease, error) {
	return ttl.Acquire(ctx, l, l.trace, locktrace.LockID{Backend: "redis", Kind: "lock", Name: l.name}, !wait,
		func(a *hold.Acquisition) (recipes.Lease, error) {
			if l.c.isClosed() { // after re-entry: a held lease re-enters still
				return nil, fmt.Errorf("%w: %s: %w", recipes.ErrNotAcquired, l, ErrClosed)
			}
			return grants.Wait(ctx, &waiting{l: l, id: uuid.NewString()}, wait, l.ttl, a)
		})
}

// outcome is what an attempt found.
type outcome struct {
	acquired bool
	token    int64         // when acquired
	quiet    bool          // free, but the server may have forgotten its holder
	wait     time.Duration // the holder's remaining TTL, or the quiet period's
	entry    string        // the caller's queue entry, when it queued
}

// attempt runs the acquire script once (after the eviction check, at the
// Client's first use). sent is when it is sent: a grant made after it may
// be trusted from then (stamp). entry is the caller's queue entry of its
// last attempt ("" when none; "?" when unknown: that attempt's reply was
// lost). Errors that trying again cannot mend are marked ttl.ErrPermanent.
func (l *Lock) attempt(ctx context.Context, id string, queue bool, entry string, sent time.Time) (outcome, error) {
	if l.check {
		err := l.c.checked.Check(func() error { return redisguard.Check(ctx, l.c.r, "redislock") })
		if errors.Is(err, redisguard.ErrEviction) {
			return outcome{}, ttl.Permanent(err)
		}
		if err != nil {
			return outcome{}, l.fail(err)
		}
	}
	var q any = "0" // a constant: boxed with no allocation
	if queue {
		q = "1"
	}
	reply, err := l.run(ctx, acquireScript, l.keys, id, l.ttlArg, q, l.waitArg,
		l.publishArg, l.channelArg, grants.Stamp(sent), entry)
	if err != nil && !errors.Is(err, errTooFewAcks) {
		return outcome{}, l.fail(err)
	}
	res, ok := reply.([]any)
	if !ok {
		return outcome{}, ttl.Permanent(fmt.Errorf("redislock: acquire script answered %v", reply))
	}
	got, perr := parseOutcome(res)
	if perr == nil && got.acquired && err != nil {
		// Taken on the master, not yet on enough replicas: not ours yet.
		return outcome{}, err
	}
	return got, perr
}

// parseOutcome reads the acquire script's answer: {1, token}, or {0 or 2,
// ms to wait, entry}.
func parseOutcome(res []any) (outcome, error) {
	code, ok1 := at[int64](res, 0)
	n, ok2 := at[int64](res, 1)
	entry, ok3 := at[string](res, 2)
	switch {
	case ok1 && ok2 && code == 1 && len(res) == 2:
		return outcome{acquired: true, token: n}, nil
	case ok1 && ok2 && ok3 && (code == 0 || code == 2) && len(res) == 3:
		return outcome{quiet: code == 2, wait: time.Duration(n) * time.Millisecond, entry: entry}, nil
	}
	return outcome{}, ttl.Permanent(fmt.Errorf("redislock: acquire script answered %v", res))
}

// at is res[i] as a T.
func at[T any](res []any, i int) (T, bool) {
	var v T
	if i >= len(res) {
		return v, false
	}
	v, ok := res[i].(T)
	return v, ok
}

// waitTTL is how long a waiter's queue entry lives without a refresh: a
// waiter refreshes it at least every TTL (its timer), so a waiter that
// crashed is skipped after three.
func (l *Lock) waitTTL() time.Duration { return 3 * l.ttl }

// hold turns an acquisition sent at sent into a lease.
func (l *Lock) hold(ctx context.Context, id string, token int64, sent time.Time) (*hold.Lease, error) {
	return ttl.Hold(ctx, l, token, true, sent, l.terms, server{l, id, token}, &l.c.bg)
}

// server is a holding's lock in Redis.
type server struct {
	l     *Lock
	id    string
	token int64
}

func (s server) Renew(ctx context.Context) error {
	reply, err := s.l.run(ctx, renewScript, s.l.renewKeys, s.id, s.l.ttl.Milliseconds(), s.token)
	if n, _ := reply.(int64); reply != nil && n == 0 {
		return ttl.ErrNotOurs
	}
	return s.l.fail(err)
}

func (s server) Free(ctx context.Context) error {
	reply, err := s.l.run(ctx, releaseScript, s.l.keys, s.id)
	if errors.Is(err, errTooFewAcks) {
		err = nil // released: a release needs no replica's acknowledgement
	}
	if n, _ := reply.(int64); err == nil && n == 0 {
		return ttl.ErrNotOurs
	}
	return s.l.fail(err)
}

// cancel takes a waiter that gives up out of the queue (its entry, or "?"
// when it does not know it) and, in the same script, releases the lock if
// it was handed to it meanwhile (a grant that raced the waiter's end is
// given back, not left on a waiter that is gone for a TTL). It does so
// before it returns, on a context that ctx's end cannot cut short,
// bounded by giveUpTimeout. Only if that fails (no answer in time, a
// connection refused) is it tried again in the background, on the
// Client's clean-ups, which Close waits for, until the entry would have
// expired by itself.
func (l *Lock) cancel(ctx context.Context, id, entry string) {
	cctx, stop := context.WithTimeout(context.WithoutCancel(ctx), giveUpTimeout)
	err := l.dequeue(cctx, id, entry)
	stop()
	if err == nil || errors.Is(err, ttl.ErrPermanent) {
		return
	}
	until := time.Now().Add(l.waitTTL())
	l.c.bg.Go(ctx, func(bg context.Context) {
		rctx, stop := context.WithDeadline(bg, until)
		defer stop()
		_ = ttl.Retry(rctx, 0, func() error { return l.dequeue(rctx, id, entry) })
	})
}

// dequeue runs the cancel script once for waiter id's entry.
func (l *Lock) dequeue(ctx context.Context, id, entry string) error {
	_, err := l.run(ctx, cancelScript, l.keys, id, entry)
	if err == nil || errors.Is(err, errTooFewAcks) {
		return nil // done on the master: a give-up needs no replica's acknowledgement
	}
	return l.fail(err)
}

// Bounds of the wait.
const (
	// giveUpTimeout bounds the removal that a waiter which gives up makes
	// before its Acquire returns: a Redis that answers takes a round trip,
	// and one that does not is left to the background.
	giveUpTimeout = 2 * time.Second
)

// errRedis wraps a Redis error of Acquire.
func errRedis(what string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("redislock: %s: %w", what, err)
}

// WithTrace reports the lock's acquisitions, leases and renewals to t (see
// locktrace.Trace); a trace in an Acquire's context is called too.
func WithTrace(t *locktrace.Trace) Option { return func(o *options) { o.trace = t } }
