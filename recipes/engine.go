package recipes

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/session"
)

// Queue is the shared lock engine, Curator's LockInternals: it queues an
// ephemeral sequential node under a lock path and waits, watching only what
// its Driver names, until the node owns the lock. Every failure path removes
// the node. Recipes (mutex, read/write lock, semaphores) are a Queue with a
// lock name and a Driver.
type Queue struct {
	Client   *session.Client
	Path     string   // the lock path: parent of the queue's nodes
	LockName string   // the node name after the protected prefix, e.g. "lock-"
	Kinds    []string // every lock name that may share Path (for ordering)
	Driver   Driver
	Data     []byte // stored in our node (Curator: the participant id)
	Owner    any    // the Locker, for re-entry through a lease's context
}

// Acquire waits until a node of ours owns the lock, or fails (ErrLocked at
// once when try is set and the lock is held elsewhere). A session value
// that ends while we wait is not an error: the wait goes on under the next
// value, keeping our node and its place in the queue when the ZooKeeper
// session survived (a reconnection), and with a new node when it did not.
func (q *Queue) Acquire(ctx context.Context, try bool) (*handle, error) {
	return acquireLoop(ctx, q.Client, q.Path, func(sess *session.Session, st *acquireState) (*holding, error) {
		return q.attempt(ctx, sess, st, try)
	})
}

// acquireState is what one Acquire carries from one attempt (one session
// value) to the next.
type acquireState struct {
	// kept is our node, still queued, when the last attempt's session value
	// ended; the next attempt resumes with it if its session is the same.
	kept *queued
	// drops counts the connection drops in a row while our create was out.
	drops atomic.Int32
}

// queued is our node in a lock's queue.
type queued struct {
	node    string
	token   int64
	session int64                      // the ZooKeeper session that owns it
	watches map[string]<-chan zk.Event // outstanding watches, by node name
}

// maxCreateDrops bounds the connection drops in a row while our create is
// out, after which Acquire gives up. A request the server refuses (larger
// than its jute.maxbuffer, when that is set below the client's
// session.WithMaxRequestSize) drops the connection on every try, and every
// drop suspends the client and ends the leases it holds: it must not be
// retried forever.
const maxCreateDrops = 4

// errCreateDrops: see maxCreateDrops.
var errCreateDrops = fmt.Errorf("the connection to ZooKeeper dropped %d times in a row while our create was out "+
	"(a request over the server's size limit, jute.maxbuffer, does that)", maxCreateDrops)

// noteCreateDrop counts a create that failed with a lost connection and
// returns the error to stop with once there were too many in a row.
func (st *acquireState) noteCreateDrop(err error) error {
	if st.drops.Add(1) >= maxCreateDrops {
		return fmt.Errorf("%w: last: %w", errCreateDrops, err)
	}
	return nil
}

// acquireLoop runs attempt under each new session value until it holds the
// lock or fails for another reason than the end of its session value; what
// every lock of the engine shares. A node an attempt left queued is kept
// for the next attempt if its session is the same, and removed otherwise.
func acquireLoop(ctx context.Context, c *session.Client, what string,
	attempt func(*session.Session, *acquireState) (*holding, error)) (*handle, error) {
	if err := CheckContext(ctx); err != nil {
		return nil, err
	}
	var st acquireState
	drop := func() {
		if st.kept != nil {
			cleanupInBackground(c, st.kept.node, st.kept.session, nil)
			st.kept = nil
		}
	}
	for {
		sess, err := c.Session(ctx)
		if err != nil {
			drop()
			return nil, notAcquired(ctx, what, err)
		}
		if st.kept != nil && st.kept.session != sess.ID() {
			drop() // a new session: the old one's node is gone or going
		}
		h, err := attempt(sess, &st)
		if errors.Is(err, errSessionEnded) && st.drops.Load() >= maxCreateDrops {
			err = notAcquired(ctx, what, errCreateDrops)
		}
		if errors.Is(err, errSessionEnded) {
			if ctx.Err() != nil {
				drop()
				return nil, NotAcquired(ctx)
			}
			continue // go on with the next session value
		}
		if err != nil {
			drop()
			return nil, err
		}
		return newHandle(h), nil
	}
}

