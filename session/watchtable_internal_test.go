package session

import (
	"context"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The watch table's windows, driven in go-zookeeper's order by hand: the
// receive loop calls the event callback (fire) and then serves its own
// channel (zch), while the reading goroutine arms the watch after the
// reply. A real server cannot place an event inside those windows on
// demand.

// tableWait bounds a wait for an event that must come; reaching it fails.
const tableWait = 10 * time.Second

// zkChan is go-zookeeper's watch channel as addWatcher makes it.
func zkChan() chan zk.Event { return make(chan zk.Event, 1) }

// serve is go-zookeeper's notifyWatches for one channel.
func serve(zch chan zk.Event, ev zk.Event) {
	zch <- ev
	close(zch)
}

func eventWithin(t *testing.T, ch <-chan Event) Event {
	t.Helper()
	select {
	case e, ok := <-ch:
		require.True(t, ok, "the watch's channel closed without an event")
		return e
	case <-time.After(tableWait):
		t.Fatal("the watch never fired")
	}
	return Event{}
}

func noEventYet(t *testing.T, ch <-chan Event, why string) {
	t.Helper()
	select {
	case e, ok := <-ch:
		t.Fatalf("%s: got %v (open %v)", why, e, ok)
	default:
	}
}

func tableEmpty(t *testing.T, c *Client) {
	t.Helper()
	c.watches.mu.Lock()
	defer c.watches.mu.Unlock()
	assert.Empty(t, c.watches.pending, "reads left pending")
	assert.Empty(t, c.watches.armed, "watches left armed")
	assert.Zero(t, c.watches.carried.Load(), "watches left carried")
}

func tableClient() (*Client, *zk.Conn) {
	return &Client{cfg: config{namespace: "/ns"}}, new(zk.Conn)
}

// An event of the path that came before the read's reply is older than
// the read: it must not fire the watch, whose own event comes later.
func TestWatchTableEventBeforeReply(t *testing.T) {
	c, conn := tableClient()
	k := watchKey{conn, "/ns/a"}
	c.watches.pend(k)
	c.fire(conn, zk.Event{Type: zk.EventNodeDataChanged, Path: "/ns/a"}) // an older watch's
	zch := zkChan()                                                      // go-zookeeper arms at the reply
	ch := c.arm(context.Background(), k, zch, kindData)
	noEventYet(t, ch, "an event older than the read fired the watch")

	ev := zk.Event{Type: zk.EventNodeDeleted, Path: "/ns/a"}
	c.fire(conn, ev)
	serve(zch, ev)
	assert.Equal(t, Event{Type: EventNodeDeleted, Path: "/a"}, eventWithin(t, ch))
	tableEmpty(t, c)
}

// The watch's own event can pass the callback after the reply and before
// the reading goroutine arms the watch: it must still be delivered.
func TestWatchTableEventBeforeArming(t *testing.T) {
	c, conn := tableClient()
	k := watchKey{conn, "/ns/a"}
	c.watches.pend(k)
	zch := zkChan()
	ev := zk.Event{Type: zk.EventNodeDeleted, Path: "/ns/a"}
	c.fire(conn, ev) // the receive loop, before the reading goroutine runs
	serve(zch, ev)
	ch := c.arm(context.Background(), k, zch, kindData)
	assert.Equal(t, Event{Type: EventNodeDeleted, Path: "/a"}, eventWithin(t, ch))
	tableEmpty(t, c)
}

// An armed watch fires on the events of its path, kind and connection
// only, as go-zookeeper's own channels do; EventNotWatching (an expiry, a
// close) ends every kind.
func TestWatchTableKinds(t *testing.T) {
	c, conn := tableClient()
	arm := func(path string, kind watchKind) <-chan Event {
		k := watchKey{conn, path}
		c.watches.pend(k)
		return c.arm(context.Background(), k, zkChan(), kind)
	}
	data, exist, child := arm("/ns/a", kindData), arm("/ns/a", kindExist), arm("/ns/a", kindChild)
	other := arm("/ns/b", kindData)

	c.fire(new(zk.Conn), zk.Event{Type: zk.EventNodeDeleted, Path: "/ns/a"}) // another connection's
	c.fire(conn, zk.Event{Type: zk.EventNodeChildrenChanged, Path: "/ns/a"})
	assert.Equal(t, EventNodeChildrenChanged, eventWithin(t, child).Type)
	noEventYet(t, data, "a data watch fired on a child event")
	noEventYet(t, exist, "an exists watch fired on a child event")

	c.fire(conn, zk.Event{Type: zk.EventNodeCreated, Path: "/ns/a"})
	assert.Equal(t, EventNodeCreated, eventWithin(t, exist).Type)
	noEventYet(t, data, "a data watch fired on NodeCreated")

	c.fire(conn, zk.Event{Type: zk.EventNotWatching, Path: "/ns/a", Err: ErrSessionExpired})
	e := eventWithin(t, data)
	assert.Equal(t, EventNotWatching, e.Type)
	assert.ErrorIs(t, e.Err, ErrSessionExpired)
	noEventYet(t, other, "another path's watch fired")

	c.fire(conn, zk.Event{Type: zk.EventNodeDataChanged, Path: "/ns/b"})
	assert.Equal(t, EventNodeDataChanged, eventWithin(t, other).Type)
	tableEmpty(t, c)
}

// A watch whose context ends is closed without an event and leaves the
// table, in both of its forms, and one that fires stops its context's
// callback (a long-lived context does not gather them).
func TestWatchTableContextEnds(t *testing.T) {
	c, conn := tableClient()
	k := watchKey{conn, "/ns/a"}
	ctx, cancel := context.WithCancel(context.Background())

	c.watches.pend(k)
	c.fire(conn, zk.Event{Type: zk.EventNodeDataChanged, Path: "/ns/a"}) // the carried form
	carried := c.arm(ctx, k, zkChan(), kindData)
	c.watches.pend(k)
	armed := c.arm(ctx, k, zkChan(), kindData)
	c.watches.pend(k)
	fired := c.arm(ctx, k, zkChan(), kindChild)
	c.fire(conn, zk.Event{Type: zk.EventNodeChildrenChanged, Path: "/ns/a"})
	assert.Equal(t, EventNodeChildrenChanged, eventWithin(t, fired).Type)

	cancel()
	for _, ch := range []<-chan Event{armed, carried} {
		select {
		case e, ok := <-ch:
			assert.False(t, ok, "an event after the context ended: %v", e)
		case <-time.After(tableWait):
			t.Fatal("the channel stayed open after its context ended")
		}
	}
	tableEmpty(t, c)
}

// A read that left no watch (an error, a node that is not there for GetW)
// leaves nothing in the table.
func TestWatchTableNoWatch(t *testing.T) {
	c, conn := tableClient()
	k := watchKey{conn, "/ns/a"}
	c.watches.pend(k)
	assert.Nil(t, c.arm(context.Background(), k, nil, kindData))
	tableEmpty(t, c)
}
