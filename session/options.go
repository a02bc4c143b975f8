package session

import (
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// Named defaults of the Client.
const (
	// DefaultSessionTimeout is the session timeout asked of the server. A
	// holder that dies keeps its locks for about this long. Keep it within
	// the server's minSessionTimeout..maxSessionTimeout (by default 2 to 20
	// ticks): the server clamps it, and a timeout shortened by the server
	// shortens how long a suspended session may really live.
	DefaultSessionTimeout = 15 * time.Second
	// DefaultConnectionTimeout is how long Connect waits for the first
	// session when its ctx has no earlier deadline.
	DefaultConnectionTimeout = 15 * time.Second
)

// Option configures Connect.
type Option func(*config) error

type config struct {
	sessionTimeout    time.Duration
	connectionTimeout time.Duration
	namespace         namespace
	retry             RetryPolicy
	logger            *slog.Logger
	acl               []zk.ACL
	auth              [][]byte // digest credentials "user:password"
	policy            ErrorPolicy
	maxRequest        int // bytes
	trace             *recipes.Trace
	serverLag         time.Duration
}

func defaultConfig() config {
	return config{
		sessionTimeout:    DefaultSessionTimeout,
		connectionTimeout: DefaultConnectionTimeout,
		retry:             ExponentialBackoff{},
		logger:            slog.Default(),
		acl:               zk.WorldACL(zk.PermAll),
		policy:            SuspendedIsLost,
		maxRequest:        DefaultMaxRequestSize,
	}
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidArgument}, args...)...)
}

// WithSessionTimeout sets the session timeout asked of the server (default
// DefaultSessionTimeout), from 1ms to MaxSessionTimeout. The server clamps
// it to its own minSessionTimeout..maxSessionTimeout, and the client uses
// the timeout the server granted.
func WithSessionTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d < time.Millisecond || d > MaxSessionTimeout {
			return invalid("session timeout %v: must be from 1ms to %v (the protocol carries milliseconds in 32 bits)",
				d, MaxSessionTimeout)
		}
		c.sessionTimeout = d
		return nil
	}
}

// WithConnectionTimeout bounds how long Connect waits for the first session
// (default DefaultConnectionTimeout). It must be positive.
func WithConnectionTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return invalid("connection timeout %v must be positive", d)
		}
		c.connectionTimeout = d
		return nil
	}
}

// WithNamespace prefixes every path the client is given with ns (an absolute
// path such as "/myapp"). The namespace node is created lazily, as a
// container, the first time a create needs it. Default: none.
func WithNamespace(ns string) Option {
	return func(c *config) error {
		if err := ValidatePath(ns); err != nil {
			return fmt.Errorf("namespace: %w", err)
		}
		if ns == "/" {
			ns = ""
		}
		c.namespace = namespace(ns)
		return nil
	}
}

// WithRetryPolicy sets how operations are retried after a retryable error
// (default: ExponentialBackoff{} with the Default values). NoRetry{} turns
// retries off.
func WithRetryPolicy(p RetryPolicy) Option {
	return func(c *config) error {
		if p == nil {
			return invalid("nil RetryPolicy")
		}
		c.retry = p
		return nil
	}
}

// WithLogger sets the logger (default slog.Default()). State changes are
// logged at Info (Warn for Suspended and Lost); the ZooKeeper client's own
// messages at Debug.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		if l == nil {
			l = slog.New(slog.NewTextHandler(io.Discard, nil))
		}
		c.logger = l
		return nil
	}
}

// WithACL sets the ACL of every node the client creates (default
// zk.WorldACL(zk.PermAll)).
func WithACL(acl []zk.ACL) Option {
	return func(c *config) error {
		if len(acl) == 0 {
			return invalid("empty ACL")
		}
		c.acl = acl
		return nil
	}
}

// WithDigestAuth authenticates every connection with ZooKeeper's digest
// scheme as user:password. Combine with WithACL(zk.DigestACL(...)).
func WithDigestAuth(user, password string) Option {
	return func(c *config) error {
		if user == "" {
			return invalid("digest auth: empty user")
		}
		c.auth = append(c.auth, []byte(user+":"+password))
		return nil
	}
}

// WithErrorPolicy chooses when a session value stops being trusted (default
// SuspendedIsLost).
func WithErrorPolicy(p ErrorPolicy) Option {
	return func(c *config) error {
		if p != SuspendedIsLost && p != OnlyLostIsLost {
			return invalid("unknown ErrorPolicy %d", p)
		}
		c.policy = p
		return nil
	}
}

// WithServerLag sets how long a ZooKeeper server may go on answering this
// client after it stopped hearing from its leader: the ensemble's
// syncLimit × tickTime (ZooKeeper's defaults, 5 × 2000 ms, make it 10 s).
// A follower or an observer cut off from the quorum answers pings from
// its own state until then, before it drops its clients, while the
// leader, which expires sessions, no longer hears of them: a reply proves
// the session alive only as of its send time less d. The client counts
// its trust and the server's deadline (Session.ServerDeadline) from there.
//
// The default, 0, is right for a single server; for an ensemble it is
// safe only under SuspendedIsLost with a session timeout well above d (the
// holder is told when the cut server drops it, d after the cut, and the
// session expires a session timeout after the cut). Under
// OnlyLostIsLost a session value trusted across a suspension outlives
// the server's deadline by up to d unless d is set. d must be below half
// the session timeout.
func WithServerLag(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 {
			return invalid("WithServerLag(%v): negative", d)
		}
		c.serverLag = d
		return nil
	}
}

// WithTrace reports to t the client's connection states (SessionState),
// its attempts to connect to a server (Connect), and the acquisitions and
// leases of every recipe made on the client (see recipes.Trace; a trace
// in an Acquire's context is called too). Its hooks are called on the
// client's goroutines, SessionState under the client's state lock: they
// must not block or call the client.
func WithTrace(t *recipes.Trace) Option {
	return func(c *config) error {
		c.trace = t
		return nil
	}
}
