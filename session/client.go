package session

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/recipes/locktrace"
)

// Client is a long-lived ZooKeeper client: one connection at a time, one
// session at a time, re-established as needed until Close. It is safe for
// concurrent use.
type Client struct {
	cfg     config
	servers []string
	log     *slog.Logger

	mu        sync.Mutex
	conn      *zk.Conn      // the usable connection; nil while one is dialed or authenticates
	pending   *zk.Conn      // the current generation's connection, usable or not
	connGen   uint64        // events of older connections are ignored
	connReady chan struct{} // closed once conn is set
	m         machine
	sess      *Session
	changed   chan struct{} // closed and replaced at every transition
	timerGen  uint64
	lostTimer *time.Timer         // Lost after a whole session timeout in Suspended
	states    fanout[StateChange] // Subscribe
	notes     fanout[Event]       // Notifications
	watches   watchTable          // the watches of GetW, ChildrenW and ExistsW (watchtable.go)
	closed    bool
	done      chan struct{}
	wg        sync.WaitGroup // background work: dialing, closing old connections, the watchdog
	live      liveness
	order     callOrder // every call waits for the abandoned ones (order.go)

	keepaliveOut bool          // the watchdog's keepalive is waiting for its reply
	proofOut     bool          // the watchdog's round of proof is waiting for its replies
	lastRound    time.Duration // when the watchdog's last round of proof was answered (mono)
	roundConn    *trackedConn  // the connection of its last round
	roundsOnConn int           // the rounds begun on roundConn
	kick         chan struct{} // wakes the watchdog
}

// Connect opens a client to the ZooKeeper servers ("host:port"; the port
// defaults to 2181) and waits until the first session is established, ctx
// ends or the connection timeout passes. It returns an ErrInvalidArgument
// error for bad input and an ErrNotConnected error when no session came.
// It gives up at once when every server refused the client in one round
// of attempts (under WithTLS: a server's certificate not trusted or not
// for its name, the client's certificate refused or missing, a server
// that does not speak TLS), which the next round would meet again: its
// error is then recipes.ErrRefused too, and names each server and its
// refusal, e.g. "session: not connected to 127.0.0.1:2281: every server
// refused the client: 127.0.0.1:2281: tls handshake: tls: failed to
// verify certificate: x509: certificate signed by unknown authority".
// Any other failure in the round (a server down, which may come back)
// keeps it waiting.
func Connect(ctx context.Context, servers []string, opts ...Option) (*Client, error) {
	if ctx == nil {
		return nil, invalid("nil context")
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotConnected, ctxError(ctx))
	}
	addrs, err := parseServers(servers)
	if err != nil {
		return nil, err
	}
	cfg := defaultConfig()
	for _, o := range opts {
		if o == nil {
			return nil, invalid("nil Option")
		}
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	if err := cfg.checkACL(); err != nil {
		return nil, err
	}
	c := &Client{
		cfg:       cfg,
		servers:   addrs,
		log:       cfg.logger,
		connReady: make(chan struct{}),
		changed:   make(chan struct{}),
		done:      make(chan struct{}),
		kick:      make(chan struct{}, 1),
		m:         machine{policy: cfg.policy},
	}
	c.live.requested, c.live.log, c.live.trace, c.live.tick = cfg.sessionTimeout, cfg.logger, cfg.clientTrace, cfg.serverTick
	c.live.secure = newTLSDialer(cfg.tls)
	waitCtx, cancel := context.WithTimeout(ctx, cfg.connectionTimeout)
	defer cancel()
	refusedCtx, refused := context.WithCancelCause(waitCtx)
	defer refused(nil)
	c.live.refusals.waitFor(refused)
	c.mu.Lock()
	c.startDialLocked()
	c.mu.Unlock()
	c.wg.Add(1)
	go c.watch()
	_, err = c.Session(refusedCtx)
	c.live.refusals.waitFor(nil)
	if err == nil {
		if err = c.live.tickError(c.SessionTimeout()); err != nil {
			c.Close()
			return nil, fmt.Errorf("%w: %w", ErrInvalidArgument, err)
		}
		return c, nil
	}
	c.Close()
	var round *refusedRound
	if errors.As(context.Cause(refusedCtx), &round) { // before ctx ended or the timeout passed
		return nil, fmt.Errorf("%w to %s: %w", ErrNotConnected, strings.Join(addrs, ","), round)
	}
	err = fmt.Errorf("%w to %s: %w", ErrNotConnected, strings.Join(addrs, ","), err)
	// Why: the most telling failure since the last connection (a
	// certificate not trusted before a refused connection).
	if last := c.live.lastFail.Load(); last != nil {
		err = fmt.Errorf("%w; last attempt: %w", err, last)
	}
	return nil, err
}

