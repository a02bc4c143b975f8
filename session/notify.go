package session

import (
	"context"

	"github.com/go-zookeeper/zk"
)

// A watch set with GetW, ChildrenW or ExistsW costs a channel and an entry
// in the watch table until it fires (a goroutine, when its path changed
// while it was read), and a context.AfterFunc while its ctx can end.
// A cache of thousands of nodes need not pay that per node. go-zookeeper
// also hands every notification the server sends to the client's event
// callback, from its receive loop, in the server's order: Notifications
// is that stream, and GetWatch, ChildrenWatch and ExistsWatch set a watch
// whose event comes on it alone. go-zookeeper's channel of such a watch
// is buffered and closed by go-zookeeper, so nothing waits on it: it is
// garbage once the watch fires or its connection closes.

// Notifications returns a channel that receives every node event the
// server sends this client from now on (the firing of a watch set by any
// of the W and Watch methods, by anyone), in the order the server sent
// them, over every connection and session, paths without the namespace.
// Events queue without bound until read: a reader that falls behind
// never holds up the connection. The channel closes after ctx ends, or
// once the client is closed and what was queued is delivered. It returns
// ErrClosed after Close.
//
// An event says what happened to a path, not which watch asked: two
// watches of one kind on one path fire together and are told once, and
// an event may be for a watch the reader did not set. Read the node again
// on each event; a read of a node that did not change is harmless.
// EventNotWatching comes once for each path and kind of watch a
// connection held when its session expired or it was closed (Event.Err
// says which), possibly after the client moved on to a new session and
// new watches were set there: the state changes (Subscribe) tell the new
// session, whose watches are the reader's to set again.
func (c *Client) Notifications(ctx context.Context) (<-chan Event, error) {
	return c.notes.add(ctx)
}

// notify is the part of a connection's event callback that feeds
// Notifications; it runs on go-zookeeper's receive loop and never blocks.
func (c *Client) notify(ev zk.Event) { c.notes.push(c.eventOf(ev)) }

// GetWatch is Get that also sets a data watch on path, whose event comes
// on Notifications only (EventNodeDataChanged or EventNodeDeleted). When
// the node does not exist it returns ErrNoNode and leaves no watch.
func (c *Client) GetWatch(ctx context.Context, path string) ([]byte, *Stat, error) {
	data, st, _, err := c.get(ctx, path, watchNotes)
	return data, st, err
}

// ChildrenWatch is Children that also sets a watch on path's children,
// whose event comes on Notifications only (EventNodeChildrenChanged, or
// EventNodeDeleted when path goes).
func (c *Client) ChildrenWatch(ctx context.Context, path string) ([]string, *Stat, error) {
	kids, st, _, err := c.children(ctx, path, watchNotes)
	return kids, st, err
}

// ExistsWatch is Exists that also sets a watch on path, whose event comes
// on Notifications only: EventNodeCreated when it did not exist, else
// EventNodeDataChanged or EventNodeDeleted.
func (c *Client) ExistsWatch(ctx context.Context, path string) (bool, *Stat, error) {
	ok, st, _, err := c.exists(ctx, path, watchNotes)
	return ok, st, err
}
