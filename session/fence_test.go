package session_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/session"
)

func TestFencedResource(t *testing.T) {
	servers := zktest.Shared(t)
	ctx := ctxT(t)
	c := connect(t, servers)
	r, err := c.FencedResource(fmt.Sprintf("/fenced-%d/res", time.Now().UnixNano()))
	require.NoError(t, err)

	require.NoError(t, r.Write(ctx, 5, []byte("from 5")))
	err = r.Write(ctx, 3, []byte("stale"))
	assert.ErrorIs(t, err, session.ErrStaleToken)
	require.NoError(t, r.Write(ctx, 5, []byte("again 5")), "the same holder may write again")
	require.NoError(t, r.Write(ctx, 9, []byte("from 9")))
	assert.ErrorIs(t, r.Write(ctx, 5, []byte("late")), session.ErrStaleToken)
	tok, data, err := r.Read(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(9), tok)
	assert.Equal(t, "from 9", string(data))

	// Racing writers: the highest token wins, no lower write lands after it.
	const writers = 8
	errs := make(chan error, writers)
	for i := range writers {
		go func() { errs <- r.Write(ctx, int64(10+i), []byte(fmt.Sprint(10+i))) }()
	}
	for range writers {
		if err := <-errs; err != nil {
			assert.ErrorIs(t, err, session.ErrStaleToken)
		}
	}
	tok, data, err = r.Read(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(10+writers-1), tok)
	assert.Equal(t, fmt.Sprint(tok), string(data))

	assert.ErrorIs(t, r.Write(ctx, -1, nil), session.ErrInvalidArgument)
	_, err = c.FencedResource("relative")
	assert.ErrorIs(t, err, session.ErrInvalidArgument)
}
