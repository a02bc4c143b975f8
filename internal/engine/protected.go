package engine

import (
	"context"
	"errors"
	"strings"

	"github.com/go-zookeeper/zk"
	"github.com/google/uuid"
	"github.com/zkrecipes/zkrecipes/session"
)

// Curator's protected mode: every node a lock creates is named
// "_c_<uuid>-" + lock name, with a UUID of its own, so that after a lost
// create reply the client can find the node it may have made, and tell
// it from everyone else's.

// newProtectedPrefix returns a fresh "_c_<uuid>-" for one create.
func newProtectedPrefix() string { return ProtectedPrefix + uuid.NewString() + "-" }

// protectedPrefixLen is the length of "_c_" + a UUID + "-".
const protectedPrefixLen = len(ProtectedPrefix) + 36 + 1

// protectedPrefixOf returns the protected prefix of a node name, if it has
// one.
func protectedPrefixOf(name string) (string, bool) {
	if len(name) < protectedPrefixLen || !strings.HasPrefix(name, ProtectedPrefix) || name[protectedPrefixLen-1] != '-' {
		return "", false
	}
	return name[:protectedPrefixLen], true
}

// findProtected looks for our node by its protected prefix, after a lost
// create reply, and accepts a found node only if it belongs to our session.
// A node with our prefix that another session owns is not ours: it is
// removed.
func (q *Queue) findProtected(ctx context.Context, sess Session, prefix string) created {
	names, err := q.Conn.Children(ctx, q.Path)
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
		_, st, err := q.Conn.Get(ctx, node)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return created{err: err}
		}
		if st.EphemeralOwner == sess.ID() {
			return created{node: node, czxid: st.Czxid}
		}
		cleanupInBackground(q.Conn, node, st.EphemeralOwner, nil)
	}
	return created{}
}

// dropStrays removes from a listing, and from the server in the background,
// every other node with our node's protected prefix: a create of ours whose
// reply was lost and that the server applied only after findProtected
// looked (a request still in flight on a member when the listing was read
// on another). It is ours alone (the prefix holds a UUID), and left there it
// would queue ahead of us, a holder nobody releases.
func (q *Queue) dropStrays(names []string, ours string, sessID int64) []string {
	prefix, ok := protectedPrefixOf(ours)
	if !ok {
		return names
	}
	out := names[:0:0]
	for _, n := range names {
		if n != ours && strings.HasPrefix(n, prefix) {
			cleanupInBackground(q.Conn, session.JoinPath(q.Path, n), sessID, nil)
			continue
		}
		out = append(out, n)
	}
	if len(out) == len(names) {
		return names // the common case: no copy kept
	}
	return out
}
