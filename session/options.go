package session

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/recipes/locktrace"
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
	trace             *locktrace.Trace
	clientTrace       *ClientTrace
	serverTick        time.Duration
	tls               *tls.Config // WithTLS; nil: plain TCP
}

func defaultConfig() config {
	return config{
		sessionTimeout:    DefaultSessionTimeout,
		connectionTimeout: DefaultConnectionTimeout,
		retry:             ExponentialBackoff{},
		logger:            quietLogger(),
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

// WithLogger sets the logger. By default the client logs nothing: a
// library should not write to its user's logs unasked. Given l, state
// changes are logged at Info (Warn for Suspended and Lost), a sick member
// and a dropped connection at Warn, failures to connect or authenticate at
// Error, the ZooKeeper client's own messages at Debug. WithLogger(slog.Default()) sends them
// to the process's default logger; a nil l logs nothing.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		if l == nil {
			l = quietLogger()
		}
		c.logger = l
		return nil
	}
}

// quietLogger is the default logger: it discards everything, and says so
// to Enabled, so that no message is even built.
func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// WithACL sets the ACL of every node the client creates (default
// WorldACL(PermAll): anyone may do anything). That is every node of
// every recipe made on the client: lock, lease and leader nodes, the lock
// paths and the other parents it creates as containers (a semaphore's
// leases and locks, the parents of a lock path), a SharedCount's node,
// and the namespace node (WithNamespace). A node that exists already keeps
// the ACL it has.
//
// AuthACL(PermAll) gives each node to its creator's identity alone
// (ZooKeeper's CREATOR_ALL_ACL; on the server it becomes
// DigestACL(PermAll, user, password)). It needs WithDigestAuth:
// without credentials ZooKeeper refuses every create with InvalidACL, so
// Connect refuses it with ErrInvalidArgument. Connect refuses as well an
// ACL that grants the client's own identities (anyone, its creator
// identity, the digest of its credentials) less than read, create and
// delete, which the recipes need of their nodes: another user's digest,
// say. An ACL naming identities it cannot judge (ip, x509, sasl) is left
// to the server. Under it, a client without
// the credentials can neither see nor join the queues (its creates fail
// at once with ErrNoAuth, and so does its Acquire, without a retry),
// nor delete a holder's node. ZooKeeper checks a delete against the ACL of
// the node's parent: a lock node is protected by its lock path's ACL, and
// the lock path by the node above it. Let the client create the lock
// paths (or put them under a node of the same ACL), not under a node open
// to all. The server still removes a session's ephemeral nodes when it
// ends, and empty containers, whatever their ACL.
//
// Curator processes that share these locks must authenticate as the same
// user (CuratorFrameworkFactory.builder().authorization("digest",
// "user:password".getBytes())) and, for their nodes to get the same ACL,
// use an ACLProvider that returns ZooDefs.Ids.CREATOR_ALL_ACL.
func WithACL(acl []ACL) Option {
	return func(c *config) error {
		wire, err := wireACL(acl)
		if err != nil {
			return fmt.Errorf("WithACL: %w", err)
		}
		c.acl = wire
		return nil
	}
}

// WithDigestAuth authenticates every connection with ZooKeeper's digest
// scheme as user:password (go-zookeeper sends the credentials again on
// each reconnection); it may be given more than once. It only gives the
// client an identity: the nodes it creates are open to all unless WithACL
// says otherwise, e.g. WithACL(AuthACL(PermAll)) (creator only, see
// WithACL). Every client, Go or Curator, that shares a lock made so needs
// the same credentials.
func WithDigestAuth(user, password string) Option {
	return func(c *config) error {
		if user == "" {
			return invalid("digest auth: empty user")
		}
		c.auth = append(c.auth, []byte(user+":"+password))
		return nil
	}
}

// checkACL refuses, once every Option is applied (in any order), an ACL
// under which the client could not use its own nodes: one ZooKeeper would
// refuse at the first create with InvalidACL (the auth scheme grants the
// creator's identities, and without credentials the client has none), and
// one that grants the client's identities (anyone, its creator identity,
// the digest of one of its credentials) less than ownPerms, under which
// Acquire fails with ErrNoAuth or, worse, a release cannot delete its
// node and the lock waits for the session's end. An ACL with a scheme the
// client cannot judge (ip, x509, sasl) is left to the server.
func (c *config) checkACL() error {
	for _, a := range c.acl {
		if a.Scheme == "auth" && len(c.auth) == 0 {
			return invalid("WithACL: the auth scheme (creator only) needs credentials: add WithDigestAuth")
		}
	}
	var granted int32
	for _, a := range c.acl {
		switch {
		case a.Scheme == "world" && a.ID == "anyone", a.Scheme == "auth":
			granted |= a.Perms
		case a.Scheme == "digest":
			if c.ownDigest(a.ID) {
				granted |= a.Perms
			}
		case a.Scheme != "world":
			return nil
		}
	}
	if granted&ownPerms != ownPerms {
		return invalid("WithACL: the ACL grants this client's own identity %q of the %q the recipes need (read, create, delete): its Acquire would fail with NoAuth, or its release could not delete its node",
			permString(granted&ownPerms), permString(ownPerms))
	}
	return nil
}

// ownDigest reports whether id ("user:base64(sha1(user:password))") is the
// digest identity of one of the client's credentials.
func (c *config) ownDigest(id string) bool {
	for _, cred := range c.auth {
		user, password, _ := strings.Cut(string(cred), ":")
		if zk.DigestACL(0, user, password)[0].ID == id {
			return true
		}
	}
	return false
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

// WithServerTick tells the client the ZooKeeper servers' tickTime. The
// client proves that the ensemble's leader heard its session with rounds
// that wait one of the leader's ping periods, tickTime/2 (see the package
// doc); by default it takes tickTime to be at most half the session
// timeout the server granted, which ZooKeeper's default
// minSessionTimeout (2 × tickTime) guarantees. Set it when the servers'
// minSessionTimeout is below 2 × tickTime, or to prove more often than
// every quarter of the session timeout. The session timeout the server
// grants must be at least 2 × d: Connect fails otherwise, naming it, and a
// later session granted less is logged as an error and suspended at once
// whenever its proofs fall behind.
func WithServerTick(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return invalid("WithServerTick(%v): must be positive", d)
		}
		c.serverTick = d
		return nil
	}
}

// WithTrace reports to t the acquisitions and leases of every recipe made
// on the client (see locktrace.Trace; a trace in an Acquire's context is
// called too). The client's own connection states and attempts go to a
// ClientTrace (WithClientTrace).
func WithTrace(t *locktrace.Trace) Option {
	return func(c *config) error {
		c.trace = t
		return nil
	}
}
