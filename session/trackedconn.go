package session

import (
	"bufio"
	"net"
	"slices"
	"sync"
	"time"
)

// Replies whose error says the session is gone prove nothing.
const (
	codeSessionExpired = -112
	codeSessionMoved   = -118
)

// trackedConn is the connection go-zookeeper uses, seen by the client: it
// splits both streams into frames, keeps the send time of every request
// until its reply, and feeds the zxid tap. It never changes a byte.
// go-zookeeper writes it from one goroutine at a time and reads it from one
// other, one whole frame per Write.
//
// Reads are buffered: go-zookeeper reads each reply with two reads (its
// length, then its body), each a system call on a bare connection; through
// the buffer, one system call brings both, and often the next replies too
// (a pipelined create and listing, a watch notification).
type trackedConn struct {
	net.Conn
	l       *liveness
	in, out frames
	session int64         // from the connect response; read side only
	r       *bufio.Reader // over rawReader: what the socket gives is framed as it comes
	hs      handshake     // the bound on the connect handshake

	gate     *watchGate // a reconnection's hold of the first replies; nil: none (set at dial)
	gated    bool       // the hold is over (read side)
	returned int64      // bytes returned to go-zookeeper (read side)

	mu         sync.Mutex
	connectAt  time.Duration // send time of the connect request
	pending    []sentRequest // requests not answered yet, oldest first
	proof      proof         // the way to a proof that the leader heard the session (proof.go)
	overflowed bool          // a request was forgotten: a ping's reply (pings share an xid) may be matched to a later ping
}

type sentRequest struct {
	xid  int32
	op   int32
	at   time.Duration
	tags proofTags
}

// maxPending bounds the requests remembered (go-zookeeper's in-flight
// requests); past it the oldest is forgotten, and its reply proves nothing.
const maxPending = 1 << 14

// Read returns what the socket gives, through the buffer; on a
// reconnection, bytes past the connect response wait for watchGate.
func (t *trackedConn) Read(p []byte) (int, error) {
	if t.gate != nil && !t.gated && t.in.firstEnd > 0 && t.returned >= t.in.firstEnd {
		t.gate.wait()
		t.gated = true
	}
	n, err := t.r.Read(p)
	t.returned += int64(n)
	return n, err
}

// readBuffer is the size of a connection's read buffer: replies are small
// (a listing of a thousand lock nodes is about 60 KiB, and is read through
// it in parts).
const readBuffer = 4 << 10

// rawReader reads the socket under a trackedConn's buffer, framing the
// replies as they arrive.
type rawReader struct{ t *trackedConn }

func (r rawReader) Read(p []byte) (int, error) {
	n, err := r.t.Conn.Read(p)
	if n > 0 {
		r.t.in.feed(p[:n])
	}
	if err != nil {
		r.t.noteHandshakeTimeout(err)
	}
	return n, err
}

// Write notes a request before it can be answered.
func (t *trackedConn) Write(p []byte) (int, error) {
	t.out.feed(p)
	return t.Conn.Write(p)
}

// dialerOfConn is the Dialer of one zk.Conn: its connections after the
// first are reconnections, whose first replies wait for watchGate; under
// WithTLS each server is verified as the host its host provider gave it
// for (next).
func (l *liveness) dialerOfConn(next *nextTarget) func(network, address string, timeout time.Duration) (net.Conn, error) {
	dialed := false // go-zookeeper dials from one goroutine
	return func(network, address string, timeout time.Duration) (net.Conn, error) {
		c, err := l.dial(network, address, next.hostOf(address), timeout, dialed)
		if err == nil {
			dialed = true
		}
		return c, err
	}
}

