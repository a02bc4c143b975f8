package nodes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/session"
)

// run is the keeper: the one goroutine that makes, watches and writes the
// node, session after session, until Close.
func (n *Persistent) run() {
	defer close(n.done)
	attempt := 0
	for n.ctx.Err() == nil {
		sess, err := n.c.Session(n.ctx)
		if err != nil {
			if errors.Is(err, session.ErrClosed) {
				n.mu.Lock()
				n.unplaceLocked(session.ErrClosed)
				n.changedLocked()
				n.mu.Unlock()
				<-n.ctx.Done() // nothing to keep on a closed client: wait for Close
			}
			return
		}
		err = n.keep(sess)
		switch {
		case err == nil:
			attempt = 0
		case n.ctx.Err() != nil:
			return
		case permanent(err):
			n.mu.Lock()
			n.fatal = fmt.Errorf("%w: %s: %w", ErrCannotCreate, n.base, err)
			n.changedLocked()
			n.mu.Unlock()
			<-n.ctx.Done()
			return
		default:
			n.c.Logger().Debug("nodes: keeping a node failed; retrying", "path", n.base, "err", err)
			if !n.pause(n.ctx, attempt) {
				return
			}
			attempt++
		}
	}
}

// permanent reports an error that the same request meets again: the node
// cannot be made until the server or the caller changes something.
func permanent(err error) bool {
	return errors.Is(err, session.ErrTTLDisabled) || errors.Is(err, recipes.ErrRefused) ||
		errors.Is(err, recipes.ErrInvalidArgument) || errors.Is(err, session.ErrNoChildrenForEphemerals) ||
		errors.Is(err, session.ErrInvalidACL)
}