// errSessionEnded: the session ended during an attempt; start over.
var errSessionEnded = errors.New("recipes: session ended while waiting")

func (q *Queue) notAcquired(ctx context.Context, err error) error {
	return notAcquired(ctx, q.Path, err)
}

// attemptFailed returns the error maker of one attempt: ctx's error when ctx
// ended, errSessionEnded (start over) when the session did, and otherwise
// err as ErrNotAcquired.
func attemptFailed(ctx context.Context, sess *session.Session, what string) func(error) error {
	return func(err error) error {
		switch {
		case ctx.Err() != nil:
			return NotAcquired(ctx)
		case sess.Err() != nil:
			return errSessionEnded
		default:
			return notAcquired(ctx, what, err)
		}
	}
}

// notAcquired is the error of an Acquire that failed: ctx's when ctx ended,
// err otherwise; both are ErrNotAcquired.
func notAcquired(ctx context.Context, what string, err error) error {
	if ctx.Err() != nil {
		return NotAcquired(ctx)
	}
	return fmt.Errorf("%w: %s: %w", ErrNotAcquired, what, err)
}

// attempt queues under one session value (creating our node, or resuming
// with the one st kept) and waits. When the session value ends, the node
// stays queued in st for the next attempt; on any other failure it is
// removed.
func (q *Queue) attempt(ctx context.Context, sess *session.Session, st *acquireState, try bool) (*holding, error) {
	if st.kept == nil {
		node, token, err := q.create(ctx, sess, st)
		if err != nil {
			return nil, err
		}
		st.kept = &queued{node: node, token: token, session: sess.ID(), watches: map[string]<-chan zk.Event{}}
	}
	h, err := q.wait(ctx, sess, st.kept, try)
	switch {
	case err == nil:
		st.kept = nil
	case errors.Is(err, errSessionEnded):
	default:
		// A refused TryAcquire or a cancelled wait leaves nothing behind
		// when it returns (a lingering node would look like a holder or
		// waiter to everyone): delete now, in the background only if the
		// connection will not let us.
		node := st.kept.node
		st.kept = nil
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), syncCleanupTimeout)
		derr := deleteNode(dctx, q.Client, node, sess.ID())
		cancel()
		if derr != nil {
			cleanupInBackground(q.Client, node, sess.ID(), nil)
		}
	}
	return h, err
}

// opCtx is ctx, also cancelled when the session ends.
func opCtx(ctx context.Context, sess *session.Session) (context.Context, context.CancelFunc) {
	c, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(sess.Context(), func() { cancel(errSessionEnded) })
	return c, func() { stop(); cancel(nil) }
}

// wait lists the children until our node owns the lock.
func (q *Queue) wait(ctx context.Context, sess *session.Session, ours *queued, try bool) (*holding, error) {
	// The wait's context (ctx, also ended by the session) is made only when
	// needed: an uncontended acquisition never waits.
	var octx context.Context
	cancel := func() {}
	defer func() { cancel() }()
	waitCtx := func() context.Context {
		if octx == nil {
			octx, cancel = opCtx(ctx, sess)
		}
		return octx
	}
	// Requests honour ctx; when nothing can cancel ctx, they run on this
	// goroutine (no hop) and the session is checked before owning.
	rctx := context.Background()
	if ctx.Done() != nil {
		rctx = waitCtx()
	}
	fail := attemptFailed(ctx, sess, q.Path)
	node, token, watches := ours.node, ours.token, ours.watches
	name := session.BaseName(node)
	for {
		names, _, err := q.Client.Children(rctx, q.Path)
		if err != nil {
			return nil, fail(err)
		}
		kids := SortChildren(names, q.Kinds...)
		d, err := q.Driver.Decide(kids, IndexOf(kids, name))
		if err != nil {
			return nil, fail(fmt.Errorf("our node %s: %w", node, err))
		}
		if d.Owns {
			return q.own(ctx, sess, node, token, fail)
		}
		if try {
			return nil, fmt.Errorf("%w: %s", ErrLocked, q.Path)
		}
		chans, gone, err := q.setWatches(rctx, watches, d.Watch, d.Refresh)
		if err != nil {
			return nil, fail(err)
		}
		if gone {
			continue // a node to watch is gone already: list again
		}
		select {
		case e := <-chans[0]:
			delete(watches, d.Watch)
			if d.FastHandoff && e.Type == zk.EventNodeDeleted && sess.Err() == nil {
				return q.own(ctx, sess, node, token, fail)
			}
		case <-chans[1]: // nil without a Refresh node
			delete(watches, d.Refresh)
		case <-waitCtx().Done():
			return nil, fail(context.Cause(octx))
		}
	}
}

