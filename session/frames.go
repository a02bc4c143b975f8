package session

import "encoding/binary"

// The client's side of ZooKeeper's wire protocol (jute), as far as the
// connection wrapper reads it: every frame is a 4-byte big-endian length and
// that many bytes. The first frame each way is the connect request or
// response; every later request starts with (xid, opcode) and every later
// reply with (xid, zxid, err). Watch notifications are replies with xid -1.
const (
	opCodeCreate = 1
	opCodeCheck  = 13
	opCodeMulti  = 14

	xidNotification = -1

	requestHeaderLen = 4 + 4     // xid, opcode
	replyHeaderLen   = 4 + 8 + 4 // xid, zxid, err
	// replyHeadLen covers a reply's header and, for a multi, the header of
	// its first result (type, done, err): a multi that failed answers
	// err 0 in the reply's header, and an error type (-1) in every result.
	replyHeadLen = replyHeaderLen + 4 + 1 + 4
	// connectReplyHeadLen covers the connect response's protocol version,
	// timeout and session id.
	connectReplyHeadLen = 4 + 4 + 8
	// requestLookahead bounds how much of a request is read to find the
	// path of its create: enough for a few guards and long paths.
	requestLookahead = 4096
)

// frames splits one direction of a connection into frames and hands the
// head of each (as many bytes as want asked for at its start) to done when
// the frame ends. It never changes the stream.
type frames struct {
	lenBuf [4]byte
	lenN   int
	left   int  // bytes of the current frame still to come
	begun  bool // past the first frame
	first  bool // the current frame is the first
	head   []byte
	limit  int  // bytes of the current frame to capture
	broken bool // a length made no sense: stop looking

	pos      int64 // bytes of the stream consumed
	firstEnd int64 // where the first frame ends in the stream, once it has

	want func(first bool) int // at a frame's start: how many bytes to keep
	done func(head []byte, first bool)
}

// feed consumes the next bytes of the stream.
func (f *frames) feed(p []byte) {
	for len(p) > 0 && !f.broken {
		if f.lenN < 4 {
			k := copy(f.lenBuf[f.lenN:], p)
			f.lenN += k
			f.pos += int64(k)
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
			f.first = !f.begun
			f.begun = true
			f.limit = f.want(f.first)
			if f.left == 0 {
				f.end()
			}
			continue
		}
		k := min(len(p), f.left)
		if len(f.head) < f.limit {
			f.head = append(f.head, p[:min(k, f.limit-len(f.head))]...)
		}
		f.left -= k
		f.pos += int64(k)
		p = p[k:]
		if f.left == 0 {
			f.end()
		}
	}
}

func (f *frames) end() {
	if f.first {
		f.firstEnd = f.pos
	}
	f.done(f.head, f.first)
	f.lenN = 0
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

// requestXid returns the xid of a request frame.
func requestXid(head []byte) (int32, bool) {
	r := reader{b: head}
	xid := r.int32()
	return xid, !r.bad
}

// opSetWatches is the opcode of go-zookeeper's setWatches request.
const opSetWatches = 101

// requestOpcode returns a request frame's opcode.
func requestOpcode(head []byte) (int32, bool) {
	r := reader{b: head}
	r.skip(4)
	op := r.int32()
	return op, !r.bad
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

// multiFailed reports whether the head of a multi's reply says it failed
// (its first result is an error); false when the head is too short to say.
func multiFailed(head []byte) bool {
	r := reader{b: head}
	r.skip(replyHeaderLen)
	typ := r.int32()
	return !r.bad && typ == -1
}

// replyHeader parses the header of a reply frame.
func replyHeader(head []byte) (xid int32, zxid int64, errCode int32, ok bool) {
	r := reader{b: head}
	xid, zxid, errCode = r.int32(), r.int64(), r.int32()
	return xid, zxid, errCode, !r.bad
}

// connectReply parses the head of a connect response: the negotiated
// timeout in milliseconds and the session id (0 when the server refused the
// session: it expired).
func connectReply(head []byte) (timeoutMs int32, sessionID int64, ok bool) {
	r := reader{b: head}
	r.skip(4) // protocol version
	timeoutMs, sessionID = r.int32(), r.int64()
	return timeoutMs, sessionID, !r.bad
}
