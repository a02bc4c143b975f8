package memcachedlock

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
	"github.com/zkrecipes/zkrecipes/compat/internal/ttl"
	"github.com/zkrecipes/zkrecipes/internal/hold"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/locktrace"
)

// Memcached is what the lock needs of a gomemcache client; *memcache.Client
// has it. It must reach one server: a client of several spreads keys over
// them, and would put a lock's item, marker and quiet item on different
// servers, so that a restart of one would go unseen. Its calls take no
// context: the lock abandons a call whose context ended, and cleans up
// after it.
type Memcached interface {
	Add(item *memcache.Item) error
	Get(key string) (*memcache.Item, error)
	GetMulti(keys []string) (map[string]*memcache.Item, error)
	CompareAndSwap(item *memcache.Item) error
}

// Named defaults and limits.
const (
	// DefaultTTL is how long the lock outlives a holder that stops renewing
	// it.
	DefaultTTL = 10 * time.Second
	// MinTTL is the shortest TTL: memcached may expire an item up to 2 s
	// early (its clock counts whole seconds and now and then jumps by 2;
	// see "When the holder is told" in the package doc), so a lease is
	// trusted for the TTL less 2 s less recipes.DriftMargin(ttl): 0.96 s at
	// 3 s, renewed every 0.32 s.
	MinTTL = 3 * time.Second
	// MaxTTL is the longest TTL: 30 days less 2 s. memcached takes an
	// expiry of more than 30 days as a date, and the quiet item's expiry is
	// the TTL + 2 s.
	MaxTTL = ttl.MaxTTL - coarseClock
	// MaxKeyLen is the longest lock key: memcached's limit of 250 bytes,
	// less the suffix of the lock's marker and quiet items.
	MaxKeyLen = 250 - max(len(aliveSuffix), len(quietSuffix))
	// MaxPoll is the longest wait between two tries of a waiter.
	MaxPoll = 100 * time.Millisecond
	// firstPoll is the first wait, doubled at each try up to MaxPoll.
	firstPoll = 2 * time.Millisecond
	// coarseClock is how much earlier than its TTL memcached may expire an
	// item: its clock counts whole seconds and jumps by 2 when its tick
	// crosses a second boundary.
	coarseClock = 2 * time.Second
)

// Client is one memcached and what the locks made from it share: the
// key prefix, the server's address (its settings and clock), the eviction
// check (kept once it succeeds), and the work in the background, which
// Close waits for. Close it before the process exits, so that nothing of
// its locks is left in memcached.
type Client struct {
	mc      Memcached
	prefix  string
	addr    string   // the server's address (WithServerAddr): its settings and clock; "" for none
	check   bool     // whether to check its eviction setting
	dial    dialFunc // how the checks connect to addr: as mc does
	checked atomic.Bool
	bg      ttl.Pending // the calls and clean-ups in the background
	closed  atomic.Bool // by Close: no more acquisitions
}

// ClientOption configures NewClient.
type ClientOption func(*clientOptions)

type clientOptions struct {
	addr    *string
	noCheck bool
	prefix  string
}

// WithServerAddr gives the address of mc's memcached, as given to
// memcache.New (host:port, or a unix socket's path, with a "/"): the
// Client's first Acquire (or TryAcquire) reads its settings over a short
// connection of its own, bounded by its context, and refuses a server
// that runs with evictions on with an error that is ErrEvictions, names
// the setting and the fix, and ends Acquire at once. A successful check is
// kept for the Client's life. NewClient needs this option or
// WithoutEvictionCheck. The locks also read the server's start time and
// uptime ("stats") when they write a lock's marker (once per key and
// server process): the start time goes into the fencing tokens, which a
// Client without the address does not give (see Tokens in the package
// doc). When mc is a *memcache.Client with a DialContext (TLS,
// authentication), these connections are made with it, as mc's own are;
// otherwise over plain TCP (or the unix socket).
func WithServerAddr(addr string) ClientOption { return func(o *clientOptions) { o.addr = &addr } }

// WithoutEvictionCheck skips the check of the server's eviction setting
// (also when WithServerAddr is given: then the address still serves the
// tokens). Use it where the server runs with -M and refuses "stats
// settings", or to accept the risk: with evictions
// on, memcached may evict a held lock's item under memory pressure, and
// another client can then be granted the lock while its holder trusts its
// lease, until its next renewal (a third of its trusted time later) finds
// the item gone.
func WithoutEvictionCheck() ClientOption { return func(o *clientOptions) { o.noCheck = true } }

// WithKeyPrefix puts the items of the Client's locks under prefix
// (default none): a lock's item is prefix+key, its marker and quiet items
// prefix+key+":alive" and prefix+key+":quiet". No spaces or control
// characters (ValidKeyPrefix). Processes that share a lock must use the
// same prefix.
func WithKeyPrefix(prefix string) ClientOption { return func(o *clientOptions) { o.prefix = prefix } }

