package session

import (
	"context"
	"fmt"

	"github.com/go-zookeeper/zk"
)

// EventType is what a watch saw.
type EventType int

// The watch events. A watch fires once, with one event, and its channel is
// then closed.
const (
	// EventNodeCreated: the watched node was created (ExistsW).
	EventNodeCreated EventType = iota + 1
	// EventNodeDeleted: the watched node was deleted.
	EventNodeDeleted
	// EventNodeDataChanged: the watched node's data was written.
	EventNodeDataChanged
	// EventNodeChildrenChanged: a child of the watched node was created or
	// deleted (ChildrenW).
	EventNodeChildrenChanged
	// EventNotWatching: the watch ended without seeing a change, because
	// its session expired or the client was closed; Event.Err says which.
	// Read the node again (under a new session) to know where it stands.
	EventNotWatching
)

func (t EventType) String() string {
	switch t {
	case EventNodeCreated:
		return "NodeCreated"
	case EventNodeDeleted:
		return "NodeDeleted"
	case EventNodeDataChanged:
		return "NodeDataChanged"
	case EventNodeChildrenChanged:
		return "NodeChildrenChanged"
	case EventNotWatching:
		return "NotWatching"
	}
	return fmt.Sprintf("EventType(%d)", int(t))
}

// Event is what a watch (GetW, ExistsW, ChildrenW) reports.
type Event struct {
	Type EventType
	// Path is the watched node's path, as the client was given it
	// (without its namespace).
	Path string
	// Err is why the watch ended, for EventNotWatching (ErrSessionExpired,
	// or ErrClosing when its connection was closed); nil otherwise.
	Err error
}

// eventTypes maps go-zookeeper's event types to ours.
var eventTypes = map[zk.EventType]EventType{
	zk.EventNodeCreated:         EventNodeCreated,
	zk.EventNodeDeleted:         EventNodeDeleted,
	zk.EventNodeDataChanged:     EventNodeDataChanged,
	zk.EventNodeChildrenChanged: EventNodeChildrenChanged,
	zk.EventNotWatching:         EventNotWatching,
}

// watchOf turns a go-zookeeper watch channel into one of Events, for a
// watch the watch table cannot arm (an event of its path came while it was
// read: watchtable.go). go-zookeeper creates the channel itself, so the
// event is carried over by a goroutine that lives until the watch fires,
// its connection is closed (go-zookeeper then ends every watch with
// EventNotWatching), or ctx ends: then the channel is closed without an
// event, and a watch the caller gave up on pins no goroutine (go-zookeeper
// keeps only its own channel, until the node changes or the connection
// goes). A nil channel (no watch was left) stays nil.
func (c *Client) watchOf(ctx context.Context, zch <-chan zk.Event) <-chan Event {
	if zch == nil {
		return nil
	}
	out := make(chan Event, 1)
	c.watches.carried.Add(1)
	go func() {
		var (
			ev  Event
			got bool
		)
		select {
		case zev, ok := <-zch:
			if ok {
				ev, got = c.eventOf(zev), true
			}
		case <-ctx.Done():
		}
		c.watches.carried.Add(-1) // before the reader can tell it ended
		if got {
			out <- ev
		}
		close(out)
	}()
	return out
}

// eventOf converts go-zookeeper's watch event. A type it does not map
// (none is sent to a node watch) reads as the end of the watch.
func (c *Client) eventOf(ev zk.Event) Event {
	t, ok := eventTypes[ev.Type]
	if !ok {
		t = EventNotWatching
	}
	return Event{Type: t, Path: c.cfg.namespace.strip(ev.Path), Err: ev.Err}
}
