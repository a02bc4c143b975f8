package session

import (
	"sync"
	"sync/atomic"
)

// A create's zxid, read off the wire.
//
// go-zookeeper has no create2, so a create does not return the new node's
// Stat, and a lock's fencing token is that node's czxid. The zxid is on the
// wire all the same: every reply begins with a header (xid, zxid, error), and
// the server stamps the reply to a write with the zxid its data tree reached
// by applying that write. Writes are applied one at a time, in zxid order (a
// standalone server's single pipeline thread; a quorum member's commit
// processor, which runs each committed write through the final processor
// inline, after draining reads), and the stamp is read right after the write
// is applied. So the reply's zxid is the create's own: the new node's czxid.
//
// zxidTap reads it there. The connection go-zookeeper uses (trackedConn)
// splits both byte streams into frames: on the way out it notes the xid of a
// create (or of a multi whose first create is) for a path that a caller is
// waiting on; on the way in it takes the zxid of the reply with that xid.
// It only looks, never changes a byte, and looks at nothing while no caller
// waits. A reply it misses (a path longer than it reads ahead) costs one read
// of the node's Stat instead.
type zxidTap struct {
	waiting atomic.Int32 // len(pending), read without the lock
	misses  atomic.Int64 // creates whose zxid had to be read from the Stat
	mu      sync.Mutex
	pending map[string]*zxidWait // by server path as sent
}

// zxidWait is one create waiting for its reply's zxid. The caller's own
// request goes out between expect and take; if exactly one create of the
// path went out meanwhile, it is the caller's, and so is its reply. Any
// other create of the same path in that window (another goroutine's) makes
// the wait ambiguous, and take reports no zxid.
type zxidWait struct {
	path      string
	out       chan struct{} // closed when the caller's create goes out
	conn      *trackedConn  // where the create went
	xid       int32
	sightings int // creates of path seen going out
	replied   bool
	zxid      int64
	ok        bool // the reply succeeded
}

// expect registers a create of path (a server path) about to be sent. It
// returns nil when a create of the same path is already waiting; both waits
// are then ambiguous and report no zxid.
func (t *zxidTap) expect(path string) *zxidWait {
	t.mu.Lock()
	defer t.mu.Unlock()
	if w := t.pending[path]; w != nil {
		w.sightings = 2 // ambiguous from now on
		return nil
	}
	if t.pending == nil {
		t.pending = map[string]*zxidWait{}
	}
	w := &zxidWait{path: path, out: make(chan struct{})}
	t.pending[path] = w
	t.waiting.Store(int32(len(t.pending)))
	return w
}

// take ends the wait and returns the zxid of the caller's successful reply,
// if it was seen and is surely the caller's.
func (t *zxidTap) take(w *zxidWait) (int64, bool) {
	if w == nil {
		return 0, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.pending[w.path] == w {
		delete(t.pending, w.path)
	}
	t.waiting.Store(int32(len(t.pending)))
	return w.zxid, w.ok && w.replied && w.sightings == 1
}

// sent notes that a create of path went out on conn with xid.
func (t *zxidTap) sent(conn *trackedConn, xid int32, path []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	w := t.pending[string(path)]
	if w == nil {
		return
	}
	w.sightings++
	if w.sightings == 1 {
		w.conn, w.xid = conn, xid
		close(w.out)
	}
}

// replied records the reply header of xid on conn.
func (t *zxidTap) replied(conn *trackedConn, xid int32, zxid int64, errCode int32) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, w := range t.pending {
		if w.conn == conn && w.xid == xid && !w.replied {
			w.replied, w.zxid, w.ok = true, zxid, errCode == 0
			return
		}
	}
}
