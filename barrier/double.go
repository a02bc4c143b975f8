package barrier

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/google/uuid"
	"github.com/zkrecipes/zkrecipes/session"
)

// Double is Curator's DistributedDoubleBarrier: members Enter together
// once enough of them are in, and Leave together once all of them are
// done. A Double is one member: give each goroutine its own. Its methods
// are safe for concurrent use, but one Enter or Leave runs at a time.
type Double struct {
	c         *session.Client
	path      string
	threshold int

	mu   sync.Mutex // guards what follows
	busy bool       // an Enter or Leave runs
	in   *member    // our member node while in the barrier
}

// New returns a member of the double barrier at path on c, which opens
// when threshold members have entered (Curator's memberQty: a threshold,
// not a limit; more may enter). It does no I/O; it returns an
// ErrInvalidArgument error for a nil client, an invalid path or a
// threshold below 1.
func New(c *session.Client, path string, threshold int) (*Double, error) {
	if c == nil {
		return nil, fmt.Errorf("%w: nil client", ErrInvalidArgument)
	}
	if err := session.ValidatePath(path); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidArgument, err)
	}
	if threshold < 1 {
		return nil, fmt.Errorf("%w: threshold %d (want 1 or more members)", ErrInvalidArgument, threshold)
	}
	return &Double{c: c, path: path, threshold: threshold}, nil
}

// Path is the barrier's path.
func (d *Double) Path() string { return d.path }

// Node is the path of our member node while this member is in the
// barrier (from a successful Enter to its Leave), else "".
func (d *Double) Node() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.in == nil {
		return ""
	}
	return d.in.path
}

// begin starts an Enter (entering) or a Leave, and returns the member in
// the barrier (nil when none).
func (d *Double) begin(entering bool) (*member, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case d.busy:
		return nil, ErrBusy
	case entering && d.in != nil:
		return nil, fmt.Errorf("%w: as %s", ErrEntered, d.in.path)
	case !entering && d.in == nil:
		return nil, ErrNotEntered
	}
	d.busy = true
	return d.in, nil
}

// end ends an Enter or Leave, with in the member now in the barrier.
func (d *Double) end(in *member) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.busy, d.in = false, in
}

// Enter creates our member node (ephemeral, named by a new UUID; missing
// parents as containers) and returns nil once the barrier is open: the
// ready node exists, or this member sees threshold members and creates
// it. Every wakeup is only a reason to look again: no member goes through
// before the barrier opens.
//
// On every failure (ctx ended, the client closed, a server error) Enter
// deletes our node before it returns an ErrNotThrough error, so that no
// one counts a member that gave up. A suspended connection is waited out.
// If the session that owns our node ends (expired, or given up by the
// client after a suspension longer than the session timeout), our node is
// gone and the others no longer count us: Enter returns an error that is
// ErrMemberLost and names the node.
func (d *Double) Enter(ctx context.Context) error {
	if err := checkContext(ctx); err != nil {
		return err
	}
	if _, err := d.begin(true); err != nil {
		return err
	}
	var in *member
	defer func() { d.end(in) }()
	wctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends the watches left behind
	// The session our node is to belong to: a loss of it after the
	// follower starts ends the wait; one before shows in join's check of
	// the node's owner.
	s, err := d.c.Session(wctx)
	if err != nil {
		return notThrough(ctx, err)
	}
	name := uuid.NewString()
	m := &member{c: d.c, path: session.JoinPath(d.path, name), name: name, owner: s.ID()}
	f, err := follow(wctx, m)
	if err != nil {
		return err
	}
	defer f.stop()
	if err := d.join(f); err != nil {
		return m.abandon(ctx, err)
	}
	if err := d.enter(f); err != nil {
		return m.abandon(ctx, err)
	}
	in = m
	return nil
}

// join creates our member node in the follower's session.
func (d *Double) join(f *follower) error {
	m := f.m
	_, err := d.c.Create(f.ctx, m.path, nil, session.Ephemeral)
	// The name is new: NodeExists is our own create, applied before a
	// connection loss and retried. Another error may come after the
	// create was applied: the caller removes the node.
	if err != nil && !errors.Is(err, session.ErrNodeExists) {
		return notThrough(f.ctx, err)
	}
	ok, st, err := d.c.Exists(f.ctx, m.path)
	switch {
	case err != nil:
		return notThrough(f.ctx, err)
	case !ok:
		return m.lost(nil)
	case st.EphemeralOwner != m.owner:
		// Made by a later session: the one we follow is gone. The node
		// is ours (its name is new) and lives with the client's session:
		// left behind, the others would count a member that gave up, so
		// it goes before the loss is told (abandon removes no node of a
		// lost member).
		lost := m.lost(fmt.Errorf("made by session 0x%x", st.EphemeralOwner))
		return errors.Join(lost, m.remove(f.ctx))
	}
	return nil
}

