package engine

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math/rand/v2"
	"strings"

	"github.com/google/uuid"
	"github.com/zkrecipes/zkrecipes/session"
)

// Curator's protected mode: every node a lock creates is named
// "_c_<uuid>-" + lock name, with a UUID of its own, so that after a lost
// create reply the client can find the node it may have made, and tell
// it from everyone else's.

// protectedPrefix starts every protected-mode node: "_c_" + a 36-character
// UUID + "-", then the lock name and the sequence.
const protectedPrefix = "_c_"

// protectedPath returns parent + "/_c_<uuid>-" + name for one create, with
// a fresh random (version 4) UUID, in one allocation. The UUID must be
// unique, not secret: its bits come from the runtime's generator (ChaCha8,
// seeded by the operating system), which costs no system call.
func protectedPath(parent, name string) string {
	var u uuid.UUID
	binary.BigEndian.PutUint64(u[:8], rand.Uint64())
	binary.BigEndian.PutUint64(u[8:], rand.Uint64())
	u[6] = u[6]&0x0f | 0x40 // version 4
	u[8] = u[8]&0x3f | 0x80 // the RFC 4122 variant
	var b [36]byte
	hex.Encode(b[0:8], u[0:4])
	hex.Encode(b[9:13], u[4:6])
	hex.Encode(b[14:18], u[6:8])
	hex.Encode(b[19:23], u[8:10])
	hex.Encode(b[24:36], u[10:16])
	b[8], b[13], b[18], b[23] = '-', '-', '-', '-'
	if parent == "/" {
		parent = ""
	}
	return parent + "/" + protectedPrefix + string(b[:]) + "-" + name
}

// protectedPrefixLen is the length of "_c_" + a UUID + "-".
const protectedPrefixLen = len(protectedPrefix) + 36 + 1

// protectedPrefixOf returns the protected prefix of a node name, if it has
// one.
func protectedPrefixOf(name string) (string, bool) {
	if len(name) < protectedPrefixLen || !strings.HasPrefix(name, protectedPrefix) || name[protectedPrefixLen-1] != '-' {
		return "", false
	}
	return name[:protectedPrefixLen], true
}

// findProtected looks for our node by its protected prefix, after a lost
// create reply, and accepts a found node only if it belongs to our session.
// A node with our prefix that another session owns is not ours: it is
// removed.
func (q *queue) findProtected(ctx context.Context, sess Session, prefix string) created {
	names, err := q.Conn.Children(ctx, q.Path)
	if errors.Is(err, session.ErrNoNode) {
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
		if errors.Is(err, session.ErrNoNode) {
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
func (q *queue) dropStrays(names []string, ours string, sessID int64) []string {
	prefix, ok := protectedPrefixOf(ours)
	if !ok {
		return names
	}
	var out []string // made at the first stray: the common case copies nothing
	for i, n := range names {
		if n != ours && strings.HasPrefix(n, prefix) {
			if out == nil {
				out = append(make([]string, 0, len(names)-1), names[:i]...)
			}
			cleanupInBackground(q.Conn, session.JoinPath(q.Path, n), sessID, nil)
			continue
		}
		if out != nil {
			out = append(out, n)
		}
	}
	if out == nil {
		return names
	}
	return out
}

// ProtectedPath is protectedPath for the recipes outside the engine that
// name a node in Curator's protected mode (package nodes).
func ProtectedPath(parent, name string) string { return protectedPath(parent, name) }

// ProtectedPrefixOf is protectedPrefixOf for the recipes outside the
// engine.
func ProtectedPrefixOf(name string) (string, bool) { return protectedPrefixOf(name) }
