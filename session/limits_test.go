package session_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/session"
)

// Sizes on the wire of the requests below (jute), for the open ACL: the
// server's limit is on these, so data at the limit must pass and one byte
// more must be refused before it is sent.
const (
	header  = 4 + 4                                        // xid, opcode
	openACL = 4 + 4 + 4 + len("world") + 4 + len("anyone") // count, perms, scheme, id
)

func createSize(path string, data int) int { return header + 4 + len(path) + 4 + data + openACL + 4 }
func setSize(path string, data int) int    { return header + 4 + len(path) + 4 + data + 4 }

// guardedCreateSize: a multi of one check and one create.
func guardedCreateSize(guard, path string, data int) int {
	const op = 4 + 1 + 4
	return header + op + (4 + len(guard) + 4) + op + (4 + len(path) + 4 + data + openACL + 4) + op
}

// Writes up to the server's limit go through; one byte more is refused with
// an error naming the limit, nothing is sent, and the connection (and every
// lease on it) is unharmed: a request over the limit would make the server
// drop the connection.
func TestRequestSizeLimit(t *testing.T) {
	c := connect(t, zktest.Shared(t))
	states := subscribe(t, c)
	ctx := ctxT(t)
	const limit = session.DefaultMaxRequestSize
	tooLarge := func(err error) {
		t.Helper()
		require.ErrorIs(t, err, session.ErrRequestTooLarge)
		require.ErrorIs(t, err, session.ErrInvalidArgument)
		assert.Contains(t, err.Error(), "limit of 1048575")
	}

	path := "/limits-create"
	_, err := c.Create(ctx, path, make([]byte, limit-createSize(path, 0)), session.Ephemeral)
	require.NoError(t, err, "a create at the limit")
	_, err = c.Create(ctx, path+"2", make([]byte, limit-createSize(path+"2", 0)+1), session.Ephemeral)
	tooLarge(err)

	_, err = c.Set(ctx, path, make([]byte, limit-setSize(path, 0)), -1)
	require.NoError(t, err, "a set at the limit")
	_, err = c.Set(ctx, path, make([]byte, limit-setSize(path, 0)+1), -1)
	tooLarge(err)

	node := "/limits-guarded"
	_, _, err = c.CreateWithZxid(ctx, node, make([]byte, limit-guardedCreateSize(path, node, 0)), session.Ephemeral, path)
	require.NoError(t, err, "a guarded create at the limit")
	_, _, err = c.CreateWithZxid(ctx, node+"2", make([]byte, limit-guardedCreateSize(path, node+"2", 0)+1), session.Ephemeral, path)
	tooLarge(err)
	_, err = c.Multi(ctx, session.SetOp(path, make([]byte, limit), -1))
	tooLarge(err)

	select {
	case ch := <-states:
		t.Fatalf("the connection changed state: %v", ch)
	default:
	}

	// A lower limit, as for servers with a smaller jute.maxbuffer.
	small := connect(t, zktest.Shared(t), session.WithMaxRequestSize(8192))
	_, err = small.Create(ctx, "/limits-small", make([]byte, 8192), session.Ephemeral)
	require.ErrorIs(t, err, session.ErrRequestTooLarge)
	assert.Contains(t, err.Error(), "limit of 8192")
	_, err = session.Connect(ctx, zktest.Shared(t), session.WithMaxRequestSize(100))
	require.ErrorIs(t, err, session.ErrInvalidArgument)
}

// Session timeouts the protocol cannot carry are refused at once, not after
// a connection timeout.
func TestSessionTimeoutRange(t *testing.T) {
	for _, d := range []time.Duration{0, -time.Second, time.Millisecond - 1, session.MaxSessionTimeout + time.Millisecond, 1 << 62} {
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		_, err := session.Connect(ctx, []string{"127.0.0.1:1"}, session.WithSessionTimeout(d))
		cancel()
		require.ErrorIs(t, err, session.ErrInvalidArgument, "%v", d)
		assert.True(t, strings.Contains(err.Error(), "session timeout"), "%v: %v", d, err)
	}
}
