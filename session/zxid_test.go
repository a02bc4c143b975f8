package session

import (
	"encoding/binary"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// jute encodes a frame body the way the protocol does.
type jute []byte

func (j jute) i32(v int32) jute  { return binary.BigEndian.AppendUint32(j, uint32(v)) }
func (j jute) i64(v int64) jute  { return binary.BigEndian.AppendUint64(j, uint64(v)) }
func (j jute) str(s string) jute { return append(j.i32(int32(len(s))), s...) }
func (j jute) flag(b bool) jute {
	if b {
		return append(j, 1)
	}
	return append(j, 0)
}
func (j jute) frame() []byte { return append(jute(nil).i32(int32(len(j))), j...) }

func createReq(xid int32, path string) jute {
	return jute(nil).i32(xid).i32(opCodeCreate).str(path).i32(0). // empty data
									i32(1).i32(31).str("world").str("anyone").i32(3) // acl, flags
}

func multiReq(xid int32, guard, path string) jute {
	j := jute(nil).i32(xid).i32(opCodeMulti)
	j = j.i32(opCodeCheck).flag(false).i32(-1).str(guard).i32(-1)
	j = j.i32(opCodeCreate).flag(false).i32(-1).str(path).i32(0).i32(0).i32(1)
	return j.i32(-1).flag(true).i32(-1)
}

// feedInChunks feeds stream to f in random pieces, as a socket may.
func feedInChunks(f *frames, stream []byte, rng *rand.Rand) {
	for len(stream) > 0 {
		n := min(len(stream), 1+rng.IntN(9))
		f.feed(stream[:n])
		stream = stream[n:]
	}
}

func TestFramesFindCreatesInRequests(t *testing.T) {
	long := "/" + strings.Repeat("x", requestLookahead)
	var stream []byte
	stream = append(stream, jute(nil).i32(0).i64(0x100000001).i32(15000).i64(0).str("passwd").frame()...) // connect
	stream = append(stream, createReq(1, "/locks/a/_c_u-lock-").frame()...)
	stream = append(stream, jute(nil).i32(-2).i32(11).frame()...)                          // ping
	stream = append(stream, jute(nil).i32(2).i32(4).str("/locks/a").flag(true).frame()...) // getData
	stream = append(stream, multiReq(3, "/locks/b/w", "/locks/b/_c_v-read-0000000007").frame()...)
	stream = append(stream, createReq(4, long).frame()...)
	stream = append(stream, jute(nil).frame()...) // empty frame

	for seed := range uint64(50) {
		type found struct {
			xid  int32
			path string
		}
		var got []found
		f := frames{want: func(bool) int { return requestLookahead }, done: func(head []byte, first bool) {
			if xid, path, ok := createPath(head); ok && !first {
				got = append(got, found{xid, string(path)})
			}
		}}
		feedInChunks(&f, stream, rand.New(rand.NewPCG(seed, 1)))
		require.False(t, f.broken)
		assert.Equal(t, []found{{1, "/locks/a/_c_u-lock-"}, {3, "/locks/b/_c_v-read-0000000007"}}, got,
			"seed %d: the connect frame, reads and a path past the lookahead are not creates", seed)
	}
}

func TestFramesReadReplyHeaders(t *testing.T) {
	var stream []byte
	stream = append(stream, jute(nil).i32(0).i32(15000).i64(0x1234).str("passwd").flag(false).frame()...) // connect
	stream = append(stream, jute(nil).i32(7).i64(0x100000042).i32(0).str("/a/_c_u-lock-0000000001").frame()...)
	stream = append(stream, jute(nil).i32(-1).i64(-1).i32(0).i32(2).i32(3).str("/a").frame()...) // watch event
	stream = append(stream, jute(nil).i32(8).i64(0x100000043).i32(-110).frame()...)              // node exists
	type header struct {
		xid   int32
		zxid  int64
		errno int32
	}
	for seed := range uint64(50) {
		var got []header
		var firsts []bool
		captures := 0
		f := frames{want: func(bool) int {
			captures++
			if captures == 3 {
				return 0 // the watch event is not wanted
			}
			return replyHeaderLen
		}, done: func(head []byte, first bool) {
			firsts = append(firsts, first)
			if first {
				ms, id, ok := connectReply(head)
				require.True(t, ok)
				assert.Equal(t, int32(15000), ms)
				assert.Equal(t, int64(0x1234), id)
				return
			}
			xid, zxid, errno, ok := replyHeader(head)
			if !ok {
				got = append(got, header{-99, 0, 0}) // nothing captured
				return
			}
			got = append(got, header{xid, zxid, errno})
		}}
		feedInChunks(&f, stream, rand.New(rand.NewPCG(seed, 2)))
		assert.Equal(t, []bool{true, false, false, false}, firsts, "seed %d", seed)
		assert.Equal(t, []header{{7, 0x100000042, 0}, {-99, 0, 0}, {8, 0x100000043, -110}}, got,
			"seed %d: the third frame was not wanted", seed)
	}
}

func TestFramesStopOnNonsense(t *testing.T) {
	calls := 0
	f := frames{want: func(bool) int { return 16 }, done: func([]byte, bool) { calls++ }}
	f.feed(jute(nil).i32(-5).i32(1).i32(2))
	assert.True(t, f.broken)
	f.feed(jute(nil).i32(4).i32(1))
	assert.Zero(t, calls)
}

func TestCreatePathRejectsTruncatedAndOtherRequests(t *testing.T) {
	full := createReq(9, "/a/b")
	for n := range len("/a/b") + 12 {
		_, _, ok := createPath(full[:n])
		assert.False(t, ok, "truncated at %d", n)
	}
	_, _, ok := createPath(jute(nil).i32(9).i32(2).str("/a/b")) // delete
	assert.False(t, ok)
	// A multi whose first op is not a check or a create is not looked into.
	_, _, ok = createPath(jute(nil).i32(9).i32(opCodeMulti).i32(5).flag(false).i32(-1).str("/a"))
	assert.False(t, ok)
}

func TestZxidTapMatchesRepliesByConnectionAndXid(t *testing.T) {
	var tap zxidTap
	a, b := &trackedConn{}, &trackedConn{}
	const path = "/l/_c_u-lock-"
	w := tap.expect(path)
	require.NotNil(t, w)
	assert.True(t, tap.waiting.Load() > 0)
	tap.sent(a, 5, []byte(path))
	tap.replied(b, 5, 111, 0) // another connection's xid 5
	tap.replied(a, 4, 222, 0)
	tap.replied(a, 5, 333, 0)
	tap.replied(a, 5, 444, 0) // a later reuse of the xid is not ours
	zxid, ok := tap.take(w)
	assert.True(t, ok)
	assert.Equal(t, int64(333), zxid)
	assert.Zero(t, tap.waiting.Load())

	w = tap.expect(path)
	tap.sent(a, 7, []byte(path))
	tap.replied(a, 7, 555, -110) // the create failed
	_, ok = tap.take(w)
	assert.False(t, ok)
	_, ok = tap.take(nil)
	assert.False(t, ok)
}

// Creates of the same path by other callers on the same client cannot be
// told apart from ours: the wait then reports no zxid (the Stat is read).
func TestZxidTapRefusesAmbiguousCreates(t *testing.T) {
	var tap zxidTap
	a := &trackedConn{}
	const path = "/q/item-"
	for name, other := range map[string]func(w *zxidWait){
		"another create went out first": func(*zxidWait) {
			tap.sent(a, 1, []byte(path))
			tap.sent(a, 2, []byte(path))
			tap.replied(a, 1, 100, 0)
			tap.replied(a, 2, 200, 0)
		},
		"another create went out after our reply": func(*zxidWait) {
			tap.sent(a, 3, []byte(path))
			tap.replied(a, 3, 300, 0)
			tap.sent(a, 4, []byte(path))
			tap.replied(a, 4, 400, 0)
		},
		"a second waiter on the same path": func(*zxidWait) {
			assert.Nil(t, tap.expect(path))
			tap.sent(a, 5, []byte(path))
			tap.replied(a, 5, 500, 0)
		},
	} {
		w := tap.expect(path)
		require.NotNil(t, w, name)
		other(w)
		_, ok := tap.take(w)
		assert.False(t, ok, name)
		assert.Zero(t, tap.waiting.Load(), name)
	}
}
