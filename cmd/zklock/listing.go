package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/zkrecipes/zkrecipes/exclusive"
	"github.com/zkrecipes/zkrecipes/leader"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/rwlock"
	"github.com/zkrecipes/zkrecipes/semaphore"
	"github.com/zkrecipes/zkrecipes/session"
	"github.com/zkrecipes/zkrecipes/znode"
)

// The roles ls shows, and the kind of a node it cannot classify (the other
// kinds are lockKind's names).
const (
	roleHolder  = "holder"
	roleWaiter  = "waiter"
	roleUnknown = "unknown"
	kindUnknown = "unknown"
)

// errNoLock: the lock path does not exist (ls exits exitNoLock).
var errNoLock = errors.New("no such lock path")

// lockEntry is one node under a lock path, as ls prints it.
type lockEntry struct {
	role    string // roleHolder, roleWaiter or roleUnknown
	kind    string // "mutex", "read", "write", "exclusive" or kindUnknown
	node    string // the node's name
	session int64  // its ephemeral owner (0 for a persistent node)
	data    []byte
	created time.Time // a holder's node's creation time (the server's clock); zero when not known
}

// nodeKind classifies a node under a lock path by its name: the mutex's
// "...lock-<seq>", the read/write lock's "...__READ__<seq>" and
// "...__WRIT__<seq>", the exclusive lock's "lock"; anything else is
// kindUnknown.
func nodeKind(name string) string {
	if name == exclusive.NodeName {
		return kindExclusive.String()
	}
	c, ok := znode.ParseChild(name, mutex.LockName, rwlock.ReadName, rwlock.WriteName, leader.LatchName)
	if !ok {
		return kindUnknown
	}
	switch c.Kind {
	case leader.LatchName:
		return kindLeader.String()
	case mutex.LockName:
		return kindMutex.String()
	case rwlock.ReadName:
		return kindRead.String()
	case rwlock.WriteName:
		return kindWrite.String()
	}
	return kindUnknown
}

// isReadWrite reports whether a node is a reader's or a writer's.
func isReadWrite(name string) bool {
	k := nodeKind(name)
	return k == kindRead.String() || k == kindWrite.String()
}

// listLock lists the nodes under the lock path: first the exclusive lock's
// node (the holder: its waiters have no nodes), then the queue of the mutex
// or the read/write lock in queue order, with the holders as the library
// decides them, then any other node, by name. Nodes of a kind zklock does
// not know are listed with role and kind "unknown". A path that does not
// exist is an error that is errNoLock (a free lock whose path exists lists
// nothing).
func listLock(ctx context.Context, c *session.Client, path string) ([]lockEntry, error) {
	names, _, err := c.Children(ctx, path)
	if errors.Is(err, session.ErrNoNode) {
		return nil, fmt.Errorf("%w: %s", errNoLock, path)
	}
	if err != nil {
		return nil, err
	}
	if slices.Contains(names, semaphore.LeasesNode) {
		return listSemaphore(ctx, c, path)
	}
	var out []lockEntry
	add := func(name, role, kind string) error {
		data, st, err := c.Get(ctx, session.JoinPath(path, name))
		switch {
		case errors.Is(err, session.ErrNoNode):
			return nil // gone meanwhile
		case err != nil:
			return err
		}
		e := lockEntry{role: role, kind: kind, node: name, session: st.EphemeralOwner, data: data}
		if role == roleHolder {
			e.created = time.UnixMilli(st.Ctime)
		}
		out = append(out, e)
		return nil
	}

	if slices.Contains(names, exclusive.NodeName) {
		if err := add(exclusive.NodeName, roleHolder, kindExclusive.String()); err != nil {
			return nil, err
		}
	}

	ps, err := queueParticipants(ctx, c, path, names)
	if err != nil {
		return nil, err
	}
	listed := map[string]bool{exclusive.NodeName: true}
	for _, p := range ps {
		listed[p.Name] = true
		e := lockEntry{role: roleWaiter, kind: nodeKind(p.Name), node: p.Name, session: p.SessionID, data: p.Data}
		switch {
		case e.kind == kindUnknown:
			e.role = roleUnknown
		case p.Holder:
			e.role, e.created = roleHolder, p.Created
		}
		out = append(out, e)
	}

	// The rest of the first listing: nodes that are not queue entries (no
	// sequence number), or queue entries gone meanwhile (add skips them).
	slices.Sort(names)
	for _, n := range names {
		if listed[n] {
			continue
		}
		if err := add(n, roleUnknown, kindUnknown); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// queueParticipants lists the queue entries under path, holders marked by
// the library's own rules: the read/write lock's when readers or writers
// queue there, else the mutex's. (The read/write lock counts any other
// queued node, a mutex's included, as a writer, as the mutex counts every
// node ahead of its own: so the read/write lock's rules also hold for a
// mutex queued in the same parent.) If readers or writers show up only in
// this listing, it is done again with the read/write lock's rules. An
// election's nodes (latches) are listed with the election's rules.
func queueParticipants(ctx context.Context, c *session.Client, path string, names []string) ([]znode.Participant, error) {
	if slices.ContainsFunc(names, func(n string) bool { return nodeKind(n) == kindLeader.String() }) {
		e, err := leader.NewLatch(c, path, "")
		if err != nil {
			return nil, err
		}
		return e.Participants(ctx)
	}
	rw := slices.ContainsFunc(names, isReadWrite)
	for {
		var (
			ps  []znode.Participant
			err error
		)
		if rw {
			var l *rwlock.RWLock
			if l, err = rwlock.New(c, path); err == nil {
				ps, err = l.Participants(ctx)
			}
		} else {
			var m *mutex.Mutex
			if m, err = mutex.New(c, path); err == nil {
				ps, err = m.Participants(ctx)
			}
		}
		if err != nil {
			return nil, err
		}
		if rw || !slices.ContainsFunc(ps, func(p znode.Participant) bool { return isReadWrite(p.Name) }) {
			return ps, nil
		}
		rw = true
	}
}

// listSemaphore lists a semaphore's lease nodes as holders and the queue of
// its internal mutex (waiters: the first waits for room while holding the
// mutex, the others for the mutex). Without the maximum, which only the
// clients know, the nodes of the one client waiting for room cannot be
// told from the holders': they are listed as holders too.
func listSemaphore(ctx context.Context, c *session.Client, path string) ([]lockEntry, error) {
	s, err := semaphore.New(c, path, 1) // the maximum is not used: see above
	if err != nil {
		return nil, err
	}
	ls, err := s.Leases(ctx)
	if err != nil {
		return nil, err
	}
	var out []lockEntry
	for _, p := range ls {
		out = append(out, lockEntry{role: roleHolder, kind: kindSemaphore.String(), node: semaphore.LeasesNode + "/" + p.Name,
			session: p.SessionID, data: p.Data, created: p.Created})
	}
	m, err := mutex.New(c, session.JoinPath(path, semaphore.LocksNode))
	if err != nil {
		return nil, err
	}
	ws, err := m.Participants(ctx)
	if err != nil {
		return nil, err
	}
	for _, p := range ws {
		out = append(out, lockEntry{role: roleWaiter, kind: kindSemaphore.String(), node: semaphore.LocksNode + "/" + p.Name,
			session: p.SessionID, data: p.Data})
	}
	return out, nil
}