// parseServers checks and normalises the server list.
func parseServers(servers []string) ([]string, error) {
	if len(servers) == 0 {
		return nil, invalid("no ZooKeeper servers given")
	}
	out := make([]string, 0, len(servers))
	for _, s := range servers {
		s = strings.TrimSpace(s)
		if s == "" {
			return nil, invalid("empty server address")
		}
		if !strings.Contains(s, ":") || (strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]")) {
			s = net.JoinHostPort(strings.Trim(s, "[]"), "2181")
		}
		host, port, err := net.SplitHostPort(s)
		if err != nil {
			return nil, invalid("server address %q: %v", s, err)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return nil, invalid("server address %q: bad port %q", s, port)
		}
		if host == "" {
			return nil, invalid("server address %q: empty host", s)
		}
		out = append(out, s)
	}
	return out, nil
}

// onSessionEvent feeds a go-zookeeper state to the state machine.
func (c *Client) onSessionEvent(gen uint64, conn *zk.Conn, s zk.State) {
	in, ok := inputOf(s)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.connGen {
		return
	}
	c.applyLocked(in, conn.SessionID())
}

// applyLocked runs one input through the machine and carries out its actions.
func (c *Client) applyLocked(in input, id int64) {
	a := c.m.step(in, id, time.Now())
	if a.endSession != nil && c.sess != nil {
		c.sess.cancel(a.endSession)
	}
	if a.newSession {
		c.sess = c.newSessionLocked(a.sessionIDSet)
	}
	if a.stopTimers || a.startTimers {
		c.stopTimersLocked()
	}
	if a.startTimers {
		c.startTimersLocked()
	}
	for _, ch := range a.changes {
		level := slog.LevelInfo
		if ch.State == Suspended || ch.State == Lost {
			level = slog.LevelWarn
		}
		c.log.Log(context.Background(), level, "zookeeper connection state",
			"state", ch.State.String(), "session", fmt.Sprintf("0x%x", ch.SessionID), "err", ch.Err)
		if t := c.cfg.clientTrace; t != nil && t.StateChange != nil {
			t.StateChange(ch)
		}
		c.states.push(ch)
	}
	close(c.changed)
	c.changed = make(chan struct{})
	if a.replaceConn && !c.closed {
		c.replaceConnLocked()
	}
}

// startTimersLocked starts Curator's simulated expiry: suspended for a
// whole session timeout, the session is reported Lost and the connection
// is replaced (a new session follows).
func (c *Client) startTimersLocked() {
	gen := c.timerGen
	c.lostTimer = time.AfterFunc(c.live.timeout(c.cfg.sessionTimeout), func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if gen == c.timerGen {
			c.applyLocked(inSuspendTimeout, 0)
		}
	})
}

func (c *Client) stopTimersLocked() {
	c.timerGen++
	if c.lostTimer != nil {
		c.lostTimer.Stop()
		c.lostTimer = nil
	}
}

// Close ends the session and closes the connection. Subscribers receive
// Closed. It is safe to call more than once.
func (c *Client) Close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.applyLocked(inClose, 0)
	c.closed = true
	close(c.done)
	conn := c.pending // the current connection, usable or still authenticating
	c.conn, c.pending = nil, nil
	c.connGen++
	c.states.close() // under mu: no Subscribe after Closed but ErrClosed
	c.mu.Unlock()
	if conn != nil {
		conn.Close()
	}
	c.notes.close()
	c.wg.Wait()
}

// State returns the current connection state.
func (c *Client) State() State {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m.state
}

// SessionTimeout returns the session timeout the server granted (it clamps
// the one asked for to its min/maxSessionTimeout), or the one asked for
// before the first session.
func (c *Client) SessionTimeout() time.Duration { return c.live.timeout(c.cfg.sessionTimeout) }

// Namespace returns the namespace ("" for none).
func (c *Client) Namespace() string { return string(c.cfg.namespace) }

// Trace returns the trace WithTrace set (nil when none), for recipes built
// on the client.
func (c *Client) Trace() *locktrace.Trace { return c.cfg.trace }

// Logger returns the client's logger, for recipes built on it.
func (c *Client) Logger() *slog.Logger { return c.log }

// zkLogger routes go-zookeeper's messages to slog at Debug.
type zkLogger struct{ l *slog.Logger }

func (z zkLogger) Printf(format string, args ...any) {
	z.l.Debug(fmt.Sprintf("zk: "+format, args...))
}