// keep puts the node in place under sess and keeps it there until the
// session ends (nil), the node is deleted (nil: the caller makes it again
// at once), or a request fails (its error).
func (n *Persistent) keep(sess *session.Session) error {
	ctx, cancel := context.WithCancel(n.ctx)
	defer cancel()
	stop := context.AfterFunc(sess.Context(), cancel)
	defer stop()
	cause := func() error {
		if err := sess.Err(); err != nil {
			return err
		}
		return ErrClosed
	}
	// An error once the session or the node ended is that end's, not a
	// failure to back off from.
	failed := func(err error) error {
		n.unplace(cause())
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	path, err := n.ensure(ctx, sess)
	if err != nil || path == "" {
		return failed(err)
	}
	// czxid is the node's as first seen in place: a node with another
	// was made by someone else after ours was deleted (a watch tells of
	// the delete only once the node may be back already), so it is not
	// ours, whatever its owner, until we have made it ours again.
	var czxid int64
	for {
		ok, st, ev, err := n.c.ExistsW(ctx, path)
		if err != nil {
			return failed(err)
		}
		if !ok || (st.EphemeralOwner != 0 && st.EphemeralOwner != sess.ID()) || (czxid != 0 && st.Czxid != czxid) {
			n.unplace(ErrDeleted)
			return nil
		}
		czxid = st.Czxid
		n.placeAt(path, *st)
		for waiting := true; waiting; {
			if err := n.writeData(ctx, path); err != nil {
				return failed(err)
			}
			select {
			case <-ev:
				// Deleted: the next ExistsW tells; a data change, or the
				// watch's end: watch again.
				waiting = false
			case <-n.wake:
			case <-ctx.Done():
				n.unplace(cause())
				return nil
			}
		}
	}
}

// writeData writes the data that SetData changed since the last write.
func (n *Persistent) writeData(ctx context.Context, path string) error {
	n.mu.Lock()
	data, gen, written := n.data, n.dataGen, n.written
	n.mu.Unlock()
	if gen == written {
		return nil
	}
	_, err := n.c.Set(ctx, path, data, -1)
	if errors.Is(err, session.ErrNoNode) {
		return nil // the watch tells; the data goes with the create
	}
	if err != nil {
		return err
	}
	n.markWritten(gen)
	return nil
}

// ensure makes the node, or finds it, with our data, and returns its path
// ("" when it is another session's ephemeral node and we waited for it to
// go).
func (n *Persistent) ensure(ctx context.Context, sess *session.Session) (string, error) {
	path, err := n.makeOrFind(ctx, sess)
	if err != nil || path == "" || !n.opt.protected || !n.mode.IsSequential() {
		return path, err
	}
	// A copy of our first create, made by the server after we looked for
	// it (a request still in flight when the reply was lost), has our
	// prefix and another sequence number: it is ours alone, and left there
	// it would be a node nobody keeps (the engine's queues drop theirs
	// the same way).
	prefix, _ := engine.ProtectedPrefixOf(session.BaseName(path))
	if err := engine.DeleteProtected(ctx, engine.Client(n.c), session.ParentPath(path), prefix, session.BaseName(path), sess.ID()); err != nil {
		return "", err
	}
	return path, nil
}

// makeOrFind is ensure without the removal of strays.
func (n *Persistent) makeOrFind(ctx context.Context, sess *session.Session) (string, error) {
	n.mu.Lock()
	data, gen, path, named := n.data, n.dataGen, n.path, n.named
	n.mu.Unlock()
	mode, target := n.mode, path
	switch {
	case path != "":
		mode = mode.Unsequenced() // a sequential node keeps its first path
	case !n.opt.protected:
		target = n.base
	case named == "":
		target = engine.ProtectedPath(session.ParentPath(n.base), session.BaseName(n.base))
		n.mu.Lock()
		n.named = target
		n.mu.Unlock()
	default:
		// An earlier create under this name may have made the node, its
		// reply lost: look before creating again, with the same name.
		target = named
		if found, err := n.findProtected(ctx, target); err != nil || found != "" {
			return n.found(ctx, sess, found, err)
		}
	}
	n.setTried(target, mode)
	created, err := n.create(ctx, target, data, mode)
	switch {
	case err == nil:
		n.made(created, gen)
		return created, nil
	case errors.Is(err, session.ErrNodeExists) && !mode.IsSequential():
		return n.adopt(ctx, sess, target)
	case mode.IsSequential() && n.opt.protected && session.IsRetryable(err):
		// The reply was lost: the node may be there, under our prefix.
		found, ferr := n.findProtected(ctx, target)
		if ferr != nil || found == "" {
			return "", errors.Join(err, ferr)
		}
		return n.found(ctx, sess, found, nil)
	}
	return "", err
}

// found takes the node findProtected found (unless err) as ours.
func (n *Persistent) found(ctx context.Context, sess *session.Session, path string, err error) (string, error) {
	if err != nil {
		return "", err
	}
	n.made(path, 0)
	return n.adopt(ctx, sess, path)
}

// create is the request of mode.
func (n *Persistent) create(ctx context.Context, path string, data []byte, mode session.CreateMode) (string, error) {
	if mode.HasTTL() {
		return n.c.CreateTTL(ctx, path, data, mode, n.opt.ttl)
	}
	return n.c.Create(ctx, path, data, mode)
}

// adopt takes an existing node at path as ours, writing our data to it
// when it holds other data. Another session's ephemeral node is not ours:
// it waits for it to go and returns "".
func (n *Persistent) adopt(ctx context.Context, sess *session.Session, path string) (string, error) {
	n.mu.Lock()
	data, gen := n.data, n.dataGen
	n.mu.Unlock()
	got, st, err := n.c.Get(ctx, path)
	if errors.Is(err, session.ErrNoNode) {
		return "", nil // gone meanwhile: make it again
	}
	if err != nil {
		return "", err
	}
	if st.EphemeralOwner != 0 && st.EphemeralOwner != sess.ID() {
		// Another session's: ours cannot be made until it goes (with its
		// session, or its owner's Close).
		n.c.Logger().Warn("nodes: the node is another session's ephemeral node; waiting for it to go",
			"path", path, "owner", fmt.Sprintf("0x%x", st.EphemeralOwner))
		ok, _, ev, err := n.c.ExistsW(ctx, path)
		if err != nil || !ok {
			return "", err
		}
		select {
		case <-ev:
		case <-ctx.Done():
		}
		return "", nil
	}
	if !bytes.Equal(got, data) {
		if _, err := n.c.Set(ctx, path, data, st.Version); err != nil {
			return "", err // a bad version: someone wrote meanwhile; try again
		}
	}
	n.made(path, gen)
	return path, nil
}

// findProtected looks, after a lost create reply, for the node the create
// may have made: the child of the parent with target's protected prefix,
// if it is ours (an ephemeral node of our session, or a persistent one).
func (n *Persistent) findProtected(ctx context.Context, target string) (string, error) {
	prefix, ok := engine.ProtectedPrefixOf(session.BaseName(target))
	if !ok {
		return "", nil
	}
	parent := session.ParentPath(target)
	kids, _, err := n.c.Children(ctx, parent)
	if errors.Is(err, session.ErrNoNode) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	for _, k := range kids {
		if strings.HasPrefix(k, prefix) {
			return session.JoinPath(parent, k), nil
		}
	}
	return "", nil
}

// setTried notes a create's target while its outcome is unknown, for
// Close to delete; a sequential one's name is not known before the reply.
func (n *Persistent) setTried(target string, mode session.CreateMode) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.path == "" && !mode.IsSequential() {
		n.tried = target
	}
}

// made records the node's path, and that its data of dataGen gen is on the
// server.
func (n *Persistent) made(path string, gen uint64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.path, n.tried = path, ""
	if gen > n.written {
		n.written = gen
		n.changedLocked()
	}
}

func (n *Persistent) markWritten(gen uint64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if gen > n.written {
		n.written = gen
		n.changedLocked()
	}
}

// placeAt starts a Placement, unless one is under way.
func (n *Persistent) placeAt(path string, st session.Stat) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.place != nil && n.place.Err() == nil {
		return
	}
	n.gen++
	n.place = newPlacement(path, st, n.gen)
	if n.gen == 1 {
		close(n.first)
	}
	n.changedLocked()
}

func (n *Persistent) unplace(cause error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.unplaceLocked(cause)
	n.changedLocked()
}

func (n *Persistent) unplaceLocked(cause error) {
	if n.place != nil {
		n.place.cancel(cause)
	}
}

// changedLocked wakes the waiters of Placed, WaitForInitialCreate and
// SetData.
func (n *Persistent) changedLocked() {
	close(n.changed)
	n.changed = make(chan struct{})
}
