package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/zkrecipes/zkrecipes/internal/hold"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/locktrace"
	"github.com/zkrecipes/zkrecipes/session"
)

// SemaphoreNodes is where a semaphore keeps its nodes: Curator's
// InterProcessSemaphoreV2 layout, as the semaphore package names it.
type SemaphoreNodes struct {
	Locks     string // the path of its internal mutex (a queue of "lock-" nodes)
	Leases    string // the parent of its lease nodes
	LeaseName string // a lease node's name after the protected prefix
}

// MaxLeases reads how many leases the semaphore allows; changed, when not
// nil, closes when that may have changed (a watch on a shared count).
type MaxLeases func(ctx context.Context) (max int, changed <-chan session.Event, err error)

// Semaphore is Curator's InterProcessSemaphoreV2: a lease is an ephemeral
// sequential node under Nodes.Leases, made while holding the mutex at
// Nodes.Locks, whose holder then waits until the leases are no more than
// the maximum. Unlike Curator, which takes the mutex once per lease (so
// that two clients that each want n > 1 leases can each hold part of them
// and wait for each other forever), it makes all n of an Acquire's lease
// nodes in one hold of the mutex: a client waiting for room holds the
// mutex, so no other client can take part of the room meanwhile.
type Semaphore struct {
	Conn  Conn
	What  string // names the semaphore in errors: its String ("semaphore /s")
	Nodes SemaphoreNodes
	Data  []byte // stored in each lease node
	Max   MaxLeases
	Owner any // for re-entry checks (a semaphore is not reentrant)
	Path  string
	mutex *Lock
}

// NewSemaphore returns the semaphore at path whose nodes are where nodes
// says, named what in errors; no I/O is done.
func NewSemaphore(c Conn, what, path string, nodes SemaphoreNodes, data []byte, max MaxLeases) *Semaphore {
	driver := LeaseDriver{Leases: 1, Kind: "lock-"}
	s := &Semaphore{Conn: c, What: what, Nodes: nodes, Data: data, Max: max, Path: path,
		mutex: NewLock(c, "", what, nodes.Locks, "lock-", []string{"lock-"}, driver, nil)}
	s.Owner = s
	return s
}

// Acquire takes n leases, all or none: it waits for room (try: fails at
// once with ErrLocked when there is none), honouring ctx. Every failure
// path removes the lease nodes it made. The lease it returns holds all n;
// its context ends when the session it was taken under can no longer be
// trusted, and Release deletes all n nodes.
func (s *Semaphore) Acquire(ctx context.Context, n int, try bool) (recipes.Lease, error) {
	if err := recipes.CheckContext(ctx); err != nil {
		return nil, err
	}
	if n < 1 {
		return nil, fmt.Errorf("%w: %s: %d leases: at least one", recipes.ErrInvalidArgument, s.What, n)
	}
	a := hold.Begin(ctx, s.Conn.Trace(), locktrace.LockID{Backend: Backend, Kind: "semaphore", Name: s.Path}, try)
	for {
		le, err := s.attempt(ctx, n, try, a)
		if errors.Is(err, errSessionEnded) && ctx.Err() == nil {
			continue // the session value ended while we waited: again, under the next
		}
		if err != nil {
			a.Done(nil, err, false)
			return nil, err // not a typed nil in the interface
		}
		a.Done(le, nil, false)
		return le, nil
	}
}

// attempt takes the mutex, makes n lease nodes and waits for room, under
// one session value.
func (s *Semaphore) attempt(ctx context.Context, n int, try bool, a *hold.Acquisition) (*lease, error) {
	if err := recipes.CheckContext(ctx); err != nil {
		return nil, err
	}
	ml, _, err := s.mutex.acquire(ctx, try, a)
	if err != nil {
		return nil, err
	}
	held := ml.(*lease)
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), syncCleanupTimeout)
		defer cancel()
		_ = held.Release(rctx) // a failed delete goes on in the background
	}()
	sess := held.h.sess
	fail := attemptFailed(ctx, sess, s.What)
	q := &queue{Conn: s.Conn, What: s.What, Path: s.Nodes.Leases, LockName: s.Nodes.LeaseName,
		Kinds: []string{s.Nodes.LeaseName}, Data: s.Data, NoListing: true}
	var nodes []string
	var token int64
	giveBack := func() { // before returning, so that no one counts them; else in the background
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), syncCleanupTimeout)
		defer cancel()
		for _, node := range nodes {
			if deleteNode(dctx, s.Conn, node, sess.ID()) != nil {
				cleanupInBackground(s.Conn, node, sess.ID(), nil)
			}
		}
	}
	for range n {
		var st acquireState
		r, err := q.create(ctx, sess, &st)
		if err != nil {
			// The whole attempt is given up with the mutex it held: a
			// lease node left out is not carried to the next one.
			st.abandon(s.Conn)
			giveBack()
			return nil, err
		}
		if nodes = append(nodes, r.node); len(nodes) == 1 {
			token = r.czxid
		}
	}
	wctx, cancel := opCtx(ctx, sess)
	defer cancel()
	for {
		max, changed, err := s.Max(wctx)
		if err != nil {
			giveBack()
			return nil, fail(err)
		}
		if n > max {
			giveBack()
			return nil, fmt.Errorf("%w: %s: %d leases asked for, the semaphore allows %d", recipes.ErrInvalidArgument, s.What, n, max)
		}
		names, ev, err := s.Conn.ChildrenW(wctx, s.Nodes.Leases)
		if err != nil {
			giveBack()
			return nil, fail(err)
		}
		for _, node := range nodes {
			if !slices.Contains(names, session.BaseName(node)) {
				giveBack()
				return nil, fail(fmt.Errorf("our lease node %s is gone", node))
			}
		}
		if len(names) <= max {
			break
		}
		a.Queued()
		if try {
			giveBack()
			return nil, fmt.Errorf("%w: %s: %d leases held, the semaphore allows %d", recipes.ErrLocked, s.What, len(names)-n, max)
		}
		select {
		case <-ev:
		case <-changed:
		case <-wctx.Done():
			giveBack()
			return nil, fail(context.Cause(wctx))
		}
	}
	if err := sess.Err(); err != nil {
		giveBack()
		return nil, fail(err)
	}
	return newHolding(ctx, s.Conn, s.Owner, nodes[0], token, sess, false, nodes[1:]...), nil
}
