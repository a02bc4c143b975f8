package redlock

import (
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/zkrecipes/zkrecipes/compat/internal/ttl"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/locktrace"
)

// Redis is what the lock needs of each server's go-redis client: scripts.
// *redis.Client has it.
type Redis interface {
	redis.Scripter
}

// Named defaults and limits.
const (
	// DefaultTTL is how long the lock outlives a holder that stops
	// renewing it.
	DefaultTTL = 10 * time.Second
	// MinTTL is the shortest TTL allowed: it must leave room for the
	// margin (recipes.DriftMargin) and for an extension every third of it.
	MinTTL = 50 * time.Millisecond
	// MaxTTL is the longest TTL allowed: 30 days.
	MaxTTL = ttl.MaxTTL
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

// Client is N independent Redis servers and what the locks made from it
// share: the key prefix, the per-server timeout, each server's eviction
// check (done once, at the Client's first use of the server), and the
// clean-ups that run in the background, which Close waits for. Close it
// before the process exits (and before closing its go-redis clients), so
// that nothing of its locks is left on the servers.
type Client struct {
	members       []*member
	prefix        string
	serverTimeout time.Duration // 0: DefaultServerTimeout of each lock's TTL
	noCheck       bool
	bg            ttl.Pending // clean-ups in the background, waited for by Close
	closed        atomic.Bool // by Close
}

// ClientOption configures NewClient.
type ClientOption func(*clientOptions)

type clientOptions struct {
	serverTimeout    time.Duration
	serverTimeoutSet bool
	noCheck          bool
	prefix           string
}

// WithServerTimeout bounds each server's answer (default
// DefaultServerTimeout of each lock's TTL); it must be positive, and New
// refuses a lock whose TTL is not over three times it.
func WithServerTimeout(d time.Duration) ClientOption {
	return func(o *clientOptions) { o.serverTimeout, o.serverTimeoutSet = d, true }
}

// WithoutEvictionCheck skips the check, at the Client's first use of each
// server, that the server cannot evict the locks' keys (maxmemory 0, or
// maxmemory-policy noeviction). Use it to accept the risk (it does not
// spare the lock INFO, which its scripts call too: see ACLRule). What is
// lost: a server that
// evicts the key of a live holder counts for a contender at once, with no
// quiet period; a minority of such servers costs the holder its slack,
// and evictions on a majority, or on one server beside a restart or a
// partition, grant the lock to another while its holder still trusts its
// lease (until its next extension, a third of the TTL later).
func WithoutEvictionCheck() ClientOption { return func(o *clientOptions) { o.noCheck = true } }

// NewClient returns a Client over servers, which must be independent (not
// replicas of each other, nor the same server twice). No I/O is done.
//
// NewClient refuses (recipes.ErrInvalidArgument) no servers, a nil or
// typed-nil client, the same client twice, and two clients with the same
// address: clients with an Options() *redis.Options method
// (*redis.Client) are compared by Options().Addr, as written (not
// resolved: "localhost:6379" and "127.0.0.1:6379" look different); other
// values by identity.
func NewClient(servers []Redis, opts ...ClientOption) (*Client, error) {
	if len(servers) == 0 {
		return nil, invalid("no servers")
	}
	members, err := newMembers(servers)
	if err != nil {
		return nil, err
	}
	var o clientOptions
	for _, opt := range opts {
		if opt == nil {
			return nil, invalid("nil ClientOption")
		}
		opt(&o)
	}
	if o.serverTimeoutSet && o.serverTimeout <= 0 {
		return nil, invalid("server timeout %v must be positive", o.serverTimeout)
	}
	if err := ValidKeyPrefix(o.prefix); err != nil {
		return nil, err
	}
	return &Client{members: members, prefix: o.prefix, serverTimeout: o.serverTimeout, noCheck: o.noCheck}, nil
}

// quorum is the majority of the servers.
func (c *Client) quorum() int { return len(c.members)/2 + 1 }

// Lock is a lock on one name over a Client's servers.
type Lock struct {
	c     *Client
	name  string
	keys  []string // the lock, the quiet marker
	o     options
	terms ttl.Terms // of its leases
}

var _ recipes.Locker = (*Lock)(nil)

// Option configures New.
type Option func(*options)

type options struct {
	ttl, serverTimeout, retryDelay time.Duration
	trace                          *locktrace.Trace
}

// WithTTL sets how long the lock outlives a holder that stops renewing it
// (default DefaultTTL, from MinTTL to MaxTTL). It is also how long a server
// that restarted grants nothing: processes that share a lock must use the
// same TTL.
func WithTTL(d time.Duration) Option { return func(o *options) { o.ttl = d } }

// WithRetryDelay bounds the random delay between attempts (default
// DefaultRetryDelay).
func WithRetryDelay(d time.Duration) Option { return func(o *options) { o.retryDelay = d } }

// New returns the lock named name over c's servers. Its keys on each
// server are "{name}" and "{name}:quiet", after the Client's key prefix
// (WithKeyPrefix) when it has one (one hash tag; the second marks the
// server's quiet period after a restart and outlives the lock's last use
// by a day). No I/O is done.
func New(c *Client, name string, opts ...Option) (*Lock, error) {
	switch {
	case c == nil:
		return nil, invalid("nil Client (make one with NewClient)")
	case name == "":
		return nil, invalid("empty lock name")
	case strings.ContainsAny(name, "{}"):
		return nil, invalid("lock name %q: braces would break its hash tag", name)
	}
	o := options{ttl: DefaultTTL, retryDelay: DefaultRetryDelay}
	for _, opt := range opts {
		if opt == nil {
			return nil, invalid("nil Option")
		}
		opt(&o)
	}
	o.serverTimeout = c.serverTimeout
	if o.serverTimeout == 0 {
		o.serverTimeout = DefaultServerTimeout(o.ttl)
	}
	switch {
	case o.ttl < MinTTL || o.ttl > MaxTTL:
		return nil, invalid("TTL %v: must be from %v (room for the margin and extensions) to %v", o.ttl, MinTTL, MaxTTL)
	case o.serverTimeout >= o.ttl/3:
		return nil, invalid("server timeout %v (WithServerTimeout): must be under a third of the TTL %v", o.serverTimeout, o.ttl)
	case o.retryDelay <= 0:
		return nil, invalid("retry delay %v must be positive", o.retryDelay)
	}
	key := c.prefix + "{" + name + "}" // the lock's; the quiet marker adds a suffix
	l := &Lock{c: c, name: name, keys: []string{key, key + ":quiet"}, o: o}
	l.terms = ttl.NewTerms(o.ttl, o.ttl-recipes.DriftMargin(o.ttl), l.String())
	return l, nil
}

// invalid is New's error for bad input.
func invalid(format string, args ...any) error {
	return fmt.Errorf("redlock: %w: "+format, append([]any{recipes.ErrInvalidArgument}, args...)...)
}

// Name is the lock's name.
func (l *Lock) Name() string { return l.name }

// String names the lock in messages, as its errors do: "redlock orders".
func (l *Lock) String() string { return "redlock " + l.name }

// quorum is the majority of the servers.
func (l *Lock) quorum() int { return l.c.quorum() }

// WithTrace reports the lock's acquisitions, leases and renewals to t (see
// locktrace.Trace); a trace in an Acquire's context is called too.
func WithTrace(t *locktrace.Trace) Option { return func(o *options) { o.trace = t } }