// setWatches watches the named nodes ("" for none) not watched yet, with
// all requests in flight at once (one round trip), records them in watches
// and returns their channels in order; gone reports a node that no longer
// exists (list again).
func (q *Queue) setWatches(ctx context.Context, watches map[string]<-chan zk.Event,
	names ...string) (chans []<-chan zk.Event, gone bool, err error) {
	chans = make([]<-chan zk.Event, len(names))
	errs := make([]error, len(names))
	get := func(i int) {
		_, _, chans[i], errs[i] = q.Client.GetW(ctx, session.JoinPath(q.Path, names[i]))
	}
	var wg sync.WaitGroup
	first := -1 // the first request runs on this goroutine
	for i, n := range names {
		switch ch, ok := watches[n]; {
		case n == "":
		case ok:
			chans[i] = ch
		case first < 0:
			first = i
		default:
			wg.Go(func() { get(i) })
		}
	}
	if first >= 0 {
		get(first)
	}
	wg.Wait()
	for i, n := range names {
		switch {
		case n == "" || errs[i] == nil && chans[i] == watches[n]:
		case errors.Is(errs[i], zk.ErrNoNode):
			gone = true
		case errs[i] != nil:
			return nil, false, errs[i]
		default:
			watches[n] = chans[i]
		}
	}
	return chans, gone, nil
}

// own turns an owning node into a holding, trusting it only while the
// session it was created in is still trusted. A create answered while that
// session value was live ran in that session: go-zookeeper reports a new
// session (which ends the old value) before it sends anything on it, so the
// node's owner is our session without asking the server again.
func (q *Queue) own(ctx context.Context, sess *session.Session, node string, token int64,
	fail func(error) error) (*holding, error) {
	if err := sess.Err(); err != nil {
		return nil, fail(err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fail(err)
	}
	return newHolding(ctx, q.Client, q.Owner, node, token, sess, false), nil
}

// create makes our protected ephemeral sequential node and returns it with
// its czxid. The create itself cannot be abandoned half-way (it may land on
// the server after we stopped waiting), so it runs on its own; if ctx or the
// session ends first, the node it makes is removed in the background.
func (q *Queue) create(ctx context.Context, sess *session.Session, st *acquireState) (string, int64, error) {
	prefix := newProtectedPrefix()
	settle := func(r created) {
		switch {
		case r.err == nil:
			cleanupInBackground(q.Client, r.node, sess.ID(), nil)
		case !definitelyNotCreated(r.err):
			// The reply was lost: the node may exist. Find it by prefix.
			cleanupProtectedInBackground(q.Client, q.Path, prefix, sess.ID())
		}
	}
	finish := func(r created) (string, int64, error) {
		if r.err == nil && sess.Err() == nil {
			return r.node, r.czxid, nil
		}
		settle(r)
		if sess.Err() != nil {
			return "", 0, errSessionEnded
		}
		return "", 0, q.notAcquired(ctx, r.err)
	}
	if ctx.Done() == nil {
		// Nothing can cancel the wait: create on this goroutine (no hop).
		return finish(q.createProtected(sess, prefix, st))
	}
	res := make(chan created, 1)
	go func() { res <- q.createProtected(sess, prefix, st) }()
	select {
	case r := <-res:
		return finish(r)
	case <-sess.Done():
		go func() { settle(<-res) }()
		return "", 0, errSessionEnded
	case <-ctx.Done():
		go func() { settle(<-res) }()
		return "", 0, NotAcquired(ctx)
	}
}

type created struct {
	node  string
	czxid int64
	err   error
}

// definitelyNotCreated reports whether a failed create surely made no node:
// the server answered with an error (not a lost connection or an abandoned
// wait).
func definitelyNotCreated(err error) bool {
	return !session.IsRetryable(err) && !errors.Is(err, context.Canceled) &&
		!errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, errSessionEnded) &&
		!errors.Is(err, session.ErrClosed)
}