// dial is go-zookeeper's Dialer, tracking the connection it makes and
// bounding its handshake (handshake.go).
func (l *liveness) dial(network, address, host string, timeout time.Duration, reconnection bool) (net.Conn, error) {
	t, err := l.dialTracked(network, address, host, timeout)
	if err != nil {
		return nil, err
	}
	if reconnection {
		t.gate = newWatchGate()
	}
	t.r = bufio.NewReaderSize(rawReader{t}, readBuffer)
	t.out = frames{want: t.wantRequest, done: t.sent}
	t.in = frames{want: wantReply, done: t.received}
	l.conn.Store(t)
	return t, nil
}

// wantReply: the head of the connect response, or a reply's header and
// (a multi's) first result header.
func wantReply(first bool) int {
	if first {
		return connectReplyHeadLen
	}
	return replyHeadLen
}

// wantRequest: a request's xid, and when a create waits for its zxid, as
// much of the request as the tap reads.
func (t *trackedConn) wantRequest(first bool) int {
	if !first && t.l.tap.waiting.Load() > 0 {
		return requestLookahead
	}
	return requestHeaderLen
}

// sent notes a request frame going out.
func (t *trackedConn) sent(head []byte, first bool) {
	now := mono()
	t.mu.Lock()
	if first {
		t.connectAt = now
	} else if xid, ok := requestXid(head); ok {
		op, _ := requestOpcode(head)
		if t.gate != nil && op == opSetWatches {
			t.gate.release()
		}
		if len(t.pending) == maxPending {
			t.pending = slices.Delete(t.pending, 0, 1)
			t.overflowed = true
		}
		t.pending = append(t.pending, sentRequest{xid, op, now, t.proof.send(kindOf(op), now, t.l.period())})
	}
	t.mu.Unlock()
	if !first && t.l.tap.waiting.Load() > 0 {
		if xid, path, ok := createPath(head); ok {
			t.l.tap.sent(t, xid, path)
		}
	}
}

// received notes a reply frame coming in.
func (t *trackedConn) received(head []byte, first bool) {
	if first {
		t.handshakeDone()
		ms, id, ok := connectReply(head)
		if !ok || id == 0 || ms <= 0 {
			return // the session expired: nothing was heard
		}
		t.session = id
		t.l.negotiated.Store(int64(time.Duration(ms) * time.Millisecond))
		now := mono()
		t.mu.Lock()
		at := t.connectAt
		t.proof.note(at, now, t.l.period())
		t.mu.Unlock()
		// A handshake proves itself (proof.go): the session was created
		// through a quorum, or revalidated by the leader.
		t.l.noteHeard(t, id, at)
		t.l.noteProven(t, id, at)
		return
	}
	xid, zxid, errCode, ok := replyHeader(head)
	if !ok || xid == xidNotification {
		return
	}
	if r, ok := t.answered(xid); ok && errCode != codeSessionExpired && errCode != codeSessionMoved {
		t.l.noteHeard(t, t.session, r.at)
		now := mono()
		t.mu.Lock()
		clean := errCode == 0 && !(r.op == opCodeMulti && multiFailed(head))
		proven, proved := t.proof.reply(r.tags, r.at, now, t.l.period(), clean)
		t.mu.Unlock()
		if proved {
			t.l.noteProven(t, t.session, proven)
		}
	}
	if xid > 0 && t.l.tap.waiting.Load() > 0 {
		t.l.tap.replied(t, xid, zxid, errCode)
	}
}

// answered returns the oldest unanswered request with xid and forgets it.
// Replies come in request order but for a few the server answers at once
// (auth); pings share one xid, and the oldest is the conservative match,
// until a request had to be forgotten (maxPending): then none matches.
func (t *trackedConn) answered(xid int32) (sentRequest, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.overflowed { // lost track: the watchdog drops the connection once its trust lapses
		return sentRequest{}, false
	}
	for i, r := range t.pending {
		if r.xid == xid {
			// In place: the slice keeps its capacity, so noting requests
			// allocates nothing once it has grown.
			t.pending = slices.Delete(t.pending, i, i+1)
			return r, true
		}
	}
	return sentRequest{}, false
}
