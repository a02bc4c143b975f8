package nodes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/session"
)

// Option configures NewPersistent.
type Option func(*options) error

type options struct {
	protected bool
	ttl       time.Duration
	retry     session.RetryPolicy
}

// Protected names the node in Curator's protected mode, "_c_<uuid>-" + its
// name (with the sequence after it, for a sequential mode): a create whose
// reply was lost is found by that prefix, so a sequential node is never
// made twice. Use it with a sequential mode.
func Protected() Option { return func(o *options) error { o.protected = true; return nil } }

// WithTTL is the TTL of a node of a TTL mode (session.PersistentWithTTL,
// session.PersistentSequentialWithTTL), and required for them.
func WithTTL(ttl time.Duration) Option {
	return func(o *options) error {
		if ttl < time.Millisecond || ttl > session.MaxTTL {
			return fmt.Errorf("%w: TTL %v (want 1ms to %v)", ErrInvalidArgument, ttl, session.MaxTTL)
		}
		o.ttl = ttl
		return nil
	}
}

// WithRetry sets the schedule of the waits between failed attempts to put
// the node back (DefaultRetry by default). A policy that gives up is asked
// again from its first attempt: the node is kept until Close.
func WithRetry(p session.RetryPolicy) Option {
	return func(o *options) error {
		if p == nil {
			return fmt.Errorf("%w: nil RetryPolicy", ErrInvalidArgument)
		}
		o.retry = p
		return nil
	}
}

// minPause is the shortest wait between failed attempts, whatever the
// policy says.
const minPause = 10 * time.Millisecond

// DefaultRetry is the default schedule between failed attempts to put a
// node back: from 100 ms, doubling, up to 5 s, with jitter, never giving
// up (the session package's ExponentialBackoff).
var DefaultRetry session.RetryPolicy = session.ExponentialBackoff{MaxRetries: math.MaxInt, MaxElapsed: math.MaxInt64}

// Persistent is Curator's PersistentNode: a node that it keeps in place
// until Close, through connection loss and new sessions; it makes it again
// when someone deletes it, and writes its data to it when it finds it with
// other data. A node of a sequential mode keeps the path of its first
// creation (it is made again there, without a new sequence number).
//
// On session loss the node is not in place (an ephemeral node is gone
// with its session; any node may have changed meanwhile unseen): the
// current Placement ends with the session's cause, and the node is put
// back once, as soon as there is a new session. Methods are safe for
// concurrent use.
type Persistent struct {
	c     *session.Client
	base  string
	mode  session.CreateMode
	opt   options
	ctx   context.Context // the keeper's life, ended by Close
	stop  context.CancelFunc
	done  chan struct{} // closed when the keeper returns
	wake  chan struct{} // new data to write
	first chan struct{} // closed at the first placement

	mu      sync.Mutex
	data    []byte
	dataGen uint64 // counts SetData calls
	written uint64 // the dataGen on the server
	path    string // the node's path once made
	tried   string // a create's target whose outcome is unknown
	place   *Placement
	gen     uint64
	changed chan struct{} // closed and replaced at each change below
	closed  bool
	fatal   error // why the node cannot be kept (ErrCannotCreate)
	leave   bool  // Close leaves the node
}

// NewPersistent starts keeping a node at path, of mode, holding data (see
// Persistent). It does no I/O on the caller's goroutine: the node is made
// in the background; Placed and WaitForInitialCreate wait for it. Bad input
// is an ErrInvalidArgument error.
func NewPersistent(c *session.Client, path string, mode session.CreateMode, data []byte, opts ...Option) (*Persistent, error) {
	return newPersistent(c, path, mode, data, false, opts...)
}

// newPersistent is NewPersistent; a node made with leave set is not
// deleted by Close (a TTL node's parent, which the server removes).
func newPersistent(c *session.Client, path string, mode session.CreateMode, data []byte, leave bool, opts ...Option) (*Persistent, error) {
	if c == nil {
		return nil, fmt.Errorf("%w: nil client", ErrInvalidArgument)
	}
	if err := session.ValidatePath(path); err != nil {
		return nil, fmt.Errorf("nodes: %w", err)
	}
	if path == "/" {
		return nil, fmt.Errorf("%w: the root cannot be kept", ErrInvalidArgument)
	}
	o := options{retry: DefaultRetry}
	for _, opt := range opts {
		if opt == nil {
			return nil, fmt.Errorf("%w: nil Option", ErrInvalidArgument)
		}
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	switch {
	case mode < session.Persistent || mode > session.PersistentSequentialWithTTL:
		return nil, fmt.Errorf("%w: create mode %v", ErrInvalidArgument, mode)
	case mode.HasTTL() && o.ttl == 0:
		return nil, fmt.Errorf("%w: mode %v needs WithTTL", ErrInvalidArgument, mode)
	case !mode.HasTTL() && o.ttl != 0:
		return nil, fmt.Errorf("%w: WithTTL with mode %v, which takes no TTL", ErrInvalidArgument, mode)
	}
	ctx, stop := context.WithCancel(context.Background())
	n := &Persistent{
		c: c, base: path, mode: mode, opt: o, ctx: ctx, stop: stop,
		done: make(chan struct{}), wake: make(chan struct{}, 1), first: make(chan struct{}),
		data: bytes.Clone(data), changed: make(chan struct{}), leave: leave,
	}
	go n.run()
	return n, nil
}

// Placed waits until the node is in place and returns its Placement. It
// returns ErrClosed after Close, an ErrCannotCreate error when the server
// refuses the node for good, and ctx's error when ctx ends first.
func (n *Persistent) Placed(ctx context.Context) (*Placement, error) {
	if err := recipes.CheckContext(ctx); err != nil {
		return nil, fmt.Errorf("nodes: %w", err)
	}
	for {
		n.mu.Lock()
		p, changed, closed, fatal := n.place, n.changed, n.closed, n.fatal
		n.mu.Unlock()
		switch {
		case closed:
			return nil, ErrClosed
		case fatal != nil:
			return nil, fatal
		case p != nil && p.Err() == nil:
			return p, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, fmt.Errorf("nodes: waiting for %s: %w", n.base, context.Cause(ctx))
		}
	}
}

// WaitForInitialCreate waits until the node has been in place once (it
// may be gone again by the time it returns: use Placed to know). Its
// errors are Placed's.
func (n *Persistent) WaitForInitialCreate(ctx context.Context) error {
	if err := recipes.CheckContext(ctx); err != nil {
		return fmt.Errorf("nodes: %w", err)
	}
	for {
		n.mu.Lock()
		changed, closed, fatal := n.changed, n.closed, n.fatal
		n.mu.Unlock()
		select {
		case <-n.first:
			return nil
		default:
		}
		switch {
		case closed:
			return ErrClosed
		case fatal != nil:
			return fatal
		}
		select {
		case <-n.first:
			return nil
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("nodes: waiting for %s: %w", n.base, context.Cause(ctx))
		}
	}
}

// Path is the node's path, with its sequence number for a sequential mode
// and its protected prefix; "" before it was first made.
func (n *Persistent) Path() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.path
}