// createProtected creates prefix+LockName under Path. After a connection
// loss it looks for a node with our prefix before creating again, and
// accepts a found node only if it belongs to our session. It gives up when
// the session ends, and after too many drops in a row (st).
func (q *Queue) createProtected(sess *session.Session, prefix string, st *acquireState) created {
	// No cancellation inside a request (the caller stops waiting instead),
	// so that the common path makes no extra goroutine hop.
	ctx := context.Background()
	path := session.JoinPath(q.Path, prefix+q.LockName)
	for {
		if sess.Err() != nil {
			return created{err: errSessionEnded}
		}
		node, czxid, err := q.Client.CreateWithZxid(ctx, path, q.Data, zk.FlagEphemeral|zk.FlagSequence)
		if err == nil {
			st.drops.Store(0)
		}
		if err == nil || !session.IsRetryable(err) {
			return created{node, czxid, err}
		}
		if stop := st.noteCreateDrop(err); stop != nil {
			return created{err: stop} // retryable: the node may exist, and is looked for by prefix
		}
		if sess.Err() != nil {
			return created{err: errSessionEnded}
		}
		r := q.findProtected(sess.Context(), sess, prefix)
		if r.err != nil || r.node != "" {
			return r
		}
	}
}

// findProtected looks for our node by its protected prefix. A node with our
// prefix that another session owns is not ours: it is removed.
func (q *Queue) findProtected(ctx context.Context, sess *session.Session, prefix string) created {
	names, _, err := q.Client.Children(ctx, q.Path)
	if errors.Is(err, zk.ErrNoNode) {
		return created{}
	}
	if err != nil {
		return created{err: err}
	}
	for _, n := range names {
		if !strings.HasPrefix(n, prefix) {
			continue
		}
		node := session.JoinPath(q.Path, n)
		_, st, err := q.Client.Get(ctx, node)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return created{err: err}
		}
		if st.EphemeralOwner == sess.ID() {
			return created{node: node, czxid: st.Czxid}
		}
		cleanupInBackground(q.Client, node, st.EphemeralOwner, nil)
	}
	return created{}
}

// acquireAt creates our node with a fixed sequence and owns it at once.
func (q *Queue) acquireAt(ctx context.Context, seq int64, guard string) (*holding, error) {
	sess, err := q.Client.Session(ctx)
	if err != nil {
		return nil, q.notAcquired(ctx, err)
	}
	prefix := newProtectedPrefix()
	path := session.JoinPath(q.Path, fmt.Sprintf("%s%s%0*d", prefix, q.LockName, seqDigits, seq))
	node, czxid, err := q.Client.CreateWithZxid(ctx, path, q.Data, zk.FlagEphemeral, guard)
	if err != nil {
		if !definitelyNotCreated(err) && !errors.Is(err, session.ErrGuardFailed) {
			cleanupProtectedInBackground(q.Client, q.Path, prefix, sess.ID())
		}
		return nil, q.notAcquired(ctx, err)
	}
	h, err := q.own(ctx, sess, node, czxid, func(err error) error { return q.notAcquired(ctx, err) })
	if err != nil {
		cleanupInBackground(q.Client, node, sess.ID(), nil)
	}
	return h, err
}
