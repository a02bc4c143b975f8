package session

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestExponentialBackoffSchedule(t *testing.T) {
	b := ExponentialBackoff{Base: 100 * time.Millisecond, Cap: time.Second, MaxRetries: 6, MaxElapsed: time.Minute}
	for _, tc := range []struct {
		rand     float64
		attempts []time.Duration
	}{
		// equal jitter: [d/2, d]
		{0, []time.Duration{50, 100, 200, 400, 500, 500}},
		{0.9999999, []time.Duration{100, 200, 400, 800, 1000, 1000}},
	} {
		b.Rand = func() float64 { return tc.rand }
		for i, want := range tc.attempts {
			d, ok := b.Backoff(i, 0)
			require.True(t, ok, "attempt %d", i)
			assert.InDelta(t, float64(want*time.Millisecond), float64(d), float64(time.Microsecond), "attempt %d rand %v", i, tc.rand)
		}
		_, ok := b.Backoff(6, 0)
		assert.False(t, ok, "MaxRetries reached")
	}
}

func TestExponentialBackoffLimits(t *testing.T) {
	b := ExponentialBackoff{Base: time.Second, Cap: 10 * time.Second, MaxRetries: 100, MaxElapsed: 5 * time.Second,
		Rand: func() float64 { return 0.5 }}
	d, ok := b.Backoff(3, 4500*time.Millisecond)
	require.True(t, ok)
	assert.Equal(t, 500*time.Millisecond, d, "never waits past MaxElapsed")
	_, ok = b.Backoff(0, 5*time.Second)
	assert.False(t, ok, "no retry after MaxElapsed")
	b.MaxElapsed = time.Minute
	d, ok = b.Backoff(80, 0) // shift overflow must not produce a negative wait
	require.True(t, ok)
	assert.Equal(t, 7500*time.Millisecond, d)
	_, ok = b.Backoff(-1, 0)
	assert.False(t, ok)

	def := ExponentialBackoff{Rand: func() float64 { return 0 }}
	d, ok = def.Backoff(0, 0)
	require.True(t, ok)
	assert.Equal(t, DefaultRetryBase/2, d)
	_, ok = def.Backoff(DefaultMaxRetries, 0)
	assert.False(t, ok)

	_, ok = NoRetry{}.Backoff(0, 0)
	assert.False(t, ok)
}

func TestIsRetryable(t *testing.T) {
	for err, want := range map[error]bool{
		nil:                    false,
		zk.ErrConnectionClosed: true,
		zk.ErrNoServer:         true,
		fmt.Errorf("wrapped: %w", zk.ErrConnectionClosed):     true,
		fmt.Errorf("unknown error: %d", codeOperationTimeout): true,
		fmt.Errorf("unknown error: %d", codeConnectionLoss):   true,
		fmt.Errorf("unknown error: %d", codeUnimplemented):    false,
		zk.ErrSessionExpired: false,
		zk.ErrNoNode:         false,
		context.Canceled:     false,
	} {
		assert.Equal(t, want, IsRetryable(err), "%v", err)
	}
}

// A request whose write fails gets the connection's error as it is from
// go-zookeeper (a broken pipe, a reset): a connection loss, to be retried
// like ErrConnectionClosed. Seen beside a sick member: a waiter's watch,
// sent as its connection broke, failed its Acquire while its session
// value was still trusted.
func TestIsRetryableWriteError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	conn, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	peer, err := ln.Accept()
	require.NoError(t, err)
	require.NoError(t, peer.(*net.TCPConn).SetLinger(0)) // its close resets the connection
	require.NoError(t, peer.Close())
	var werr error
	for range 1000 { // the first writes may be buffered before the reset is read
		if _, werr = conn.Write(make([]byte, 1024)); werr != nil {
			break
		}
		time.Sleep(time.Millisecond)
	}
	require.Error(t, werr, "a write to a reset connection fails")
	assert.True(t, IsRetryable(werr), "%v", werr)
	assert.True(t, IsRetryable(opError("get", "/p", werr)), "wrapped as an operation's error")
}

func TestRetryStopsOnPolicyAndContext(t *testing.T) {
	calls := 0
	p := ExponentialBackoff{Base: time.Millisecond, Cap: time.Millisecond, MaxRetries: 3, Rand: func() float64 { return 0 }}
	err := retry(context.Background(), p, func() error { calls++; return zk.ErrConnectionClosed })
	assert.ErrorIs(t, err, ErrRetriesExhausted)
	assert.ErrorIs(t, err, zk.ErrConnectionClosed)
	assert.Equal(t, 4, calls, "one try and three retries")

	calls = 0
	err = retry(context.Background(), p, func() error { calls++; return zk.ErrNoNode })
	assert.ErrorIs(t, err, zk.ErrNoNode)
	assert.Equal(t, 1, calls, "a non-retryable error is returned at once")

	ctx, cancel := context.WithCancelCause(context.Background())
	cause := errors.New("shutting down")
	calls = 0
	slow := ExponentialBackoff{Base: time.Hour, Cap: time.Hour, MaxRetries: 100, MaxElapsed: 2 * time.Hour}
	err = retry(ctx, slow, func() error {
		calls++
		cancel(cause)
		return zk.ErrConnectionClosed
	})
	assert.ErrorIs(t, err, context.Canceled)
	assert.ErrorIs(t, err, cause)
	assert.Equal(t, 1, calls)
}

// A retry waiting out its backoff ends when the client closes: a clean-up
// retried in the background does not outlive its client.
func TestBackoffEndsAtClose(t *testing.T) {
	closed := make(chan struct{})
	close(closed)
	long := RetryPolicy(ExponentialBackoff{Base: time.Hour, Cap: time.Hour, MaxRetries: 3, MaxElapsed: 2 * time.Hour})
	err := backoff(context.Background(), closed, long, 0, time.Now(), zk.ErrConnectionClosed)
	require.ErrorIs(t, err, ErrClosed)
	assert.Contains(t, err.Error(), "while retrying")
}
