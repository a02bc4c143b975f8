package session

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

// RetryPolicy decides whether and when an operation that failed with a
// retryable error is tried again.
type RetryPolicy interface {
	// Backoff returns how long to wait before retry number attempt (0 for
	// the first retry), given the time elapsed since the first try, and
	// false when no retry is left.
	Backoff(attempt int, elapsed time.Duration) (time.Duration, bool)
}

// Named defaults of ExponentialBackoff.
const (
	// DefaultRetryBase is the wait before the first retry.
	DefaultRetryBase = 100 * time.Millisecond
	// DefaultRetryCap is the longest single wait.
	DefaultRetryCap = 5 * time.Second
	// DefaultMaxRetries is the number of retries after the first try.
	DefaultMaxRetries = 10
	// DefaultRetryElapsed is the time after which no retry starts.
	DefaultRetryElapsed = 30 * time.Second
)

// ExponentialBackoff retries up to MaxRetries times while less than
// MaxElapsed has passed, waiting a random time in [d/2, d] where d doubles
// from Base at each retry and never exceeds Cap ("equal jitter"). A zero
// field takes its Default value; use NoRetry to disable retries.
type ExponentialBackoff struct {
	Base       time.Duration
	Cap        time.Duration
	MaxRetries int
	MaxElapsed time.Duration
	// Rand returns a float in [0, 1); nil uses math/rand/v2. Tests set it to
	// make the schedule deterministic.
	Rand func() float64
}

// Backoff implements RetryPolicy.
func (b ExponentialBackoff) Backoff(attempt int, elapsed time.Duration) (time.Duration, bool) {
	base, cap, max, maxElapsed := b.Base, b.Cap, b.MaxRetries, b.MaxElapsed
	if base <= 0 {
		base = DefaultRetryBase
	}
	if cap <= 0 {
		cap = DefaultRetryCap
	}
	if max <= 0 {
		max = DefaultMaxRetries
	}
	if maxElapsed <= 0 {
		maxElapsed = DefaultRetryElapsed
	}
	if attempt < 0 || attempt >= max || elapsed >= maxElapsed {
		return 0, false
	}
	d := cap
	if attempt < 32 && base<<attempt > 0 && base<<attempt < cap {
		d = base << attempt
	}
	r := b.Rand
	if r == nil {
		r = rand.Float64
	}
	d = d/2 + time.Duration(r()*float64(d/2))
	if rest := maxElapsed - elapsed; d > rest {
		d = rest
	}
	return d, true
}

// NoRetry is a RetryPolicy that never retries.
type NoRetry struct{}

// Backoff implements RetryPolicy.
func (NoRetry) Backoff(int, time.Duration) (time.Duration, bool) { return 0, false }

// IsRetryable reports whether err is a transient failure after which the
// same operation may be tried again: connection loss (the request may or may
// not have been applied), no server reachable, or an operation timeout.
// Session expiry is not retryable: a retry would run in another session.
func IsRetryable(err error) bool {
	var netErr *net.OpError
	switch {
	case err == nil:
		return false
	case errors.Is(err, zk.ErrConnectionClosed), errors.Is(err, zk.ErrNoServer):
		return true
	case errors.As(err, &netErr):
		// A connection loss too: go-zookeeper hands a request the error
		// of the Write that failed to send it (a broken pipe, a reset, a
		// write deadline) as it is, and closes the connection, where the
		// requests it flushes get ErrConnectionClosed. It is no answer
		// of the server's: the session value may not have ended yet
		// when the caller sees it.
		return true
	}
	code, ok := serverErrorCode(err)
	return ok && (code == codeConnectionLoss || code == codeOperationTimeout)
}

// Server error codes that go-zookeeper reports only as "unknown error: N".
const (
	codeConnectionLoss   = -4
	codeUnimplemented    = -6
	codeOperationTimeout = -7
)

// serverErrorCode extracts N from go-zookeeper's "unknown error: N".
func serverErrorCode(err error) (int, bool) {
	const prefix = "unknown error: "
	for e := err; e != nil; e = errors.Unwrap(e) {
		if s := e.Error(); strings.HasPrefix(s, prefix) {
			var n int
			if _, scanErr := fmt.Sscanf(s[len(prefix):], "%d", &n); scanErr == nil {
				return n, true
			}
		}
	}
	return 0, false
}

type noRetryKey struct{}

// WithoutRetry returns a context under which the client's operations are
// tried once, whatever the RetryPolicy: for callers that must know whether a
// request was answered (a delete whose lost reply would make a retry report
// NoNode).
func WithoutRetry(ctx context.Context) context.Context {
	if ctx == context.Background() {
		return backgroundWithoutRetry // the common case, made once
	}
	return context.WithValue(ctx, noRetryKey{}, true)
}

var backgroundWithoutRetry = context.WithValue(context.Background(), noRetryKey{}, true)

// retry runs op until it succeeds, fails with an error that is not
// retryable, the policy gives up or ctx ends.
func retry(ctx context.Context, p RetryPolicy, op func() error) error {
	start := time.Now()
	for attempt := 0; ; attempt++ {
		err := op()
		if !IsRetryable(err) {
			return err
		}
		if err := backoff(ctx, nil, p, attempt, start, err); err != nil {
			return err
		}
	}
}

// backoff waits before the next try after attempt (from 0) failed with the
// retryable err, the first having started at start. It returns the error to
// give up with when the policy gives up, ctx ends or closed (the client's
// done channel; nil for none) closes.
func backoff(ctx context.Context, closed <-chan struct{}, p RetryPolicy, attempt int, start time.Time, err error) error {
	wait, ok := p.Backoff(attempt, time.Since(start))
	if !ok {
		return fmt.Errorf("%w (%d tries): %w", ErrRetriesExhausted, attempt+1, err)
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return fmt.Errorf("%w (while retrying: %v)", ctxError(ctx), err)
	case <-closed:
		return fmt.Errorf("%w (while retrying: %v)", ErrClosed, err)
	case <-t.C:
		return nil
	}
}