// NewClient returns a Client over mc. It needs WithServerAddr or
// WithoutEvictionCheck. No I/O is done.
func NewClient(mc Memcached, opts ...ClientOption) (*Client, error) {
	if ttl.IsNil(mc) {
		return nil, invalid("nil memcached client")
	}
	var o clientOptions
	for _, opt := range opts {
		if opt == nil {
			return nil, invalid("nil ClientOption")
		}
		opt(&o)
	}
	if err := ValidKeyPrefix(o.prefix); err != nil {
		return nil, err
	}
	addr := ""
	if o.addr != nil {
		if _, _, err := net.SplitHostPort(*o.addr); err != nil && !strings.Contains(*o.addr, "/") {
			return nil, invalid("WithServerAddr(%q): not a host:port (nor a unix socket's path): %v", *o.addr, err)
		}
		addr = *o.addr
	}
	if !o.noCheck && addr == "" {
		return nil, invalid("pass WithServerAddr(the host:port of mc's memcached), so that the first Acquire checks that it runs with evictions off (-M), or WithoutEvictionCheck() to skip the check and accept that an evicted lock item lets another client in")
	}
	return &Client{mc: mc, prefix: o.prefix, addr: addr, check: !o.noCheck, dial: dialerOf(mc)}, nil
}

// invalid is an error of bad input: recipes.ErrInvalidArgument.
func invalid(format string, args ...any) error {
	return fmt.Errorf("memcachedlock: %w: "+format, append([]any{recipes.ErrInvalidArgument}, args...)...)
}

// Lock is a lock on one key of a Client's memcached.
type Lock struct {
	c        *Client
	key      string
	trace    *locktrace.Trace
	aliveKey string // the marker: the server has not forgotten since it was written
	quietKey string // there while the server may have forgotten a holder
	ttl      time.Duration
	terms    ttl.Terms // of its leases
}

var _ recipes.Locker = (*Lock)(nil)

// Option configures New.
type Option func(*options)

type options struct {
	ttl   time.Duration
	trace *locktrace.Trace
}

// WithTTL sets how long the lock outlives a holder that stops renewing it:
// whole seconds, from MinTTL to MaxTTL (default DefaultTTL). The lease is
// trusted for the TTL less 2 s less recipes.DriftMargin(ttl), and a
// restarted server grants the lock after a TTL + 2 s. Processes that share
// a lock must use the same TTL.
func WithTTL(d time.Duration) Option { return func(o *options) { o.ttl = d } }

// Suffixes of the keys of a lock's marker and quiet items.
const (
	aliveSuffix = ":alive"
	quietSuffix = ":quiet"
)

// New returns the lock whose item is key, after the Client's key prefix
// (WithKeyPrefix) when it has one; its marker and quiet items are that
// item's key +":alive" and +":quiet" (see the package doc), so the prefix
// and key together are at most MaxKeyLen bytes, and may not end with
// either suffix (whether the suffix is in the key or spans the prefix and
// the key: prefix "k:" and key "alive" would name the marker of the lock
// "k"). So two locks with different items never share an item. No I/O is
// done.
func New(c *Client, key string, opts ...Option) (*Lock, error) {
	if c == nil {
		return nil, invalid("nil Client (make one with NewClient)")
	}
	o := options{ttl: DefaultTTL}
	for _, opt := range opts {
		if opt == nil {
			return nil, invalid("nil Option")
		}
		opt(&o)
	}
	item := c.prefix + key
	switch {
	case key == "" || len(item) > MaxKeyLen:
		return nil, invalid("key %q: with its prefix %q, must be 1 to %d bytes (memcached's 250, less the %q its marker item adds)", key, c.prefix, MaxKeyLen, aliveSuffix)
	case ownItem(item):
		return nil, invalid("key %q: with its prefix %q, it ends in %q or %q: keys ending so name a lock's own items", key, c.prefix, aliveSuffix, quietSuffix)
	case strings.ContainsFunc(key, badKeyRune):
		return nil, invalid("key %q: no spaces or control characters in a memcached key", key)
	}
	switch {
	case o.ttl < MinTTL || o.ttl > MaxTTL:
		return nil, invalid("TTL %v: must be from %v (memcached may expire an item 2 s early) to %v (memcached takes more than 30 days as a date)", o.ttl, MinTTL, MaxTTL)
	case o.ttl%time.Second != 0:
		return nil, invalid("TTL %v: memcached counts whole seconds", o.ttl)
	}
	valid := o.ttl - coarseClock - recipes.DriftMargin(o.ttl)
	l := &Lock{c: c, key: item, aliveKey: item + aliveSuffix, quietKey: item + quietSuffix, ttl: o.ttl, trace: o.trace}
	l.terms = ttl.NewTerms(o.ttl, valid, l.String())
	return l, nil
}

