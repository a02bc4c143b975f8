package ttl

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"
)

// Retry runs op until it succeeds, finds the lock not ours, fails for
// good (ErrPermanent), ctx ends, or it was tried tries times (0: no
// limit), pausing between tries: 5 ms, doubled up to 200 ms, with jitter.
// It returns op's last error.
func Retry(ctx context.Context, tries int, op func() error) error {
	return retry(ctx, tries, func(err error) bool { return errors.Is(err, ErrPermanent) }, op)
}

// retry is Retry, giving up at the errors for which final is true (and
// at ErrNotOurs).
func retry(ctx context.Context, tries int, final func(error) bool, op func() error) error {
	for try, pause := 1, retryPause; ; try, pause = try+1, min(2*pause, retryPauseCap) {
		err := op()
		if err == nil || errors.Is(err, ErrNotOurs) || final(err) || ctx.Err() != nil || try == tries {
			return err
		}
		if !Sleep(ctx, Jitter(pause)) {
			return err
		}
	}
}

// Pauses of Retry.
const (
	retryPause    = 5 * time.Millisecond
	retryPauseCap = 200 * time.Millisecond
)

// Jitter returns d plus up to a tenth of it, and at least a millisecond more.
func Jitter(d time.Duration) time.Duration {
	return d + time.Millisecond + time.Duration(rand.Int64N(int64(max(d, 0)/10)+1))
}

// Sleep waits d or until ctx ends; false when ctx ended.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// Backoff is the pause of a loop that waits on a server (an Acquire, a
// subscription, a listener) after an error: BackoffBase at first, twice
// the last at each pause after it, up to BackoffCap. The zero value is
// ready.
type Backoff struct{ next time.Duration }

// Bounds of a Backoff.
const (
	BackoffBase = 50 * time.Millisecond
	BackoffCap  = 2 * time.Second
)

// Next is the pause to make now.
func (b *Backoff) Next() time.Duration {
	d := max(b.next, BackoffBase)
	b.next = min(2*d, BackoffCap)
	return d
}

// Reset starts the schedule again, after a request that succeeded.
func (b *Backoff) Reset() { b.next = 0 }