// Data is the data the node is kept with (a copy).
func (n *Persistent) Data() []byte {
	n.mu.Lock()
	defer n.mu.Unlock()
	return bytes.Clone(n.data)
}

// SetData changes the data the node is kept with: it is written to the
// node now if it is in place, else when it is next made or found (an
// update made while disconnected is what is written on reconnection; a
// later SetData wins over an earlier one). It returns once the data is
// on the server; when ctx ends first, the data is kept all the same, and
// the error says it is not written yet.
func (n *Persistent) SetData(ctx context.Context, data []byte) error {
	if err := recipes.CheckContext(ctx); err != nil {
		return fmt.Errorf("nodes: %w", err)
	}
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return ErrClosed
	}
	n.data = bytes.Clone(data)
	n.dataGen++
	mine := n.dataGen
	n.mu.Unlock()
	select {
	case n.wake <- struct{}{}:
	default:
	}
	for {
		n.mu.Lock()
		written, changed, closed, fatal := n.written, n.changed, n.closed, n.fatal
		n.mu.Unlock()
		switch {
		case written >= mine:
			return nil
		case closed:
			return ErrClosed
		case fatal != nil:
			return fatal
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("nodes: data of %s kept, not written yet: %w", n.base, context.Cause(ctx))
		}
	}
}

// Close stops keeping the node, then deletes it: nothing makes it again
// after Close began, not even a reconnection (Curator's CURATOR-164). The
// delete is retried until ctx ends; an ephemeral node is gone with its
// session anyway, and an ephemeral node another session owns is left
// alone. The current Placement ends with ErrClosed. Close may be called
// more than once.
func (n *Persistent) Close(ctx context.Context) error {
	if err := recipes.CheckContext(ctx); err != nil {
		return fmt.Errorf("nodes: %w", err)
	}
	n.mu.Lock()
	again := n.closed
	n.closed = true
	n.mu.Unlock()
	n.stop()
	<-n.done // the keeper has stopped: no create follows the delete
	if again {
		return nil
	}
	n.mu.Lock()
	n.unplaceLocked(ErrClosed)
	n.changedLocked()
	path, tried := n.path, n.tried
	n.mu.Unlock()
	if path == "" {
		path = tried
	}
	if path == "" || n.leave {
		return nil
	}
	return n.remove(ctx, path)
}

// remove deletes the node at path, retrying until ctx ends: the node must
// not outlive Close. An ephemeral node of another session is not ours.
func (n *Persistent) remove(ctx context.Context, path string) error {
	for attempt := 0; ; attempt++ {
		err := n.deleteOnce(ctx, path)
		if err == nil || errors.Is(err, session.ErrClosed) {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("nodes: delete %s at close: %w", path, err)
		}
		if !n.pause(ctx, attempt) {
			return fmt.Errorf("nodes: delete %s at close: %w", path, errors.Join(err, context.Cause(ctx)))
		}
	}
}

func (n *Persistent) deleteOnce(ctx context.Context, path string) error {
	_, st, err := n.c.Get(ctx, path)
	if errors.Is(err, session.ErrNoNode) {
		return nil
	}
	if err != nil {
		return err
	}
	if st.EphemeralOwner != 0 {
		cur := n.c.CurrentSession()
		if cur == nil || st.EphemeralOwner != cur.ID() {
			return nil // another session's (ours ended: the server removes it)
		}
	}
	err = n.c.Delete(ctx, path, st.Version)
	if errors.Is(err, session.ErrNoNode) {
		return nil
	}
	if errors.Is(err, session.ErrBadVersion) {
		return err // changed meanwhile: look again
	}
	return err
}

// pause waits the retry policy's delay before attempt, or until ctx ends
// (false).
func (n *Persistent) pause(ctx context.Context, attempt int) bool {
	d, ok := n.opt.retry.Backoff(attempt, 0)
	if !ok {
		d, _ = n.opt.retry.Backoff(0, 0)
	}
	// A policy without delays (NoRetry) must not spin on a server that
	// keeps refusing.
	d = max(d, minPause)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