// badKeyRune reports whether r may not be in a memcached key (the text
// protocol splits on spaces).
func badKeyRune(r rune) bool { return r <= ' ' || r == 0x7f }

// ownItem reports whether item (prefix and key) ends as a lock's marker or
// quiet item does. Refusing such items keeps the layout injective
// (TestLayoutIsInjective): the items of a lock are I, I+aliveSuffix and
// I+quietSuffix, so locks with items A != B share one only if A = B+s for
// a suffix s (A+s1 = B+s2 with two suffixes cannot be: they differ and
// are of one length), and then A ends in s.
func ownItem(item string) bool {
	return strings.HasSuffix(item, aliveSuffix) || strings.HasSuffix(item, quietSuffix)
}

// ValidKeyPrefix returns nil when NewClient takes prefix (WithKeyPrefix), else
// an error that is recipes.ErrInvalidArgument and says why: a space or a
// control character (memcached's text protocol splits keys on spaces), or
// no room left for a key of one byte (MaxKeyLen).
func ValidKeyPrefix(prefix string) error {
	switch {
	case strings.ContainsFunc(prefix, badKeyRune):
		return fmt.Errorf("memcachedlock: %w: key prefix %q: no spaces or control characters in a memcached key", recipes.ErrInvalidArgument, prefix)
	case len(prefix) >= MaxKeyLen:
		return fmt.Errorf("memcachedlock: %w: key prefix %q: must be under %d bytes, to leave room for a key", recipes.ErrInvalidArgument, prefix, MaxKeyLen)
	}
	return nil
}

// Key is the lock's item key: the Client's key prefix (WithKeyPrefix),
// then the key given to New.
func (l *Lock) Key() string { return l.key }

// String names the lock in messages, as its errors do: "memcachedlock orders".
func (l *Lock) String() string { return "memcachedlock " + l.key }

// Acquire waits until the lock is held (polling, see the package doc), ctx
// ends (an error that is recipes.ErrNotAcquired and ctx's; an item its
// attempt in flight added is deleted before it returns, within 2 s, and
// after that in the background, which Close waits for) or an error that
// trying again cannot mend (an error that is recipes.ErrNotAcquired and
// says why: the server's eviction setting, no server configured, a closed
// Client).
// Transient errors (memcached unreachable) are retried until ctx ends.
// With a context from a live lease of this Lock it re-enters at once.
//
// The lease's context is cancelled, with a cause that is
// recipes.ErrLockLost, 2 s plus recipes.DriftMargin(ttl) before the TTL
// counted from the send time of the last confirmed add or renewal, when a
// renewal finds the lock someone else's, or gone while the server is not
// quiet, or on a renewal error that trying again cannot mend: before
// memcached can let the lock go. It is NOT safe to assume the lock is held
// until Release: do the work with the lease's context, and fence writes
// with its token.
func (l *Lock) Acquire(ctx context.Context) (recipes.Lease, error) { return l.acquire(ctx, true) }

// TryAcquire takes the lock if it is free now, and otherwise returns at
// once an error that is recipes.ErrLocked (also ErrQuiet when the server
// may have forgotten a holder), or recipes.ErrNotAcquired with the error
// that kept it from asking.
func (l *Lock) TryAcquire(ctx context.Context) (recipes.Lease, error) { return l.acquire(ctx, false) }

func (l *Lock) acquire(ctx context.Context, wait bool) (recipes.Lease, error) {
	return ttl.Acquire(ctx, l, l.trace, locktrace.LockID{Backend: "memcached", Kind: "lock", Name: l.key}, !wait,
		func(a *hold.Acquisition) (recipes.Lease, error) { return l.take(ctx, wait, a) })
}

// Close waits for the Client's work in the background to end (the
// clean-up of an attempt whose Acquire gave up before it was answered, a
// release that failed and is retried, a call whose context ended), for
// ttl.CloseWait at most: then it stops that work, and memcached lets what
// it left go at its TTL; the error says how many it stopped. Acquire and
// TryAcquire of its locks then fail at once with an error that is
// recipes.ErrNotAcquired and ErrClosed (a live lease's context still
// re-enters its lock). Leases held go on, renewed, until released:
// release them first, so that Close waits for a release that failed.
func (c *Client) Close() error {
	c.closed.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), ttl.CloseWait)
	defer cancel()
	if err := c.bg.Wait(ctx); err != nil {
		return fmt.Errorf("memcachedlock: %w", err)
	}
	return nil
}

// seconds is the lock item's expiry: the TTL in seconds.
func (l *Lock) seconds() int32 { return int32(l.ttl / time.Second) }

// WithTrace reports the lock's acquisitions, leases and renewals to t (see
// locktrace.Trace); a trace in an Acquire's context is called too.
func WithTrace(t *locktrace.Trace) Option { return func(o *options) { o.trace = t } }
