package cache

import (
	"errors"
	"fmt"
	"strings"

	"github.com/zkrecipes/zkrecipes/session"
)

// A node whose ACL refuses the cache's identity the read of its data or
// children is out of the view: the same read with the same credentials
// meets the same answer, so retrying it would only hide the refusal (and,
// on the first load, stall Initialized forever). The cache keeps the
// refused paths, says them in Freshness.Refused and sends Refused once for
// each; it reads them again when something may have changed: their
// parent's children, or the connection. No watch stands on a refused node
// (a read that sets one is refused; an exists watch is set, but
// ZooKeeper 3.8 told the refused identity nothing of the node's deletion,
// as TestRefused found): the path itself, refused, is read again on a
// reconnection only. Nor did ZooKeeper 3.8 tell the cache's watch of a
// node whose ACL was changed to refuse it, when the node was then written
// (a change of ACL fires no watch at all): such a node stays in the view
// as last read until the next resynchronisation, which finds it refused
// (refreshNode's refusal covers a change of ACL between a notification
// and its read).

// maxNamed bounds the paths Freshness.Refused names.
const maxNamed = 5

// isRefusal says whether err is a node's ACL refusing the read. A session
// whose credentials were refused (ErrAuthFailed) is not a node's refusal:
// the client tells it as the session's end.
func isRefusal(err error) bool { return errors.Is(err, session.ErrNoAuth) }

// refusedError is Freshness.Refused for the refused paths.
func refusedError(refused map[string]error) error {
	if len(refused) == 0 {
		return nil
	}
	paths := sortedKeys(refused)
	named := paths[:min(len(paths), maxNamed)]
	more := ""
	if len(paths) > len(named) {
		more = fmt.Sprintf(" and %d more", len(paths)-len(named))
	}
	return fmt.Errorf("cache: the ACL refuses this client the read of %d node(s) (%s%s): %w",
		len(paths), strings.Join(named, ", "), more, refused[paths[0]])
}

// refuseLocked records p as refused with err, and returns the Refused
// event when it is news.
func (x *Cache) refuseLocked(p string, err error) []Event {
	if _, ok := x.refused[p]; ok {
		x.refused[p] = err
		return nil
	}
	x.refused[p] = err
	x.c.Logger().Warn("cache: read refused by the node's ACL", "path", p, "err", err)
	return []Event{{Type: Refused, Node: Node{Path: p}, Err: err}}
}

// forgetRefusedLocked forgets the refusals of p and of the nodes below it:
// they are read again, or gone.
func (x *Cache) forgetRefusedLocked(p string) {
	for r := range x.refused {
		if r == p || x.below(r, p) {
			delete(x.refused, r)
		}
	}
}

// below says whether p is strictly below top.
func (x *Cache) below(p, top string) bool {
	if top == "/" {
		return p != "/"
	}
	return len(p) > len(top) && p[len(top)] == '/' && strings.HasPrefix(p, top)
}

// refuse takes p, which the view held, out of it after a refused read: a
// Deleted event for it and its subtree (they left the view), then
// Refused.
func (x *Cache) refuse(p string, err error) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.events.push(x.removeLocked(p)...)
	x.events.push(x.refuseLocked(p, err)...)
	return nil
}
