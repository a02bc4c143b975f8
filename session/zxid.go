package session

import (
	"encoding/binary"
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
	conn      *trackedConn // where the create went
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
	w := &zxidWait{path: path}
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

// The client's request and reply framing (ZooKeeper's jute protocol).
const (
	opCodeCreate = 1
	opCodeCheck  = 13
	opCodeMulti  = 14

	replyHeaderLen = 4 + 8 + 4 // xid, zxid, err
	// requestLookahead bounds how much of a request is read to find the
	// path of its create: enough for a few guards and long paths.
	requestLookahead = 4096
)

// frames splits one direction of a connection into frames (a 4-byte
// big-endian length, then that many bytes) and hands the head of each frame
// it was asked to capture to done. The first frame (the connect request or
// response) has no request header and is skipped.
type frames struct {
	lenBuf  [4]byte
	lenN    int
	left    int  // bytes of the current frame still to come
	begun   bool // past the first frame
	head    []byte
	limit   int  // capture at most this many bytes of a frame
	capture bool // capturing the current frame
	broken  bool // a length made no sense: stop looking

	want func() bool // at a frame's start: capture it?
	done func(head []byte)
}

// feed consumes the next bytes of the stream.
func (f *frames) feed(p []byte) {
	for len(p) > 0 && !f.broken {
		if f.lenN < 4 {
			k := copy(f.lenBuf[f.lenN:], p)
			f.lenN += k
			p = p[k:]
			if f.lenN < 4 {
				return
			}
			f.left = int(int32(binary.BigEndian.Uint32(f.lenBuf[:])))
			if f.left < 0 {
				f.broken = true
				return
			}
			f.head = f.head[:0]
			f.capture = f.begun && f.want()
			f.begun = true
			if f.left == 0 {
				f.end()
			}
			continue
		}
		k := min(len(p), f.left)
		if f.capture && len(f.head) < f.limit {
			f.head = append(f.head, p[:min(k, f.limit-len(f.head))]...)
		}
		f.left -= k
		p = p[k:]
		if f.left == 0 {
			f.end()
		}
	}
}

func (f *frames) end() {
	if f.capture {
		f.done(f.head)
	}
	f.lenN, f.capture = 0, false
}

// reader reads jute values off a frame's head; any short read sets bad.
type reader struct {
	b   []byte
	bad bool
}

func (r *reader) int32() int32 {
	if len(r.b) < 4 {
		r.bad = true
		return 0
	}
	v := int32(binary.BigEndian.Uint32(r.b))
	r.b = r.b[4:]
	return v
}

func (r *reader) int64() int64 {
	hi, lo := r.int32(), r.int32()
	return int64(hi)<<32 | int64(uint32(lo))
}

func (r *reader) skip(n int) {
	if n < 0 || len(r.b) < n {
		r.bad = true
		return
	}
	r.b = r.b[n:]
}

func (r *reader) string() []byte {
	n := int(r.int32())
	if r.bad || n < 0 || len(r.b) < n {
		r.bad = true
		return nil
	}
	s := r.b[:n]
	r.b = r.b[n:]
	return s
}

// createPath returns the xid of a request frame and the path of its create:
// a create request, or the first create of a multi whose ops before it are
// checks. ok is false for any other request.
func createPath(head []byte) (xid int32, path []byte, ok bool) {
	r := reader{b: head}
	xid = r.int32()
	switch r.int32() {
	case opCodeCreate:
		path = r.string()
		return xid, path, !r.bad
	case opCodeMulti:
		for !r.bad {
			op := r.int32()
			r.skip(1 + 4) // done, err
			switch op {
			case opCodeCheck:
				r.string()
				r.skip(4) // version
			case opCodeCreate:
				path = r.string()
				return xid, path, !r.bad
			default:
				return 0, nil, false
			}
		}
	}
	return 0, nil, false
}

// replyHeader parses the header of a reply frame.
func replyHeader(head []byte) (xid int32, zxid int64, errCode int32, ok bool) {
	r := reader{b: head}
	xid, zxid, errCode = r.int32(), r.int64(), r.int32()
	return xid, zxid, errCode, !r.bad
}

// tapFrames sets up the two framers of conn for tap.
func tapFrames(conn *trackedConn, tap *zxidTap) {
	waiting := func() bool { return tap.waiting.Load() > 0 }
	conn.out = frames{limit: requestLookahead, want: waiting, done: func(head []byte) {
		if xid, path, ok := createPath(head); ok {
			tap.sent(conn, xid, path)
		}
	}}
	conn.in = frames{limit: replyHeaderLen, want: waiting, done: func(head []byte) {
		if xid, zxid, errCode, ok := replyHeader(head); ok && xid > 0 {
			tap.replied(conn, xid, zxid, errCode)
		}
	}}
}