// enter waits until the barrier opens for f's member.
func (d *Double) enter(f *follower) error {
	m, ctx := f.m, f.ctx
	ready := session.JoinPath(d.path, ReadyNode)
	for {
		if err := f.settle(); err != nil {
			return err
		}
		// The watch first, then the listing: a ready node created after
		// the listing fires the watch.
		_, _, watch, err := d.c.ExistsW(ctx, ready)
		var kids []string
		if err == nil {
			kids, _, err = d.c.Children(ctx, d.path)
		}
		if err != nil {
			if err := f.failed(err); err != nil {
				return err
			}
			continue
		}
		switch decideEnter(kids, m.name, d.threshold) {
		case enterLost:
			return m.lost(nil)
		case enterThrough:
			return d.through(f)
		case enterOpen:
			_, err := d.c.Create(ctx, ready, nil, session.Persistent)
			if err == nil || errors.Is(err, session.ErrNodeExists) {
				return d.through(f)
			}
			if err := f.failed(err); err != nil {
				return err
			}
			continue
		}
		if err := f.wait(watch); err != nil {
			return err
		}
	}
}

// through is nil, unless the wait has ended meanwhile (the member lost,
// the client closed, ctx ended): no member goes through on a decision
// taken on a session that is gone.
func (d *Double) through(f *follower) error {
	if f.ctx.Err() != nil {
		return notThrough(f.ctx, nil)
	}
	return nil
}

// Leave deletes our member node, in the ZooKeeper recipe's order, and
// returns nil once no member is left: the lowest member (in Curator's
// order of the names) keeps its node and waits for the highest to go;
// every other one deletes its node and waits for the lowest, which goes
// last; the last out deletes the ready node. A wakeup is only a reason to
// look again: no member goes through while another is in.
//
// On every failure Leave still deletes our node (a member that gives up
// is counted as gone, and lets the others through) and returns an
// ErrNotThrough error; with a ctx already ended it deletes our node at
// once and does not wait. While our node counts, the loss of its session
// ends Leave with an ErrMemberLost error naming the node; once our node
// is deleted, Leave only waits for the others, across a new session if
// need be. It returns ErrNotEntered when this member is not in the
// barrier. When everyone has left but the ready node could not be
// deleted, it returns that error (not ErrNotThrough): a ready node left
// behind lets the next round's members through at once.
func (d *Double) Leave(ctx context.Context) error {
	if ctx == nil {
		return fmt.Errorf("%w: nil context", ErrInvalidArgument)
	}
	m, err := d.begin(false)
	if err != nil {
		return err
	}
	defer d.end(nil) // our node is deleted on every path
	if ctx.Err() != nil {
		// Leaving without waiting is still leaving.
		return errors.Join(notThrough(ctx, nil), m.remove(ctx))
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends the watches left behind
	f, err := follow(wctx, m)
	if err != nil {
		return errors.Join(err, m.remove(ctx))
	}
	defer f.stop()
	// A session lost while we were in, before the follower started.
	if s := d.c.CurrentSession(); s == nil || s.ID() != m.owner {
		return m.lost(errors.New("its session ended while in the barrier"))
	}
	err = d.leave(f)
	if err != nil && f.holding.Load() {
		return m.abandon(ctx, err)
	}
	return err
}

// leave runs the leave protocol for f's member.
func (d *Double) leave(f *follower) error {
	m, ctx := f.m, f.ctx
	for {
		if err := f.settle(); err != nil {
			return err
		}
		holding := f.holding.Load()
		kids, _, err := d.c.Children(ctx, d.path)
		if err != nil && !errors.Is(err, session.ErrNoNode) {
			if err := f.failed(err); err != nil {
				return err
			}
			continue
		}
		step, target := decideLeave(kids, m.name, holding)
		var watch <-chan session.Event
		switch step {
		case leaveLost:
			return m.lost(nil)
		case leaveLast:
			if err := d.deleteOurs(f); err != nil {
				return err
			}
			fallthrough
		case leaveDone:
			return d.deleteReady(ctx)
		case leaveWatchHighest, leaveWatchLowest:
			var ok bool
			ok, _, watch, err = d.c.ExistsW(ctx, session.JoinPath(d.path, target))
			if err != nil {
				if err := f.failed(err); err != nil {
					return err
				}
				continue
			}
			// As Curator: the watch on the lowest is set before our node
			// goes, so the lowest cannot leave unseen in between.
			if step == leaveWatchLowest && holding {
				if err := d.deleteOurs(f); err != nil {
					return err
				}
			}
			if !ok {
				continue // gone already: look again
			}
		}
		if err := f.wait(watch); err != nil {
			return err
		}
	}
}

// deleteOurs deletes our node in the leave protocol; from then on only
// the client's close ends the wait. NoNode is our node gone all the
// same, as Leave wants it: most often our own delete, applied before a
// connection loss and tried again by the client on its new connection
// (its reply was lost); else deleted by someone else, or with a session
// that ended, while we were leaving anyway. The others count us gone
// either way, so Leave goes on and waits for them (a loss of the session
// seen first by the follower has ended the wait already).
func (d *Double) deleteOurs(f *follower) error {
	err := d.c.Delete(f.ctx, f.m.path, -1)
	if err != nil && !errors.Is(err, session.ErrNoNode) {
		return notThrough(f.ctx, err)
	}
	f.holding.Store(false)
	return nil
}

// deleteReady deletes the ready node once everyone has left; another
// member may have deleted it already.
func (d *Double) deleteReady(ctx context.Context) error {
	ready := session.JoinPath(d.path, ReadyNode)
	if err := d.c.Delete(ctx, ready, -1); err != nil && !errors.Is(err, session.ErrNoNode) {
		return fmt.Errorf("barrier: everyone left, but delete %s: %w", ready, err)
	}
	return nil
}
