package session

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A call waits for every call abandoned before it, and only for those;
// its own context and the client's close end the wait.
func TestCallOrderWaitsForEveryAbandonedCall(t *testing.T) {
	var o callOrder
	none := make(chan struct{})
	require.NoError(t, o.wait(context.Background(), none), "nothing abandoned: no wait")

	first, second := make(chan struct{}), make(chan struct{})
	o.abandon(first)
	o.abandon(second)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, o.wait(ctx, none), context.Canceled)
	closed := make(chan struct{})
	close(closed)
	require.ErrorIs(t, o.wait(context.Background(), closed), ErrClosed)

	close(second)
	require.ErrorIs(t, o.wait(ctx, none), context.Canceled, "the first abandoned call still runs")
	close(first)
	require.NoError(t, o.wait(ctx, none), "every abandoned call returned: no wait")

	o.mu.Lock()
	defer o.mu.Unlock()
	o.pruneLocked()
	assert.Empty(t, o.abandoned, "returned calls are forgotten")
}
